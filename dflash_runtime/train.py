"""One training step: random anchors, block inputs, drafter forward, weighted cross entropy."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

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
    logits = drafter(feats, blocks, anchors, keep, attention)
    labels, weight = block_targets(ids, loss_mask, anchors, keep, cfg)
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
