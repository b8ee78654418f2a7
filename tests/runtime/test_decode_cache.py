"""Speculative decoding with the target's KV cache agrees with the full recompute."""

from __future__ import annotations

import torch

from dflash_runtime.config import Config
from dflash_runtime.data import eval_prompts
from dflash_runtime.decode import greedy_generate, measure_speedup, speculative_generate
from dflash_runtime.drafter import Drafter


def test_kv_cache_decoding_matches_recompute_and_target_greedy(cfg: Config, target: torch.nn.Module) -> None:
    torch.manual_seed(1)
    drafter = Drafter(cfg, target).eval()
    for prompt in eval_prompts(cfg, seed=5)[:2]:
        cached = speculative_generate(target, drafter, prompt, cfg.eval_new_tokens, cfg)
        plain = speculative_generate(target, drafter, prompt, cfg.eval_new_tokens, cfg, kv_cache=False)
        assert cached.tokens == plain.tokens and cached.per_cycle == plain.per_cycle
        greedy = greedy_generate(target, prompt, cfg.eval_new_tokens)
        assert cached.tokens == greedy
        assert greedy_generate(target, prompt, cfg.eval_new_tokens, kv_cache=True) == greedy


def test_speedup_is_measured_against_cached_greedy(cfg: Config, target: torch.nn.Module) -> None:
    torch.manual_seed(1)
    drafter = Drafter(cfg, target)
    out = measure_speedup(target, drafter, eval_prompts(cfg, seed=5)[:1], cfg)
    assert set(out) == {"greedy_tok_s", "speculative_tok_s", "speedup"}
    assert out["greedy_tok_s"] > 0 and out["speculative_tok_s"] > 0
    assert abs(out["speedup"] - out["speculative_tok_s"] / out["greedy_tok_s"]) < 1e-6
