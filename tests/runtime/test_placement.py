"""The thread layout: T target threads feed D drafter threads through a queue."""

from __future__ import annotations

import itertools

import torch
from transformers import Qwen3ForCausalLM

from dflash_runtime.config import Config
from dflash_runtime.data import make_loader
from dflash_runtime.drafter import Drafter
from dflash_runtime.placement import Placement, average_grads, train_threads, warmup_compile
from dflash_runtime.target import target_features


def test_average_grads_sets_the_mean() -> None:
    a, b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    for m, v in ((a, 1.0), (b, 3.0)):
        for p in m.parameters():
            p.grad = torch.full_like(p, v)
    average_grads([a, b])
    assert all(p.grad is not None and torch.all(p.grad == 2.0) for p in [*a.parameters(), *b.parameters()])


def test_drafter_threads_train_with_compile_warmed_up(cfg: Config, target: Qwen3ForCausalLM) -> None:
    cfg = cfg.replace(steps=4)
    place = Placement(attention="flex", targets=2, drafters=3, warmup_compile=True)
    torch.manual_seed(0)
    base = Drafter(cfg, target)
    drafters = [base] + [Drafter(cfg, target) for _ in range(2)]
    for d in drafters[1:]:
        d.load_state_dict(base.state_dict())
    batches = iter(make_loader(cfg, seed=4))
    first = next(batches)
    feats, _ = target_features(target, first["input_ids"], cfg.target_layer_ids)
    warmup_compile(drafters, first, feats, cfg, place)
    steps: list[int] = []
    hist = train_threads(
        cfg,
        place,
        [target, target],
        drafters,
        itertools.chain([first], batches),
        lambda s, d, o: steps.append(s),
    )
    assert steps == [1, 2, 3, 4] and len(hist.losses) == 4
    assert all(torch.isfinite(torch.tensor(hist.losses)))
    # Averaged gradients and identical optimisers keep the replicas in lockstep.
    for p0, p1, p2 in zip(*(d.parameters() for d in drafters), strict=True):
        assert torch.allclose(p0, p1) and torch.allclose(p0, p2)
