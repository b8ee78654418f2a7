"""Unit checks of the pieces: layer ids, anchors, mask, loss weights, decoding."""

from __future__ import annotations

import torch
from transformers import Qwen3ForCausalLM

from dflash_runtime.config import Config, build_target_layer_ids
from dflash_runtime.data import eval_prompts, make_loader
from dflash_runtime.decode import evaluate, greedy_generate, speculative_generate
from dflash_runtime.drafter import Drafter
from dflash_runtime.masks import sdpa_mask
from dflash_runtime.train import block_targets, sample_anchors


def test_target_layer_ids_match_reference() -> None:
    assert build_target_layer_ids(36, 5) == [1, 9, 17, 25, 33]
    assert build_target_layer_ids(28, 5) == [1, 7, 13, 19, 25]
    assert build_target_layer_ids(24, 5) == [1, 6, 11, 16, 21]
    assert build_target_layer_ids(8, 1) == [4]


def test_anchors_are_supervised_and_sorted(cfg: Config) -> None:
    batch = next(iter(make_loader(cfg, seed=3)))
    g = torch.Generator().manual_seed(0)
    anchors, keep = sample_anchors(batch["loss_mask"], cfg.num_anchors, g)
    assert anchors.shape == keep.shape == (cfg.batch_size, cfg.num_anchors)
    assert keep.all()
    assert (anchors.diff(dim=1) > 0).all()
    lm = batch["loss_mask"]
    assert lm.gather(1, anchors).bool().all() and lm.gather(1, anchors + 1).bool().all()


def test_mask_context_strictly_before_anchor_and_block_bidirectional() -> None:
    anchors = torch.tensor([[3, 5]])
    keep = torch.tensor([[True, False]])
    m = sdpa_mask(anchors, keep, ctx_len=8, block=4)[0, 0]  # [Q=8, KV=16]
    assert m[:4, :3].all() and not m[:4, 3:8].any()  # block 0: context 0..2 only
    assert m[:4, 8:12].all() and not m[:4, 12:].any()  # its own block, both directions
    assert not m[4:, :8].any() and m[4:, 12:].all()  # padded block: own block only


def test_loss_weights_decay_and_skip_anchor(cfg: Config) -> None:
    ids = torch.arange(32)[None]
    lm = torch.ones_like(ids)
    anchors, keep = torch.tensor([[4, 30]]), torch.tensor([[True, True]])
    labels, w = block_targets(ids, lm, anchors, keep, cfg)
    b = cfg.block_size
    assert labels[0, :b].tolist() == list(range(4, 4 + b))
    assert w[0, 0] == 0 and w[0, 1] == 1.0
    assert torch.isclose(w[0, 2], torch.exp(torch.tensor(-1 / cfg.gamma)))
    assert w[0, b + 2 :].eq(0).all()  # 30 + k >= 32 is out of bounds


def test_speculative_output_equals_target_greedy(cfg: Config, target: Qwen3ForCausalLM) -> None:
    torch.manual_seed(1)
    drafter = Drafter(cfg, target)
    for prompt in eval_prompts(cfg, seed=5)[:2]:
        res = speculative_generate(target, drafter, prompt, cfg.eval_new_tokens, cfg)
        assert res.tokens == greedy_generate(target, prompt, cfg.eval_new_tokens)
        assert all(1 <= n <= cfg.block_size for n in res.per_cycle)
    tau, same = evaluate(target, drafter, eval_prompts(cfg, seed=6)[:2], cfg, check_greedy=True)
    assert same and tau >= 1.0


def test_bucket_widths_and_resized_batches(cfg: Config) -> None:
    from dflash_runtime.data import bucket_widths, resize_batch

    cfg = cfg.replace(pad_multiple=16)
    assert bucket_widths(cfg) == [48, 64]  # lengths 40..64
    batch = next(iter(make_loader(cfg, seed=3)))
    for width in (48, 64, 80):
        out = resize_batch(batch, width, cfg)
        assert out["input_ids"].shape == out["loss_mask"].shape == (cfg.batch_size, width)
        keep = min(width, batch["input_ids"].shape[1])
        assert torch.equal(out["input_ids"][:, :keep], batch["input_ids"][:, :keep])
        assert not out["loss_mask"][:, keep:].any()
