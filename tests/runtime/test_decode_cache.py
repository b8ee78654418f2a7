"""Speculative decoding with the target's KV cache agrees with the full recompute."""

from __future__ import annotations

import torch
from transformers import Qwen3ForCausalLM

from dflash_runtime.config import Config
from dflash_runtime.data import eval_prompts
from dflash_runtime.decode import greedy_generate, measure_speedup, speculative_generate
from dflash_runtime.drafter import DraftCache, Drafter, block_inputs


def test_kv_cache_decoding_matches_recompute_and_target_greedy(cfg: Config, target: Qwen3ForCausalLM) -> None:
    torch.manual_seed(1)
    drafter = Drafter(cfg, target).eval()
    for prompt in eval_prompts(cfg, seed=5)[:2]:
        cached = speculative_generate(target, drafter, prompt, cfg.eval_new_tokens, cfg)
        plain = speculative_generate(target, drafter, prompt, cfg.eval_new_tokens, cfg, kv_cache=False)
        assert cached.tokens == plain.tokens and cached.per_cycle == plain.per_cycle
        greedy = greedy_generate(target, prompt, cfg.eval_new_tokens)
        assert cached.tokens == greedy
        assert greedy_generate(target, prompt, cfg.eval_new_tokens, kv_cache=True) == greedy


def test_speedup_is_measured_against_cached_greedy(cfg: Config, target: Qwen3ForCausalLM) -> None:
    torch.manual_seed(1)
    drafter = Drafter(cfg, target)
    out = measure_speedup(target, drafter, eval_prompts(cfg, seed=5)[:1], cfg)
    assert set(out) == {"greedy_tok_s", "speculative_tok_s", "speedup"}
    assert out["greedy_tok_s"] > 0 and out["speculative_tok_s"] > 0
    assert abs(out["speedup"] - out["speculative_tok_s"] / out["greedy_tok_s"]) < 1e-6


def test_drafter_context_cache_gives_the_same_logits(cfg: Config, target: Qwen3ForCausalLM) -> None:
    """Growing the drafter's cached context cycle by cycle gives the logits of a drafter
    that reads the whole context each time (the cache is exact, not an approximation)."""
    torch.manual_seed(2)
    drafter = Drafter(cfg, target).eval()
    k = len(cfg.target_layer_ids)
    feats = torch.randn(1, 40, k * cfg.hidden_size)
    ids = torch.randint(0, cfg.vocab_size - 1, (1, 48))
    cache = DraftCache()
    with torch.no_grad():
        for start in (7, 8, 13, 21, 40):  # the anchor moves on by accepted + 1 each cycle
            anchors = torch.tensor([[start]])
            keep = torch.ones_like(anchors, dtype=torch.bool)
            blocks = block_inputs(ids, anchors, cfg.block_size, cfg.mask_token_id)
            full = drafter(feats[:, :start], blocks, anchors, keep, "sdpa")
            part = drafter(feats[:, cache.length : start], blocks, anchors, keep, "sdpa", cache=cache)
            assert cache.length == start
            torch.testing.assert_close(part, full, rtol=1e-4, atol=1e-4)
    assert len(cache.keys) == cfg.num_draft_layers
    assert cache.keys[0].shape[2] == 40
