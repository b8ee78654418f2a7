"""Command line: `python -m dflash_runtime train|decode|save-target ...`."""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from dflash_runtime.checkpoint import TrainState, load_checkpoint, read_resume, save_checkpoint
from dflash_runtime.config import PRESETS, Config, preset
from dflash_runtime.data import eval_prompts, make_loader
from dflash_runtime.decode import evaluate, measure_speedup
from dflash_runtime.drafter import Drafter
from dflash_runtime.placement import (
    Placement,
    devices,
    init_distributed,
    rank,
    train_threads,
    warmup_every_shape,
)
from dflash_runtime.target import (
    build_target,
    load_targets,
    save_target,
    shapes_from_checkpoint,
)


def config_from_args(args: argparse.Namespace) -> Config:
    """The preset named by --preset with the overrides given on the command line."""
    cfg = preset(
        args.preset,
        steps=getattr(args, "steps", None),
        lr=getattr(args, "lr", None),
        seed=args.seed,
        block_size=args.block_size,
        batch_size=getattr(args, "batch_size", None),
        num_anchors=getattr(args, "num_anchors", None),
        eval_prompts=args.eval_prompts,
        eval_new_tokens=args.eval_new_tokens,
        target_pretrain_steps=args.target_pretrain_steps,
        pad_multiple=getattr(args, "pad_multiple", None),
    )
    if args.target_path:
        cfg = shapes_from_checkpoint(cfg, args.target_path)
    elif cfg.needs_checkpoint:
        raise SystemExit(f"preset {cfg.preset} loads a real checkpoint: pass --target-path DIR")
    return cfg


def build_drafters(cfg: Config, targets: list[Any], drafter_devices: list[str], seed: int) -> list[Drafter]:
    """D drafter replicas with the same initial weights, one per device."""
    torch.manual_seed(seed)
    base = Drafter(cfg, targets[0])
    replicas = []
    for j, dev in enumerate(drafter_devices):
        print(f"Drafter {j} on {dev}...", flush=True)
        replicas.append(copy.deepcopy(base).to(dev))
    return replicas


def cmd_train(args: argparse.Namespace) -> int:
    """Train a drafter; print phase markers, one line per step, and a final `done` line."""
    place = Placement(
        attention=args.attention,
        device=args.device,
        targets=args.targets,
        drafters=args.drafters,
        warmup_compile=args.warmup_compile,
        save=args.save,
        save_every=args.save_every,
        stall_rank=args.stall_rank,
        stall_step=args.stall_step,
        stall_seconds=args.stall_seconds,
        dist_timeout=args.dist_timeout,
        detect_anomaly=args.detect_anomaly,
    )
    device = init_distributed(args.device, args.dist_timeout)
    cfg = config_from_args(args)
    t0 = time.perf_counter()
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    target_devs, drafter_devs = devices(place, device)
    targets = load_targets(cfg, target_devs, cfg.seed, dtype)
    drafters = build_drafters(cfg, targets, drafter_devs, cfg.seed + 1)
    resume = None
    if args.resume:
        resume = read_resume(args.resume)
        for d in drafters:
            load_checkpoint(args.resume, d)
        print(f"Resuming from {args.resume} at step {resume.step}...", flush=True)
        if resume.step >= cfg.steps:
            raise SystemExit(f"{args.resume} is at step {resume.step}: nothing left of --steps {cfg.steps}")
    prompts = eval_prompts(cfg, cfg.seed)
    tau_before = evaluate(targets[0], drafters[0], prompts, cfg)[0] if prompts else 0.0
    print(f"acceptance_length before {tau_before:.3f}", flush=True)

    loader = make_loader(cfg, cfg.seed + 7919 * rank(), args.num_workers)
    batches: Iterator[Any] = iter(loader)
    if resume is not None:
        # The sampler is seeded: skipping what the saved steps drew puts the data where
        # the first run was (each worker drew one batch per step).
        for _ in range(resume.step * place.drafters):
            next(batches)
    first = next(batches)
    if place.attention == "flex" and place.warmup_compile:
        warmup_every_shape(drafters, targets[0], first, cfg, place)
    batches = itertools.chain([first], batches)

    def on_step(step: int, drafter: Drafter, state: TrainState) -> None:
        if place.save and place.save_every and step % place.save_every == 0 and rank() == 0:
            # One folder per saved step, so an earlier step stays there to resume from.
            save_checkpoint(str(Path(place.save) / f"step_{step}"), drafter, state, cfg)

    hist = train_threads(cfg, place, targets, drafters, batches, on_step, resume)
    if place.save and rank() == 0:
        save_checkpoint(place.save, drafters[0], hist.state, cfg)
    tau_after = evaluate(targets[0], drafters[0], prompts, cfg)[0] if prompts else 0.0
    print(f"acceptance_length after {tau_after:.3f}", flush=True)
    summary = {
        "steps": len(hist.losses),
        "loss_first": hist.losses[0],
        "loss_last": hist.losses[-1],
        "loss_last5": sum(hist.losses[-5:]) / len(hist.losses[-5:]),
        "acc_last": hist.accs[-1],
        "tokens_per_s": hist.tokens_per_s(),
        "acceptance_length_before": tau_before,
        "acceptance_length_after": tau_after,
        "attention": place.attention,
        "device": device,
        "preset": cfg.preset,
        "seed": cfg.seed,
        "targets": place.targets,
        "drafters": place.drafters,
        "world_size": torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1,
        "block_size": cfg.block_size,
        "wall_s": time.perf_counter() - t0,
    }
    if args.summary and rank() == 0:
        Path(args.summary).write_text(json.dumps(summary, indent=2) + "\n")
    print(
        f"done steps={summary['steps']} loss_first={summary['loss_first']:.4f} "
        f"loss_last={summary['loss_last']:.4f} tok/s={summary['tokens_per_s']:.0f} "
        f"acceptance={tau_before:.3f}->{tau_after:.3f}",
        flush=True,
    )
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    return 0


