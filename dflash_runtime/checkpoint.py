"""Drafter checkpoints in the reference's layout, and the training state to resume from.

A checkpoint folder holds what a DFlash drafter checkpoint holds (z-lab/dflash,
SpecForge): `config.json`, a Qwen3-style drafter config with `architectures:
["DFlashDraftModel"]`, `block_size`, `num_target_layers` and `dflash_config`
(`mask_token_id`, `target_layer_ids`), and `model.safetensors` with the drafter's own
weights under the reference's names (`layers.N.self_attn.q_proj.weight`, `fc.weight`,
`hidden_norm.weight`, `norm.weight`; no embedding or head: those are the target's).
Beside them `training_state.pt` holds what a resume needs: the step, the optimiser
state and the anchor generator's state. The runtime's own Config goes in config.json
under `runtime_config`, so a folder says how it was trained.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from dflash_runtime.config import Config
from dflash_runtime.drafter import Drafter

CONFIG = "config.json"
WEIGHTS = "model.safetensors"
STATE = "training_state.pt"

# The attention weights live under `self_attn.` in the reference's layers.
_ATTN = re.compile(r"^(layers\.\d+\.)((?:q|k|v|o)_proj|q_norm|k_norm)\.")


def reference_name(name: str) -> str:
    """The reference's name of one of the runtime's drafter weights."""
    return _ATTN.sub(r"\1self_attn.\2.", name)


def runtime_name(name: str) -> str:
    """The runtime's name of a reference drafter weight (the inverse of reference_name)."""
    return re.sub(r"^(layers\.\d+\.)self_attn\.", r"\1", name)


def drafter_config(cfg: Config) -> dict[str, Any]:
    """config.json of a drafter checkpoint: the reference's fields, then the runtime's."""
    return {
        "architectures": ["DFlashDraftModel"],
        "model_type": "qwen3",
        "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size,
        "num_hidden_layers": cfg.num_draft_layers,
        "num_attention_heads": cfg.num_heads,
        "num_key_value_heads": cfg.num_kv_heads,
        "head_dim": cfg.head_dim,
        "vocab_size": cfg.vocab_size,
        "max_position_embeddings": cfg.max_position,
        "rope_theta": cfg.rope_theta,
        "tie_word_embeddings": cfg.tie_embeddings,
        "block_size": cfg.block_size,
        "num_target_layers": cfg.num_target_layers,
        "dflash_config": {
            "mask_token_id": cfg.mask_token_id,
            "target_layer_ids": list(cfg.target_layer_ids),
        },
        "runtime_config": dataclasses.asdict(cfg),
    }


@dataclass
class TrainState:
    """What a drafter worker carries from step to step, and a resume restores."""

    step: int
    optimizer: torch.optim.Optimizer | None = None
    generator: torch.Generator | None = None  # the anchor sampler's


@dataclass
class Resume:
    """A checkpoint's training state, read back: the step and the states to load."""

    step: int
    optimizer: dict[str, Any] | None
    generator: torch.Tensor | None


def _atomic(path: Path, write: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


def save_checkpoint(folder: str, drafter: Drafter, state: TrainState | None, cfg: Config) -> Path:
    """Write the folder (each file through a temporary name, then renamed). Returns it."""
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    step = state.step if state is not None else cfg.steps
    print(f"Saving checkpoint to {path} at step {step}...", flush=True)
    weights = {
        reference_name(k): v.detach().to("cpu").contiguous() for k, v in drafter.trainable_state().items()
    }
    _atomic(path / WEIGHTS, lambda p: save_file(weights, str(p), metadata={"format": "pt"}))
    _atomic(path / CONFIG, lambda p: p.write_text(json.dumps(drafter_config(cfg), indent=2)))
    training = {
        "step": step,
        "optimizer": state.optimizer.state_dict() if state and state.optimizer else None,
        "generator": state.generator.get_state() if state and state.generator else None,
    }
    _atomic(path / STATE, lambda p: torch.save(training, p))
    return path


def load_checkpoint(folder: str, drafter: Drafter) -> int:
    """Load the drafter weights from `folder`. Returns the step they were saved at."""
    path = Path(folder)
    if not (path / WEIGHTS).is_file():
        raise FileNotFoundError(f"{path}: no {WEIGHTS} (not a drafter checkpoint)")
    device = next(drafter.parameters()).device
    weights = {runtime_name(k): v.to(device) for k, v in load_file(str(path / WEIGHTS)).items()}
    missing, unexpected = drafter.load_state_dict(weights, strict=False)
    own_missing = [k for k in missing if not k.startswith(("embed.", "lm_head."))]
    if own_missing or unexpected:
        raise RuntimeError(f"checkpoint mismatch: missing {own_missing}, unexpected {unexpected}")
    return read_resume(folder).step


def read_resume(folder: str) -> Resume:
    """The training state saved beside the weights (step 0 without one)."""
    path = Path(folder) / STATE
    if not path.is_file():
        return Resume(step=0, optimizer=None, generator=None)
    state = torch.load(path, map_location="cpu", weights_only=True)
    return Resume(step=int(state["step"]), optimizer=state.get("optimizer"), generator=state.get("generator"))
