"""The copy task needs the target: a drafter that cannot see the target's features is
no better than chance on it, so a broken fusion or K/V injection shows in acceptance.

On the first-order Markov chain of the tiny preset the anchor alone fixes a block's
continuation, and a drafter with its target features zeroed matches a normal one; on
`tiny-copy` (each token repeats the one 12 positions back) only the context before the
anchor, which the drafter reads through the fused features, tells what follows.
"""

from __future__ import annotations

import pytest
import torch
from transformers import Qwen3ForCausalLM

from dflash_runtime.config import Config, preset
from dflash_runtime.data import eval_prompts, make_loader
from dflash_runtime.decode import evaluate
from dflash_runtime.drafter import Drafter
from dflash_runtime.placement import Placement, train_threads
from dflash_runtime.target import build_target

STEPS = 50


@pytest.fixture(scope="module")
def copy_cfg() -> Config:
    """The copy preset with a short run and evaluation."""
    return preset("tiny-copy", steps=STEPS, eval_prompts=4, eval_new_tokens=32)


@pytest.fixture(scope="module")
def copy_target(copy_cfg: Config) -> Qwen3ForCausalLM:
    """The tiny target pretrained on the copy task (it must copy for greedy decoding to)."""
    return build_target(copy_cfg, seed=0, log=False)


def train_and_measure(cfg: Config, target: Qwen3ForCausalLM) -> float:
    """Train a drafter with the runtime's own loop for cfg.steps; its acceptance length."""
    torch.manual_seed(1)
    drafter = Drafter(cfg, target)
    train_threads(cfg, Placement(), [target], [drafter], iter(make_loader(cfg, seed=7)), lambda *_: None)
    return evaluate(target, drafter, eval_prompts(cfg, cfg.seed), cfg)[0]


def test_target_features_matter(copy_cfg: Config, copy_target: Qwen3ForCausalLM) -> None:
    with_target = train_and_measure(copy_cfg, copy_target)
    zeroed = train_and_measure(copy_cfg.replace(zero_target_features=True), copy_target)
    assert zeroed <= 0.8 * with_target, (with_target, zeroed)
    assert with_target >= 1.5  # it learned to copy ahead, not just the bonus token


def test_copy_task_repeats_the_period(copy_cfg: Config) -> None:
    ids = next(iter(make_loader(copy_cfg, seed=3)))["input_ids"][0]
    period = copy_cfg.data_period
    same = (ids[period:] == ids[:-period])[: 40 - period].float().mean().item()
    assert same >= 0.75  # chain_p = 0.9 of the copies are exact
