"""The DFlash drafter: a small Qwen3-style stack that reads fused target features as K/V.

Follows z-lab/dflash `DFlashDraftModel` (shared/reference/dflash.md section 1): no
embedding or head of its own (the target's, frozen), K target layers fused by
`fc` + `hidden_norm`, and in every layer Q from the block tokens only while K/V come
from [fused context ; block tokens] with shared projections, q/k norms and RoPE.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Literal, cast

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint
from transformers import Qwen3ForCausalLM
from transformers.models.qwen3.modeling_qwen3 import (
    Qwen3MLP,
    Qwen3RMSNorm,
    Qwen3RotaryEmbedding,
    rotate_half,
)

from dflash_runtime.config import Config
from dflash_runtime.masks import flex_attend, flex_mask, sdpa_mask
from dflash_runtime.target import qwen3_config

Attention = Literal["flex", "sdpa"]


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate x: [B, H, L, D] by cos, sin: [B, L, D]."""
    return x * cos[:, None] + rotate_half(x) * sin[:, None]


class DraftLayer(nn.Module):
    """Pre-norm Qwen3 layer whose attention keys/values include the fused target context."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        d, hd = cfg.hidden_size, cfg.head_dim
        self.heads, self.kv_heads, self.head_dim = cfg.num_heads, cfg.num_kv_heads, hd
        self.q_proj = nn.Linear(d, cfg.num_heads * hd, bias=False)
        self.k_proj = nn.Linear(d, cfg.num_kv_heads * hd, bias=False)
        self.v_proj = nn.Linear(d, cfg.num_kv_heads * hd, bias=False)
        self.o_proj = nn.Linear(cfg.num_heads * hd, d, bias=False)
        self.q_norm = Qwen3RMSNorm(hd)
        self.k_norm = Qwen3RMSNorm(hd)
        self.input_layernorm = Qwen3RMSNorm(d)
        self.post_attention_layernorm = Qwen3RMSNorm(d)
        self.mlp = Qwen3MLP(qwen3_config(cfg, num_layers=1))

    def forward(
        self,
        x: torch.Tensor,
        ctx: torch.Tensor,
        rope_q: tuple[torch.Tensor, torch.Tensor],
        rope_k: tuple[torch.Tensor, torch.Tensor],
        mask: object,
        attention: Attention,
        ctx_kv: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """x: [B, Q, d] block tokens; ctx: [B, S, d] fused target context. Returns [B, Q, d].

        With `ctx_kv` (the context's keys and values, already projected and rotated, as
        `context_kv` gives them: decoding caches them), `ctx` is not read and `rope_k`
        covers the block tokens only."""
        b, q_len, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_norm(self.q_proj(h).view(b, q_len, self.heads, self.head_dim))
        q = rope(q.transpose(1, 2), *rope_q)  # q: [B, H, Q, D]
        if ctx_kv is None:
            k, v = self.context_kv(torch.cat([ctx, h], dim=1), rope_k)  # [B, Hkv, S+Q, D]
        else:
            k_blk, v_blk = self.context_kv(h, rope_k)  # [B, Hkv, Q, D]
            k, v = torch.cat([ctx_kv[0], k_blk], dim=2), torch.cat([ctx_kv[1], v_blk], dim=2)
        if attention == "flex":
            o = flex_attend(q, k, v, mask)  # type: ignore[arg-type]  # a BlockMask here
        else:
            dense = cast(torch.Tensor, mask)  # sdpa_mask's dense boolean mask here
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=dense, enable_gqa=True)
        o = o.transpose(1, 2).reshape(b, q_len, self.heads * self.head_dim)  # [B, Q, H*D]
        x = x + self.o_proj(o)
        return x + self.mlp(self.post_attention_layernorm(x))

    def context_kv(
        self, kv_in: torch.Tensor, rope_k: tuple[torch.Tensor, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values [B, Hkv, L, D] of kv_in: [B, L, d] at the positions rope_k holds.
        Per position, so the keys of [ctx ; h] are those of ctx followed by those of h."""
        b, kv_len, _ = kv_in.shape
        k = self.k_norm(self.k_proj(kv_in).view(b, kv_len, self.kv_heads, self.head_dim))
        v = self.v_proj(kv_in).view(b, kv_len, self.kv_heads, self.head_dim)
        return rope(k.transpose(1, 2), *rope_k), v.transpose(1, 2)


@dataclass
class DraftCache:
    """The drafter's context keys and values, per layer, for decoding.

    The context is the fused target features of committed tokens only, which never
    change once committed: each cycle appends the newly committed positions and nothing
    is ever cropped. Training does not use it (every sample has its own context).
    """

    keys: list[torch.Tensor] = field(default_factory=list)
    values: list[torch.Tensor] = field(default_factory=list)
    length: int = 0


