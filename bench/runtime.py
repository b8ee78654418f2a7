"""Benchmark the DFlash drafter training step: tok/s for flex vs sdpa; on a GPU also MFU.

    python bench/runtime.py --preset tiny --device cpu --steps 20
    python bench/runtime.py --preset small --device cuda --steps 20

Target features are computed once (the target is frozen and, in the thread layout, runs
elsewhere), so the timing is the drafter step: forward, backward, clip, AdamW.
tok/s counts sequence tokens (batch x padded length), like the trainer's step lines.
MFU counts the attention each backend really computes: the dense grid for sdpa, the
tiles the BlockMask keeps for flex_attention (see `attended_pairs`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # after the path setup above

from dflash_runtime.config import Config, preset
from dflash_runtime.data import make_loader
from dflash_runtime.drafter import Drafter
from dflash_runtime.masks import flex_mask, sdpa_mask
from dflash_runtime.target import build_target, target_features
from dflash_runtime.train import forward_loss, make_optimizer, sample_anchors

# Dense bf16 peak FLOP/s by device name fragment (vendor datasheets).
PEAK_BF16 = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "B200": 2250e12}


def attended_pairs(
    cfg: Config, batch: dict[str, torch.Tensor], attention: str, g: torch.Generator
) -> tuple[float, float]:
    """(query-key pairs the backend computes, pairs the mask keeps), summed over the batch.

    sdpa computes the dense Q x KV grid whatever the mask. flex_attention computes only
    the 128x128 tiles its BlockMask keeps (partial and full tiles), so counting the dense
    grid for it would credit work it skips.
    """
    anchors, keep = sample_anchors(batch["loss_mask"], cfg.num_anchors, g)
    rows, seq = batch["input_ids"].shape
    q = cfg.num_anchors * cfg.block_size
    kv = seq + q
    kept = float(sdpa_mask(anchors.cpu(), keep.cpu(), seq, cfg.block_size).sum())
    if attention != "flex":
        return float(rows * q * kv), kept
    bm = flex_mask(anchors, keep, seq, cfg.block_size)
    tiles = bm.kv_num_blocks.sum() + (bm.full_kv_num_blocks.sum() if bm.full_kv_num_blocks is not None else 0)
    tile_q, tile_kv = bm.BLOCK_SIZE
    return float(tiles) * tile_q * tile_kv, kept


def step_flops(cfg: Config, batch: int, seq: int, pairs: float | None = None) -> float:
    """Matmul FLOPs of one drafter training step (forward + backward).

    Trainable matmuls cost 6 FLOPs per weight per token; the frozen lm_head costs 4
    (no weight gradient). Attention scores and values cost 12 FLOPs per head dimension
    for each query-key pair computed (`pairs`, summed over the batch; default: the dense
    Q x KV grid).
    """
    d, h, hkv, hd = cfg.hidden_size, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
    q = cfg.num_anchors * cfg.block_size  # draft positions per row
    kv = seq + q
    k = len(cfg.target_layer_ids)
    fc = 6 * seq * k * d * d
    per_layer = 6 * (
        q * d * h * hd + 2 * kv * d * hkv * hd + q * h * hd * d + 3 * q * d * cfg.intermediate_size
    )
    head = 4 * q * d * cfg.vocab_size
    if pairs is None:
        pairs = float(batch * q * kv)
    attn = 6 * 2 * pairs * h * hd
    return batch * (fc + cfg.num_draft_layers * per_layer + head) + cfg.num_draft_layers * attn


def peak_flops(device: str) -> float | None:
    """Peak bf16 FLOP/s of the GPU, if known."""
    if not device.startswith("cuda"):
        return None
    name = torch.cuda.get_device_name()
    return next((v for k, v in PEAK_BF16.items() if k in name), None)


def bench(cfg: Config, attention: str, device: str, steps: int, warmup: int) -> dict[str, float]:
    """Time `steps` drafter steps after `warmup` ones (which include compilation)."""
    target = build_target(cfg, cfg.seed, log=False).to(device)
    if device.startswith("cuda"):
        target = target.to(torch.bfloat16)
    torch.manual_seed(cfg.seed)
    drafter = Drafter(cfg, target).to(device)
    opt, _ = make_optimizer(drafter, cfg)
    batch = {k: v.to(device) for k, v in next(iter(make_loader(cfg, cfg.seed))).items()}
    feats, _ = target_features(target, batch["input_ids"], cfg.target_layer_ids)
    g = torch.Generator().manual_seed(0)
    amp: contextlib.AbstractContextManager[object] = (
        torch.autocast("cuda", dtype=torch.bfloat16)
        if device.startswith("cuda")
        else contextlib.nullcontext()
    )

    def one_step() -> None:
        with amp:
            res = forward_loss(drafter, feats, batch, cfg, g, attention)  # type: ignore[arg-type]
        opt.zero_grad(set_to_none=True)
        res.loss.backward()
        torch.nn.utils.clip_grad_norm_(drafter.parameters(), cfg.grad_clip)
        opt.step()

    t0 = time.perf_counter()
    for _ in range(warmup):
        one_step()
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    sync()
    t1 = time.perf_counter()
    for _ in range(steps):
        one_step()
    sync()
    dt = (time.perf_counter() - t1) / steps
    rows, seq = batch["input_ids"].shape
    pairs, kept = attended_pairs(cfg, batch, attention, torch.Generator().manual_seed(0))
    flops = step_flops(cfg, rows, seq, pairs)
    out = {
        "step_ms": dt * 1e3,
        "tok_s": rows * seq / dt,
        "warmup_s": t1 - t0,
        "attn_pairs_computed": pairs,
        "attn_pairs_kept": kept,  # the mask's true entries: what any backend must do
        "gflop_step": flops / 1e9,
    }
    peak = peak_flops(device)
    if peak:
        out["tflops"] = flops / dt / 1e12
        out["mfu"] = flops / dt / peak
    return out


def main() -> int:
    """Run the benchmark for each attention backend and print one JSON line each."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="tiny")
    p.add_argument("--device", default="cpu")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--attention", nargs="+", default=["sdpa", "flex"])
    p.add_argument("--cpu-threads", type=int)
    args = p.parse_args()
    if args.cpu_threads:
        torch.set_num_threads(args.cpu_threads)
    cfg = preset(args.preset)
    for attention in args.attention:
        res = bench(cfg, attention, args.device, args.steps, args.warmup)
        line = {"preset": args.preset, "device": args.device, "attention": attention, **res}
        print(
            json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in line.items()}),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
