"""Drafter checkpoints: the trainable weights, the optimiser state, the step and the config."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import torch

from dflash_runtime.config import Config
from dflash_runtime.drafter import Drafter

FILE = "drafter.pt"


def save_checkpoint(
    folder: str, drafter: Drafter, opt: torch.optim.Optimizer | None, step: int, cfg: Config
) -> Path:
    """Write folder/drafter.pt atomically (temporary file, then rename)."""
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    print(f"Saving checkpoint to {path / FILE} at step {step}...", flush=True)
    state: dict[str, Any] = {
        "drafter": drafter.trainable_state(),
        "optimizer": opt.state_dict() if opt is not None else None,
        "step": step,
        "config": dataclasses.asdict(cfg),
    }
    tmp = path / (FILE + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path / FILE)
    return path / FILE


def load_checkpoint(folder: str, drafter: Drafter) -> int:
    """Load the drafter weights from folder/drafter.pt. Returns the step it was saved at."""
    state = torch.load(Path(folder) / FILE, map_location=next(drafter.parameters()).device)
    missing, unexpected = drafter.load_state_dict(state["drafter"], strict=False)
    own_missing = [k for k in missing if not k.startswith(("embed.", "lm_head."))]
    if own_missing or unexpected:
        raise RuntimeError(f"checkpoint mismatch: missing {own_missing}, unexpected {unexpected}")
    return int(state["step"])
