"""Speculative decoding with the drafter: draft a block, verify with the target, keep the
accepted prefix plus one token from the target. Greedy, so the output is the target's own.

The target keeps a KV cache (transformers' DynamicCache) holding every position before
the current anchor: a cycle's verification feeds only the B block tokens, and the cache
is cropped back to the accepted prefix afterwards, as z-lab/dflash's `dflash_generate`
does. The target features of the accepted positions are kept as the drafter's context, and
the drafter caches that context's keys and values per layer (`DraftCache`): committed
positions never change, so each cycle projects only the newly committed ones.
`kv_cache=False` recomputes the target's whole prefix and the drafter's whole context
each cycle instead, the plain reading of the algorithm that the cached loop must agree
with.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from typing import Any

import torch
from transformers import DynamicCache, Qwen3ForCausalLM

from dflash_runtime.config import Config
from dflash_runtime.drafter import DraftCache, Drafter, block_inputs


@dataclass
class DecodeResult:
    """Generated tokens (prompt excluded) and the tokens committed per cycle (accepted + 1)."""

    tokens: list[int]
    per_cycle: list[int]

    @property
    def acceptance_length(self) -> float:
        """tau: mean tokens committed per draft-and-verify cycle."""
        return sum(self.per_cycle) / max(1, len(self.per_cycle))


def _cache_kwargs(target: Qwen3ForCausalLM, cache: DynamicCache | None) -> dict[str, Any]:
    """The cache argument by the name this transformers takes (`cache` in newer releases,
    where `past_key_values` is deprecated; `past_key_values` before)."""
    name = "cache" if "cache" in inspect.signature(target.forward).parameters else "past_key_values"
    return {name: cache, "use_cache": cache is not None}


def _crop(cache: DynamicCache, keep: int) -> None:
    """Drop cached positions from `keep` on (a negative crop: every release takes it)."""
    drop = cache.get_seq_length() - keep
    if drop > 0:
        cache.crop(-drop)


@torch.no_grad()
def greedy_generate(
    target: Qwen3ForCausalLM, prompt: torch.Tensor, new_tokens: int, kv_cache: bool = False
) -> list[int]:
    """The target's own greedy continuation of prompt: [P] (with a KV cache: the baseline
    a speed-up is measured against)."""
    ids = prompt[None].to(target.device)  # [1, P]
    cache = DynamicCache() if kv_cache else None
    step_in = ids
    for _ in range(new_tokens):
        out = target(input_ids=step_in if kv_cache else ids, **_cache_kwargs(target, cache))
        nxt = out.logits[0, -1].argmax().view(1, 1)
        ids = torch.cat([ids, nxt], dim=1)
        step_in = nxt
    return ids[0, prompt.numel() :].tolist()


@torch.no_grad()
def _target_step(
    target: Qwen3ForCausalLM, ids: torch.Tensor, cache: DynamicCache | None, layer_ids: list[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Features [1, L, K*d] and logits [1, L, V] of `ids` [1, L] after what `cache` holds."""
    out = target(input_ids=ids, output_hidden_states=True, **_cache_kwargs(target, cache))
    feats = torch.cat([out.hidden_states[i + 1] for i in layer_ids], dim=-1)
    return feats, out.logits


