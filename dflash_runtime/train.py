"""One training step: random anchors, block inputs, drafter forward, weighted cross entropy."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from dflash_runtime.config import Config
from dflash_runtime.drafter import Attention, Drafter, block_inputs


@dataclass
class StepResult:
    """What a step reports: the loss, the argmax accuracy on weighted positions, tokens seen."""

    loss: torch.Tensor
    acc: float
    tokens: int


def sample_anchors(
    loss_mask: torch.Tensor, num_anchors: int, g: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Up to `num_anchors` sorted random anchors per row, where this and the next token are
    supervised.

    loss_mask: [B, S]. Returns anchors [B, N] (0 where unused) and keep [B, N] (bool).
    """
    valid = loss_mask.bool().clone()
    valid[:, :-1] &= loss_mask[:, 1:].bool()
    valid[:, -1] = False
    scores = torch.rand(valid.shape, generator=g).to(loss_mask.device)  # [B, S]
    scores = scores.masked_fill(~valid, -1.0)
    n = min(num_anchors, loss_mask.shape[1])
    top, idx = scores.topk(n, dim=1)  # [B, N]
    keep = top >= 0
    anchors = torch.where(keep, idx, torch.full_like(idx, loss_mask.shape[1]))
    anchors, order = anchors.sort(dim=1)  # unused slots sort last
    keep = keep.gather(1, order)
    return anchors.masked_fill(~keep, 0), keep


def block_targets(
    input_ids: torch.Tensor,
    loss_mask: torch.Tensor,
    anchors: torch.Tensor,
    keep: torch.Tensor,
    cfg: Config,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Labels and loss weights for each block position (same-position labels, not shifted).

    Block position k predicts input_ids[anchor + k]. Its weight is exp(-(k-1)/gamma) when the
    block is kept, k > 0, anchor + k is in bounds and supervised; else 0.
    Returns labels [B, N*B] and weights [B, N*B].
    """
    seq = input_ids.shape[1]
    k = torch.arange(cfg.block_size, device=input_ids.device)  # [B_blk]
    pos = anchors[:, :, None] + k  # [B, N, B_blk]
    in_bounds = pos < seq
    pos = pos.clamp(max=seq - 1).flatten(1)
    labels = input_ids.gather(1, pos)  # [B, N*B_blk]
    supervised = loss_mask.gather(1, pos).bool()
    decay = torch.exp(-(k - 1).clamp(min=0).float() / cfg.gamma) * (k > 0)  # [B_blk]
    weight = (keep[:, :, None] & in_bounds).float() * decay  # [B, N, B_blk]
    return labels, weight.flatten(1) * supervised


def dflash_loss(
    logits: torch.Tensor, labels: torch.Tensor, weight: torch.Tensor
) -> tuple[torch.Tensor, float]:
    """Weighted CE normalised by the weight sum, and argmax accuracy on positions with weight.

    logits: [B, Q, V]; labels, weight: [B, Q].
    """
    ce = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), reduction="none")
    w = weight.flatten()
    loss = (ce * w).sum() / w.sum().clamp(min=1e-6)
    hit = (logits.argmax(-1) == labels).flatten()[w > 0]
    acc = hit.float().mean().item() if hit.numel() else 0.0
    return loss, acc


def _chunk_ce(
    hidden: torch.Tensor, labels: torch.Tensor, head_weight: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """CE [n] and argmax hits (a count) of one chunk of positions. hidden: [n, d]."""
    logits = (hidden @ head_weight.t()).float()  # [n, V]: only this chunk's
    ce = F.cross_entropy(logits, labels, reduction="none")
    return ce, (logits.argmax(-1) == labels).sum()


def chunked_loss(
    hidden: torch.Tensor,
    head_weight: torch.Tensor,
    labels: torch.Tensor,
    weight: torch.Tensor,
    chunk: int,
) -> tuple[torch.Tensor, float]:
    """dflash_loss without the full [B, Q, V] logits: positions with weight only, `chunk`
    at a time, each chunk's logits recomputed in backward (activation checkpointing).

    At the 8B preset's shapes the full logits are 32,768 positions x 151,936 tokens,
    about 20 GB in fp32 before their gradient; a chunk of 4,096 is about 2.5 GB.
    hidden: [B, Q, d] (final-normed); labels, weight: [B, Q].
    """
    w = weight.flatten()
    sel = w > 0
    h, y, w = hidden.flatten(0, 1)[sel], labels.flatten()[sel], w[sel]
    total = hidden.new_zeros((), dtype=torch.float32)
    hits = 0
    for i in range(0, h.shape[0], chunk):
        ce, hit = checkpoint(_chunk_ce, h[i : i + chunk], y[i : i + chunk], head_weight, use_reentrant=False)
        total = total + (ce * w[i : i + chunk]).sum()
        hits += int(hit)
    loss = total / w.sum().clamp(min=1e-6)
    return loss, hits / h.shape[0] if h.shape[0] else 0.0


def forward_loss(
    drafter: torch.nn.Module,
    feats: torch.Tensor,
    batch: dict[str, torch.Tensor],
    cfg: Config,
    g: torch.Generator,
    attention: Attention,
) -> StepResult:
    """Sample anchors for `batch`, run the drafter on the target features, return the loss.

    feats: [B, S, K*d]; batch input_ids, loss_mask: [B, S]. `drafter` may be DDP-wrapped.
    """
    ids, loss_mask = batch["input_ids"], batch["loss_mask"]
    anchors, keep = sample_anchors(loss_mask, cfg.num_anchors, g)
    blocks = block_inputs(ids, anchors, cfg.block_size, cfg.mask_token_id)
    labels, weight = block_targets(ids, loss_mask, anchors, keep, cfg)
    if cfg.head_chunk > 0:
        hidden = drafter(feats, blocks, anchors, keep, attention, return_hidden=True)
        head = getattr(drafter, "module", drafter).lm_head  # through a DDP wrapper
        assert isinstance(head, torch.nn.Linear)
        loss, acc = chunked_loss(hidden, head.weight, labels, weight, cfg.head_chunk)
    else:
        logits = drafter(feats, blocks, anchors, keep, attention)
        loss, acc = dflash_loss(logits, labels, weight)
    return StepResult(loss=loss, acc=acc, tokens=ids.numel())


def make_optimizer(
    drafter: Drafter, cfg: Config
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW over the trainable drafter weights, linear warmup then cosine decay to 10%."""
    params = [p for p in drafter.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.95))

    def factor(step: int) -> float:
        if step < cfg.warmup_steps:
            return (step + 1) / cfg.warmup_steps
        frac = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
        return 0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, frac)))

    return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)
