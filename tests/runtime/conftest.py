"""Runtime tests need torch and transformers; skip the whole folder without them."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch  # only after the importorskip guards
from transformers import Qwen3ForCausalLM

from dflash_runtime.config import Config, preset
from dflash_runtime.target import build_target

# One intra-op thread: on a small shared machine, OpenMP threads spinning against other
# processes make CPU runs many times slower and their timing erratic.
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def cfg() -> Config:
    """The tiny preset, with a short evaluation."""
    return preset("tiny", eval_prompts=4, eval_new_tokens=32)


@pytest.fixture(scope="session")
def target(cfg: Config) -> Qwen3ForCausalLM:
    """The tiny target, pretrained once per session (a few seconds)."""
    return build_target(cfg, seed=0, log=False)
