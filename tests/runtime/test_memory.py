"""The real-size presets' memory savers change nothing but memory: a chunked head and
activation-checkpointed draft layers give the loss, accuracy and gradients of the plain
step."""

from __future__ import annotations

import torch
from transformers import Qwen3ForCausalLM

from dflash_runtime.config import Config, preset
from dflash_runtime.data import make_loader
from dflash_runtime.drafter import Drafter
from dflash_runtime.target import target_features
from dflash_runtime.train import forward_loss


def _grad(p: torch.nn.Parameter) -> torch.Tensor:
    """A copy of the gradient backward() gave p (every trainable parameter gets one)."""
    assert p.grad is not None
    return p.grad.clone()


def test_chunked_head_and_checkpointing_match_the_plain_step(cfg: Config, target: Qwen3ForCausalLM) -> None:
    batch = next(iter(make_loader(cfg, seed=1)))
    feats, _ = target_features(target, batch["input_ids"], cfg.target_layer_ids)
    results = []
    for variant in (cfg, cfg.replace(head_chunk=24, activation_checkpointing=True)):
        torch.manual_seed(0)
        drafter = Drafter(variant, target)
        res = forward_loss(drafter, feats, batch, variant, torch.Generator().manual_seed(2), "sdpa")
        res.loss.backward()
        grads = [_grad(p) for p in drafter.parameters() if p.requires_grad]
        results.append((res.loss.item(), res.acc, grads))
    (l0, a0, g0), (l1, a1, g1) = results
    assert abs(l1 - l0) <= 1e-5 * abs(l0) and abs(a1 - a0) < 1e-6
    assert all(torch.allclose(x, y, rtol=1e-4, atol=1e-6) for x, y in zip(g0, g1, strict=True))


def test_real_size_presets_use_the_memory_savers() -> None:
    for name in ("qwen3-0.6b", "qwen3-8b"):
        cfg = preset(name)
        assert cfg.head_chunk > 0 and cfg.activation_checkpointing
