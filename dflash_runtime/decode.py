"""Speculative decoding with the drafter: draft a block, verify with the target, keep the
accepted prefix plus one token from the target. Greedy, so the output is the target's own.

For readability both models recompute the full prefix each cycle (no KV cache); the
tiny models make that cheap, and it keeps the verification exactly a target forward.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import Qwen3ForCausalLM

from dflash_runtime.config import Config
from dflash_runtime.drafter import Drafter, block_inputs
from dflash_runtime.target import target_features


@dataclass
class DecodeResult:
    """Generated tokens (prompt excluded) and the tokens committed per cycle (accepted + 1)."""

    tokens: list[int]
    per_cycle: list[int]

    @property
    def acceptance_length(self) -> float:
        """tau: mean tokens committed per draft-and-verify cycle."""
        return sum(self.per_cycle) / max(1, len(self.per_cycle))


@torch.no_grad()
def greedy_generate(target: Qwen3ForCausalLM, prompt: torch.Tensor, new_tokens: int) -> list[int]:
    """The target's own greedy continuation of prompt: [P]."""
    ids = prompt[None].to(target.device)  # [1, P]
    for _ in range(new_tokens):
        nxt = target(input_ids=ids).logits[0, -1].argmax()
        ids = torch.cat([ids, nxt.view(1, 1)], dim=1)
    return ids[0, prompt.numel() :].tolist()


@torch.no_grad()
def speculative_generate(
    target: Qwen3ForCausalLM, drafter: Drafter, prompt: torch.Tensor, new_tokens: int, cfg: Config
) -> DecodeResult:
    """DFlash speculative decoding of `new_tokens` tokens after prompt: [P]."""
    dev, ddev = target.device, next(drafter.parameters()).device
    ids = prompt[None].to(dev)  # [1, P]
    feats, logits = target_features(target, ids, cfg.target_layer_ids)  # prefill
    ids = torch.cat([ids, logits[:, -1:].argmax(-1)], dim=1)  # first token from the target
    per_cycle: list[int] = []
    while ids.shape[1] - prompt.numel() < new_tokens:
        start = ids.shape[1] - 1  # the anchor: last committed token, its features unknown
        anchors = torch.tensor([[start]], device=dev)  # [1, 1]
        keep = torch.ones_like(anchors, dtype=torch.bool)
        blocks = block_inputs(ids, anchors, cfg.block_size, cfg.mask_token_id)  # [1, B]
        inputs = (feats[:, :start], blocks, anchors, keep)  # context strictly before the anchor
        with torch.autocast(ddev.type, dtype=torch.bfloat16, enabled=ddev.type == "cuda"):
            d_logits = drafter(*(t.to(ddev) for t in inputs), "sdpa")  # [1, B, V]
        draft = torch.cat([blocks[:, :1], d_logits[:, 1:].argmax(-1).to(dev)], dim=1)  # [1, B]
        # Verify: one target pass over prefix + block; position start+i predicts start+i+1.
        full = torch.cat([ids[:, :start], draft], dim=1)
        feats, logits = target_features(target, full, cfg.target_layer_ids)
        verdict = logits[0, start:].argmax(-1)  # [B]
        matches = (draft[0, 1:] == verdict[:-1]).int()
        accepted = int(matches.cumprod(0).sum())
        commit = torch.cat([draft[0, 1 : 1 + accepted], verdict[accepted : accepted + 1]])
        ids = torch.cat([ids, commit[None]], dim=1)
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
