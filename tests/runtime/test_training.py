"""Training behaviour on the tiny preset (CPU): loss falls, acceptance rises, flex == sdpa."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import Qwen3ForCausalLM

from dflash_runtime.cli import main
from dflash_runtime.config import Config
from dflash_runtime.data import make_loader
from dflash_runtime.drafter import Drafter
from dflash_runtime.target import target_features
from dflash_runtime.train import forward_loss


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One 60-step tiny run through the CLI (sdpa), with a checkpoint and its stdout."""
    out = tmp_path_factory.mktemp("train")
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        rc = main(
            [
                "train",
                "--preset",
                "tiny",
                "--steps",
                "60",
                "--attention",
                "sdpa",
                "--seed",
                "0",
                "--eval-prompts",
                "4",
                "--summary",
                str(out / "s.json"),
                "--save",
                str(out / "ckpt"),
            ]
        )
    assert rc == 0
    data: dict[str, Any] = json.loads((out / "s.json").read_text())
    return {**data, "_dir": str(out), "_log": log.getvalue()}


def test_log_lines_are_stable(summary: dict[str, Any]) -> None:
    lines = summary["_log"].splitlines()
    assert "Loading 1 target models..." in lines and "Target 0 on cpu..." in lines
    steps = [ln for ln in lines if ln.startswith("step ")]
    assert len(steps) == 60
    assert re.fullmatch(r"step 60 loss \d+\.\d{4} acc \d\.\d{3} tok/s \d+ .*", steps[-1])
    assert lines[-1].startswith("done steps=60 ")


def test_summary_has_contract_keys(summary: dict[str, Any]) -> None:
    for key in (
        "steps",
        "loss_first",
        "loss_last",
        "tokens_per_s",
        "acceptance_length_before",
        "acceptance_length_after",
        "attention",
        "device",
    ):
        assert key in summary
    assert summary["steps"] == 60 and summary["attention"] == "sdpa" and summary["device"] == "cpu"


def test_loss_falls_ten_percent_in_60_steps(summary: dict[str, Any]) -> None:
    assert summary["loss_last"] <= 0.9 * summary["loss_first"]


def test_acceptance_after_training_exceeds_untrained(summary: dict[str, Any]) -> None:
    assert summary["acceptance_length_after"] > summary["acceptance_length_before"]


def test_decode_loads_checkpoint(summary: dict[str, Any], tmp_path: Path) -> None:
    ckpt = Path(str(summary["_dir"])) / "ckpt"
    rc = main(
        [
            "decode",
            "--preset",
            "tiny",
            "--load",
            str(ckpt),
            "--eval-prompts",
            "2",
            "--summary",
            str(tmp_path / "d.json"),
        ]
    )
    out = json.loads((tmp_path / "d.json").read_text())
    assert rc == 0 and out["greedy_match"] and out["acceptance_length"] > 1.0


def test_flex_and_sdpa_give_the_same_first_step(cfg: Config, target: Qwen3ForCausalLM) -> None:
    batch = next(iter(make_loader(cfg, seed=1)))
    feats, _ = target_features(target, batch["input_ids"], cfg.target_layer_ids)
    results = {}
    for attention in ("sdpa", "flex"):
        torch.manual_seed(0)
        drafter = Drafter(cfg, target)
        res = forward_loss(drafter, feats, batch, cfg, torch.Generator().manual_seed(2), attention)
        res.loss.backward()
        grad = drafter.fc.weight.grad
        assert grad is not None
        results[attention] = (res.loss.item(), grad.clone())
    (l_s, g_s), (l_f, g_f) = results["sdpa"], results["flex"]
    assert abs(l_f - l_s) <= 1e-3 * abs(l_s)
    assert torch.allclose(g_f, g_s, rtol=1e-3, atol=1e-5)
