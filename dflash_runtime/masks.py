"""The DFlash attention mask, one mask_mod for both backends.

Queries are N blocks of B draft tokens; keys are [S context positions ; N*B draft tokens].
A query in block n sees context kv only if kv < anchor[n] (strictly before: the target
state at the anchor does not exist yet at inference), and every draft token of its own
block (bidirectional). Padded blocks (keep False) see only their own block, so no row is
fully masked (sdpa would return NaN there); their loss weight is zero anyway.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.nn.attention.flex_attention import BlockMask, create_block_mask, flex_attention

MaskMod = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def dflash_mask_mod(anchors: torch.Tensor, keep: torch.Tensor, ctx_len: int, block: int) -> MaskMod:
    """mask_mod(b, h, q, kv) -> bool. anchors, keep: [Bt, N]."""

    def mask_mod(b: torch.Tensor, h: torch.Tensor, q: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
        q_block = q // block
        in_ctx = kv < ctx_len
        sees_ctx = in_ctx & (kv < anchors[b, q_block]) & keep[b, q_block]
        same_block = ~in_ctx & ((kv - ctx_len) // block == q_block)
        return sees_ctx | same_block

    return mask_mod


def dense_mask(mod: MaskMod, bt: int, q_len: int, kv_len: int, device: torch.device) -> torch.Tensor:
    """Evaluate `mod` on the full grid. Returns a bool mask [Bt, 1, Q, KV] for sdpa."""
    b = torch.arange(bt, device=device)[:, None, None]  # [Bt, 1, 1]
    q = torch.arange(q_len, device=device)[None, :, None]  # [1, Q, 1]
    kv = torch.arange(kv_len, device=device)[None, None, :]  # [1, 1, KV]
    return mod(b, torch.zeros_like(b), q, kv)[:, None]


def sdpa_mask(anchors: torch.Tensor, keep: torch.Tensor, ctx_len: int, block: int) -> torch.Tensor:
    """The dense boolean mask [Bt, 1, Q, KV] for scaled_dot_product_attention."""
    bt, n = anchors.shape
    mod = dflash_mask_mod(anchors, keep, ctx_len, block)
    return dense_mask(mod, bt, n * block, ctx_len + n * block, anchors.device)


def flex_mask(anchors: torch.Tensor, keep: torch.Tensor, ctx_len: int, block: int) -> BlockMask:
    """The same mask as a flex_attention BlockMask (sparse over 128x128 tiles)."""
    bt, n = anchors.shape
    mod = dflash_mask_mod(anchors, keep, ctx_len, block)
    return create_block_mask(mod, bt, None, n * block, ctx_len + n * block, device=str(anchors.device))


_compiled_flex: Callable[..., torch.Tensor] | None = None
_compiled_lock = threading.Lock()


def compiled_flex_attention() -> Callable[..., torch.Tensor]:
    """A process-wide torch.compile(flex_attention), as transformers' integration keeps one.

    Creating the wrapper is cheap; compilation happens on its first call for each shape,
    in whichever thread calls it first.
    """
    global _compiled_flex
    with _compiled_lock:
        if _compiled_flex is None:
            _compiled_flex = torch.compile(flex_attention, dynamic=False)
        return _compiled_flex


class _FlexDenseBackward(torch.autograd.Function):
    """Compiled flex_attention forward with a dense sdpa backward, for CPU training.

    torch has no flex_attention backward on CPU ("FlexAttention does not support backward
    on CPU"), so on CPU the forward runs the compiled flex kernel (the same compile as on
    GPU, in the same threads) and the backward recomputes attention densely from the
    BlockMask's mask_mod and differentiates that.
    """

    @staticmethod
    def forward(  # type: ignore[override]  # autograd.Function's ctx-first signature
        ctx: torch.autograd.function.FunctionCtx,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        block_mask: BlockMask,
    ) -> torch.Tensor:
        ctx.save_for_backward(q, k, v)
        ctx.block_mask = block_mask  # type: ignore[attr-defined]  # ctx carries arbitrary attributes
        q, k, v = q.detach(), k.detach(), v.detach()  # flex refuses CPU inputs that need grad
        return compiled_flex_attention()(q, k, v, block_mask=block_mask, enable_gqa=True)

    @staticmethod
    def backward(  # type: ignore[override]
        ctx: torch.autograd.function.FunctionCtx, grad_out: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None]:
        q, k, v = ctx.saved_tensors  # type: ignore[attr-defined]
        bm: BlockMask = ctx.block_mask  # type: ignore[attr-defined]
        mask = dense_mask(bm.mask_mod, q.shape[0], q.shape[2], k.shape[2], q.device)
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_() for t in (q, k, v)]
            lq, lk, lv = leaves  # named, so the checker sees three tensors, not *args
            out = F.scaled_dot_product_attention(lq, lk, lv, attn_mask=mask, enable_gqa=True)
            gq, gk, gv = torch.autograd.grad(out, leaves, grad_out)
        return gq, gk, gv, None


def flex_attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_mask: BlockMask) -> torch.Tensor:
    """flex_attention under torch.compile. q: [B, H, Q, D]; k, v: [B, Hkv, KV, D]."""
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
    if q.device.type == "cpu" and needs_grad:
        return _FlexDenseBackward.apply(q, k, v, block_mask)
    return compiled_flex_attention()(q, k, v, block_mask=block_mask, enable_gqa=True)