def cmd_decode(args: argparse.Namespace) -> int:
    """Speculative decoding alone: acceptance length, and equality with target greedy."""
    cfg = config_from_args(args)
    device = "cuda:0" if args.device == "cuda" else args.device
    targets = load_targets(cfg, [device], cfg.seed)
    drafter = build_drafters(cfg, targets, [device], cfg.seed + 1)[0]
    if args.load:
        step = load_checkpoint(args.load, drafter)
        print(f"Loaded drafter from {args.load} (step {step})", flush=True)
    prompts = eval_prompts(cfg, cfg.seed)
    tau, same = evaluate(targets[0], drafter, prompts, cfg, check_greedy=True)
    print(f"acceptance_length {tau:.3f} greedy_match={same}", flush=True)
    speed = measure_speedup(targets[0], drafter, prompts, cfg)
    if speed:
        print(
            f"speedup {speed['speedup']:.2f} (target greedy {speed['greedy_tok_s']:.0f} tok/s, "
            f"speculative {speed['speculative_tok_s']:.0f} tok/s, both with KV cache)",
            flush=True,
        )
    if args.summary:
        out = {"acceptance_length": tau, "greedy_match": same, "device": device, **speed}
        Path(args.summary).write_text(json.dumps(out, indent=2) + "\n")
    return 0 if same else 1


def cmd_save_target(args: argparse.Namespace) -> int:
    """Build the preset's target (pretrained on generated data) and save it to a folder."""
    cfg = config_from_args(args)
    save_target(build_target(cfg, cfg.seed), args.dir)
    print(f"Saved target to {args.dir}", flush=True)
    return 0


def parser() -> argparse.ArgumentParser:
    """The argument parser for all commands."""
    p = argparse.ArgumentParser(prog="python -m dflash_runtime", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--preset", default="tiny", choices=sorted(PRESETS))
    common.add_argument("--seed", type=int, default=0)
    common.add_argument("--device", default="cpu", help="cpu or cuda")
    common.add_argument("--target-path", help="local Qwen3 checkpoint folder, loaded with device_map")
    common.add_argument("--block-size", type=int)
    common.add_argument("--target-pretrain-steps", type=int)
    common.add_argument("--eval-prompts", type=int)
    common.add_argument("--eval-new-tokens", type=int)
    common.add_argument("--summary", help="write a JSON summary to this file")
    common.add_argument("--cpu-threads", type=int, help="torch intra-op threads")

    t = sub.add_parser("train", parents=[common], help="train a drafter")
    t.add_argument("--steps", type=int)
    t.add_argument("--lr", type=float)
    t.add_argument("--batch-size", type=int)
    t.add_argument("--num-anchors", type=int)
    t.add_argument("--pad-multiple", type=int, help="pad batches to a multiple of this (one shape each)")
    t.add_argument("--attention", choices=["flex", "sdpa"], default="sdpa")
    t.add_argument("--targets", type=int, default=1, help="target models (threads)")
    t.add_argument("--drafters", type=int, default=1, help="drafter workers (threads)")
    t.add_argument(
        "--warmup-compile",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="compile flex_attention for every batch shape before the worker threads start",
    )
    t.add_argument("--num-workers", type=int, default=0, help="DataLoader worker processes")
    t.add_argument("--save", help="checkpoint folder")
    t.add_argument("--save-every", type=int, default=0)
    t.add_argument("--resume", help="checkpoint folder to continue from (weights, optimiser, step)")
    t.add_argument("--stall-rank", type=int, default=-1, help="this rank sleeps before a step")
    t.add_argument("--stall-step", type=int, default=2)
    t.add_argument("--stall-seconds", type=float, default=0.0)
    t.add_argument("--dist-timeout", type=float, default=60.0, help="process group timeout (s)")
    t.add_argument("--detect-anomaly", action="store_true", help="torch.autograd anomaly mode")
    t.set_defaults(func=cmd_train)

    d = sub.add_parser("decode", parents=[common], help="speculative decoding evaluation")
    d.add_argument("--load", help="drafter checkpoint folder (else an untrained drafter)")
    d.set_defaults(func=cmd_decode)

    s = sub.add_parser("save-target", parents=[common], help="save the preset's target model")
    s.add_argument("dir")
    s.set_defaults(func=cmd_save_target)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    args = parser().parse_args(argv)
    if args.cpu_threads:
        torch.set_num_threads(args.cpu_threads)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