class Drafter(nn.Module):
    """DFlash drafter. Trainable: fc, hidden_norm, layers, norm. Frozen: embed, lm_head."""

    def __init__(self, cfg: Config, target: Qwen3ForCausalLM) -> None:
        super().__init__()
        self.cfg = cfg
        k, d = len(cfg.target_layer_ids), cfg.hidden_size
        self.fc = nn.Linear(k * d, d, bias=False)
        self.hidden_norm = Qwen3RMSNorm(d)
        self.layers = nn.ModuleList(DraftLayer(cfg) for _ in range(cfg.num_draft_layers))
        self.norm = Qwen3RMSNorm(d)
        self.rotary = Qwen3RotaryEmbedding(qwen3_config(cfg, num_layers=cfg.num_draft_layers))
        # The target's embedding and head, frozen; kept out of the optimiser and checkpoints.
        # Copies, so that a drafter worker can live on another device than its target.
        self.embed = copy.deepcopy(target.get_input_embeddings())
        self.lm_head = copy.deepcopy(target.get_output_embeddings())
        self.embed.requires_grad_(False)
        self.lm_head.requires_grad_(False)

    def trainable_state(self) -> dict[str, torch.Tensor]:
        """The drafter's own weights (without the target's embedding and head)."""
        return {k: v for k, v in self.state_dict().items() if not k.startswith(("embed.", "lm_head."))}

    def forward(
        self,
        target_hidden: torch.Tensor,
        block_ids: torch.Tensor,
        anchors: torch.Tensor,
        keep: torch.Tensor,
        attention: Attention = "sdpa",
        return_hidden: bool = False,
        cache: DraftCache | None = None,
    ) -> torch.Tensor:
        """Logits for every block position (or, with return_hidden, the final-normed hidden
        states [B, N*B, d] for a chunked head).

        target_hidden: [B, S, K*d] features of the chosen target layers;
        block_ids: [B, N*B] (anchor token then mask tokens, per block);
        anchors, keep: [B, N]. Returns logits [B, N*B, V].
        With `cache` (decoding), target_hidden holds only the context positions after the
        `cache.length` it already has; their keys and values are appended to it.
        """
        bsz, new_len, _ = target_hidden.shape
        block = self.cfg.block_size
        if self.cfg.zero_target_features:
            target_hidden = torch.zeros_like(target_hidden)  # the ablation: no target signal
        ctx = self.hidden_norm(self.fc(target_hidden))  # [B, S, d]
        x = self.embed(block_ids).to(ctx.dtype)  # [B, N*B, d]
        first = cache.length if cache is not None else 0
        ctx_len = first + new_len
        offs = torch.arange(block, device=anchors.device)
        pos_q = (anchors[:, :, None] + offs).flatten(1)  # [B, N*B]: anchor + 0..B-1
        pos_ctx = torch.arange(first, ctx_len, device=anchors.device).expand(bsz, new_len)
        rope_q = self.rotary(x, pos_q)  # cos, sin: [B, N*B, D]
        if attention == "flex":
            mask: object = flex_mask(anchors, keep, ctx_len, block)
        else:
            mask = sdpa_mask(anchors, keep, ctx_len, block)
        if cache is not None:
            self._extend(cache, ctx, self.rotary(x, pos_ctx))
            for i, layer in enumerate(self.layers):
                x = layer(x, ctx, rope_q, rope_q, mask, attention, (cache.keys[i], cache.values[i]))
        else:
            rope_k = self.rotary(x, torch.cat([pos_ctx, pos_q], dim=1))  # cos, sin: [B, S+N*B, D]
            for layer in self.layers:
                if self.cfg.activation_checkpointing and self.training and torch.is_grad_enabled():
                    # Keep only each layer's input; recompute its activations in backward.
                    x = checkpoint(layer, x, ctx, rope_q, rope_k, mask, attention, use_reentrant=False)
                else:
                    x = layer(x, ctx, rope_q, rope_k, mask, attention)
        hidden = self.norm(x)
        return hidden if return_hidden else self.lm_head(hidden)

    def _extend(
        self, cache: DraftCache, ctx: torch.Tensor, rope_ctx: tuple[torch.Tensor, torch.Tensor]
    ) -> None:
        """Append the keys and values of the new context positions ctx: [B, S_new, d]."""
        for i, layer in enumerate(self.layers):
            k, v = cast(DraftLayer, layer).context_kv(ctx, rope_ctx)
            if i < len(cache.keys):
                cache.keys[i] = torch.cat([cache.keys[i], k], dim=2)
                cache.values[i] = torch.cat([cache.values[i], v], dim=2)
            else:
                cache.keys.append(k)
                cache.values.append(v)
        cache.length += ctx.shape[1]


def block_inputs(
    input_ids: torch.Tensor, anchors: torch.Tensor, block: int, mask_token_id: int
) -> torch.Tensor:
    """Blocks of [token at anchor, MASK x (block-1)]. input_ids: [B, S]; anchors: [B, N]."""
    bsz, n = anchors.shape
    ids = torch.full((bsz, n, block), mask_token_id, dtype=torch.long, device=input_ids.device)
    ids[:, :, 0] = input_ids.gather(1, anchors)
    return ids.flatten(1)  # [B, N*B]
