"""Checkpoints in the reference's layout resume on the same loss curve."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
from safetensors.torch import load_file

from dflash_runtime.checkpoint import reference_name, runtime_name
from dflash_runtime.cli import main

ARGS = [
    "train",
    "--preset",
    "tiny",
    "--steps",
    "8",
    "--attention",
    "sdpa",
    "--seed",
    "0",
    "--eval-prompts",
    "0",
    "--target-pretrain-steps",
    "0",
]


def train(*extra: str) -> dict[int, str]:
    """Run the trainer in-process; its step lines by step (loss, acc and lr, no timing)."""
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        assert main([*ARGS, *extra]) == 0
    steps = re.findall(r"^step (\d+) (loss \S+ acc \S+) tok/s \d+ (lr \S+)", log.getvalue(), re.M)
    return {int(n): f"{a} {b}" for n, a, b in steps}


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, str]]:
    """8 steps with a checkpoint at step 4."""
    out = tmp_path_factory.mktemp("resume") / "ckpt"
    return out, train("--save", str(out), "--save-every", "4")


def test_checkpoint_saved_at_step_n_resumes_on_the_same_loss_curve(
    first_run: tuple[Path, dict[int, str]],
) -> None:
    out, full = first_run
    resumed = train("--resume", str(out / "step_4"))
    assert sorted(resumed) == [5, 6, 7, 8]
    assert resumed == {n: full[n] for n in (5, 6, 7, 8)}


def test_checkpoint_has_the_reference_layout(first_run: tuple[Path, dict[int, str]]) -> None:
    folder = first_run[0] / "step_4"
    assert {p.name for p in folder.iterdir()} == {"config.json", "model.safetensors", "training_state.pt"}
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["DFlashDraftModel"]
    assert config["dflash_config"]["mask_token_id"] == 255
    assert config["dflash_config"]["target_layer_ids"] == [1, 3]
    assert config["block_size"] == 8 and config["num_hidden_layers"] == 2
    names = set(load_file(str(folder / "model.safetensors")))
    assert {
        "fc.weight",
        "hidden_norm.weight",
        "norm.weight",
        "layers.0.self_attn.q_proj.weight",
        "layers.1.self_attn.k_norm.weight",
        "layers.0.mlp.gate_proj.weight",
        "layers.0.input_layernorm.weight",
    } <= names
    assert not any(n.startswith(("embed", "lm_head")) for n in names)  # the target's


def test_weight_names_map_both_ways() -> None:
    name = "layers.3.o_proj.weight"
    assert reference_name(name) == "layers.3.self_attn.o_proj.weight"
    assert runtime_name(reference_name(name)) == name
    assert reference_name("layers.3.mlp.up_proj.weight") == "layers.3.mlp.up_proj.weight"