@torch.no_grad()
def speculative_generate(
    target: Qwen3ForCausalLM,
    drafter: Drafter,
    prompt: torch.Tensor,
    new_tokens: int,
    cfg: Config,
    kv_cache: bool = True,
) -> DecodeResult:
    """DFlash speculative decoding of `new_tokens` tokens after prompt: [P]."""
    dev, ddev = target.device, next(drafter.parameters()).device
    ids = prompt[None].to(dev)  # [1, P]
    cache = DynamicCache() if kv_cache else None
    d_cache = DraftCache() if kv_cache else None
    feats, logits = _target_step(target, ids, cache, cfg.target_layer_ids)  # prefill
    ids = torch.cat([ids, logits[:, -1:].argmax(-1)], dim=1)  # first token from the target
    per_cycle: list[int] = []
    while ids.shape[1] - prompt.numel() < new_tokens:
        start = ids.shape[1] - 1  # the anchor: last committed token, its features unknown
        anchors = torch.tensor([[start]], device=dev)  # [1, 1]
        keep = torch.ones_like(anchors, dtype=torch.bool)
        blocks = block_inputs(ids, anchors, cfg.block_size, cfg.mask_token_id)  # [1, B]
        # the context strictly before the anchor: only what the drafter's cache lacks
        first = d_cache.length if d_cache is not None else 0
        inputs = (feats[:, first:start], blocks, anchors, keep)
        with torch.autocast(ddev.type, dtype=torch.bfloat16, enabled=ddev.type == "cuda"):
            d_logits = drafter(*(t.to(ddev) for t in inputs), "sdpa", cache=d_cache)  # [1, B, V]
        draft = torch.cat([blocks[:, :1], d_logits[:, 1:].argmax(-1).to(dev)], dim=1)  # [1, B]
        # Verify: one target pass over the block; block position i predicts start+i+1.
        if cache is not None:
            new_feats, logits = _target_step(target, draft, cache, cfg.target_layer_ids)
            verdict = logits[0].argmax(-1)  # [B]
        else:
            full = torch.cat([ids[:, :start], draft], dim=1)
            all_feats, logits = _target_step(target, full, None, cfg.target_layer_ids)
            new_feats, verdict = all_feats[:, start:], logits[0, start:].argmax(-1)
        matches = (draft[0, 1:] == verdict[:-1]).int()
        accepted = int(matches.cumprod(0).sum())
        commit = torch.cat([draft[0, 1 : 1 + accepted], verdict[accepted : accepted + 1]])
        ids = torch.cat([ids, commit[None]], dim=1)
        # Positions start..start+accepted now hold committed tokens: keep their features
        # and K/V; the rest of the block (rejected drafts) goes.
        feats = torch.cat([feats[:, :start], new_feats[:, : accepted + 1]], dim=1)
        if cache is not None:
            _crop(cache, start + accepted + 1)
        per_cycle.append(accepted + 1)
    return DecodeResult(tokens=ids[0, prompt.numel() :][:new_tokens].tolist(), per_cycle=per_cycle)


def evaluate(
    target: Qwen3ForCausalLM,
    drafter: Drafter,
    prompts: list[torch.Tensor],
    cfg: Config,
    check_greedy: bool = False,
) -> tuple[float, bool]:
    """Mean acceptance length over `prompts`, and whether every output equals target greedy."""
    cycles: list[int] = []
    same = True
    was_training = drafter.training
    drafter.eval()
    for p in prompts:
        res = speculative_generate(target, drafter, p, cfg.eval_new_tokens, cfg)
        cycles += res.per_cycle
        if check_greedy:
            same &= res.tokens == greedy_generate(target, p, cfg.eval_new_tokens)
    drafter.train(was_training)
    return sum(cycles) / max(1, len(cycles)), same


def measure_speedup(
    target: Qwen3ForCausalLM, drafter: Drafter, prompts: list[torch.Tensor], cfg: Config
) -> dict[str, float]:
    """Wall-clock tokens/s of the target's greedy decoding and of speculative decoding,
    both with the target's KV cache, over the same prompts; speedup is their ratio.

    One untimed prompt first warms both paths up (allocator, kernels).
    """
    if not prompts:
        return {}
    sync = torch.cuda.synchronize if target.device.type == "cuda" else (lambda: None)
    was_training = drafter.training
    drafter.eval()
    n = cfg.eval_new_tokens
    greedy_generate(target, prompts[0], n, kv_cache=True)
    speculative_generate(target, drafter, prompts[0], n, cfg)
    sync()
    t0 = time.perf_counter()
    for p in prompts:
        greedy_generate(target, p, n, kv_cache=True)
    sync()
    t1 = time.perf_counter()
    for p in prompts:
        speculative_generate(target, drafter, p, n, cfg)
    sync()
    t2 = time.perf_counter()
    drafter.train(was_training)
    tokens = n * len(prompts)
    return {
        "greedy_tok_s": tokens / max(1e-9, t1 - t0),
        "speculative_tok_s": tokens / max(1e-9, t2 - t1),
        "speedup": (t1 - t0) / max(1e-9, t2 - t1),
    }
