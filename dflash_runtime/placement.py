"""Where things run: T target models and D drafter workers as threads in one process,
fed by a queue of target hidden states, and torchrun processes (gloo on CPU, NCCL on GPU).

Each drafter worker trains a replica; a barrier averages gradients across replicas each
step (data parallel in threads). Under torchrun each process has one target and one
drafter wrapped in DistributedDataParallel.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import cast

import torch
import torch.distributed as dist
from torch import nn
from transformers import Qwen3ForCausalLM

from dflash_runtime.checkpoint import Resume, TrainState
from dflash_runtime.config import Config
from dflash_runtime.data import bucket_widths, resize_batch
from dflash_runtime.drafter import Attention, Drafter
from dflash_runtime.target import target_features
from dflash_runtime.train import forward_loss, make_optimizer

Batch = dict[str, torch.Tensor]


@dataclass
class Placement:
    """How a run is laid out and the fault-scenario knobs that shape it."""

    attention: Attention = "sdpa"
    device: str = "cpu"
    targets: int = 1
    drafters: int = 1
    warmup_compile: bool = True
    save: str | None = None
    save_every: int = 0
    stall_rank: int = -1
    stall_step: int = 2
    stall_seconds: float = 0.0
    dist_timeout: float = 60.0
    detect_anomaly: bool = False


@dataclass
class History:
    """Per-step metrics recorded by drafter worker 0."""

    losses: list[float] = field(default_factory=list)
    accs: list[float] = field(default_factory=list)
    step_end: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    state: TrainState | None = None  # worker 0's, after its last step

    def tokens_per_s(self) -> float:
        """Throughput after the first step (which includes compilation)."""
        if len(self.step_end) < 2:
            return 0.0
        return sum(self.tokens[1:]) / max(1e-9, self.step_end[-1] - self.step_end[0])


def rank() -> int:
    """This process's rank (0 without torchrun)."""
    return dist.get_rank() if dist.is_initialized() else 0


def init_distributed(device: str, timeout_s: float) -> str:
    """Join the torchrun group if WORLD_SIZE is set. Returns this process's device."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 and "RANK" not in os.environ:
        return device if device != "cuda" else "cuda:0"
    backend = "nccl" if device.startswith("cuda") else "gloo"
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if backend == "nccl":
        torch.cuda.set_device(local)
    dist.init_process_group(backend, timeout=timedelta(seconds=timeout_s))
    print(f"Rank {dist.get_rank()}/{dist.get_world_size()} joined {backend}...", flush=True)
    return f"cuda:{local}" if backend == "nccl" else "cpu"


def devices(place: Placement, base: str) -> tuple[list[str], list[str]]:
    """Devices of the targets and of the drafters: targets first, drafters on the next GPUs.

    On CPU everything is "cpu". Under torchrun each process uses its own device only.
    """
    if not base.startswith("cuda") or dist.is_initialized():
        return [base] * place.targets, [base] * place.drafters
    n = max(1, torch.cuda.device_count())
    targets = [f"cuda:{i % n}" for i in range(place.targets)]
    drafters = [f"cuda:{(place.targets + j) % n}" for j in range(place.drafters)]
    return targets, drafters


def autocast(device: str) -> contextlib.AbstractContextManager[object]:
    """bf16 autocast on GPU; nothing on CPU (fp32)."""
    if device.startswith("cuda"):
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def average_grads(replicas: list[nn.Module]) -> None:
    """Set every replica's gradients to their mean (the all-reduce of thread data parallel)."""
    params = [[p for p in r.parameters() if p.requires_grad] for r in replicas]
    for group in zip(*params, strict=True):
        grads = [p.grad for p in group if p.grad is not None]
        if not grads:
            continue
        mean = torch.stack([g.to(grads[0].device) for g in grads]).mean(0)
        for p in group:
            p.grad = mean.to(p.device, copy=True)  # own copy: clipping scales it in place


def warmup_compile(
    drafters: list[Drafter], batch: Batch, feats: torch.Tensor, cfg: Config, place: Placement
) -> None:
    """Compile flex_attention (forward and backward) once per drafter device, before threads."""
    print("Compiling flex_attention...", flush=True)
    t0 = time.perf_counter()
    seen: set[str] = set()
    for d in drafters:
        dev = str(next(d.parameters()).device)
        if dev in seen:
            continue
        seen.add(dev)
        g = torch.Generator().manual_seed(0)
        moved = {k: v.to(dev) for k, v in batch.items()}
        with autocast(dev):
            res = forward_loss(d, feats.to(dev), moved, cfg, g, "flex")
        res.loss.backward()
        d.zero_grad(set_to_none=True)
    print(f"Compiled flex_attention in {time.perf_counter() - t0:.1f}s", flush=True)


def warmup_every_shape(
    drafters: list[Drafter], target: Qwen3ForCausalLM, batch: Batch, cfg: Config, place: Placement
) -> None:
    """Compile flex_attention for every batch width the bucketing produces, on this thread.

    torch.compile(dynamic=False) compiles once per shape: a width first met inside a
    drafter thread compiles there, while the other drafters call the compiled function
    (the FX-tracing race of releases without the compile-session flag).
    """
    widths = bucket_widths(cfg)
    print(f"Warming up {len(widths)} batch shapes (widths {widths})...", flush=True)
    dev = str(target.device)
    for width in widths:
        shaped = resize_batch(batch, width, cfg)
        feats, _ = target_features(target, shaped["input_ids"].to(dev), cfg.target_layer_ids)
        warmup_compile(drafters, shaped, feats, cfg, place)


class Stop(Exception):
    """Raised inside a worker when another worker failed."""


def _put(
    q: queue.Queue[tuple[Batch, torch.Tensor]],
    item: tuple[Batch, torch.Tensor],
    stop: threading.Event,
) -> None:
    while True:
        if stop.is_set():
            raise Stop
        with contextlib.suppress(queue.Full):
            q.put(item, timeout=0.1)
            return


def _get(q: queue.Queue[tuple[Batch, torch.Tensor]], stop: threading.Event) -> tuple[Batch, torch.Tensor]:
    while True:
        if stop.is_set():
            raise Stop
        with contextlib.suppress(queue.Empty):
            return q.get(timeout=0.1)


def train_threads(
    cfg: Config,
    place: Placement,
    targets: list[Qwen3ForCausalLM],
    drafters: list[Drafter],
    batches: Iterator[Batch],
    on_step: Callable[[int, Drafter, TrainState], None],
    resume: Resume | None = None,
) -> History:
    """Train: T target threads fill a queue with (batch, features); D drafter threads train.

    Every drafter worker runs the steps after `resume.step` (0) up to `cfg.steps`; worker
    0 logs and calls `on_step`. With `resume`, the optimisers start from its state and
    worker 0's anchor generator from its generator state (replicas stay in lockstep, so
    one optimiser state serves them all); `batches` must already be past the batches
    the first `resume.step` steps used. A failure in any thread stops the others and is
    re-raised here.
    """
    n_t, n_d = len(targets), len(drafters)
    start = resume.step if resume is not None else 0
    q: queue.Queue[tuple[Batch, torch.Tensor]] = queue.Queue(maxsize=2 * n_d)
    stop, lock = threading.Event(), threading.Lock()
    errors: list[BaseException] = []
    produced = itertools.count()
    barrier = threading.Barrier(n_d, action=lambda: average_grads(list(drafters)))
    hist = History()
    t_start = time.perf_counter()
    scale = dist.get_world_size() if dist.is_initialized() else 1

    def fail(e: BaseException) -> None:
        errors.append(e)
        stop.set()
        barrier.abort()

    def target_worker(i: int) -> None:
        try:
            dev = str(targets[i].device)
            while True:
                with lock:
                    if next(produced) >= (cfg.steps - start) * n_d:
                        return
                    batch = next(batches)
                feats, _ = target_features(targets[i], batch["input_ids"].to(dev), cfg.target_layer_ids)
                _put(q, (batch, feats), stop)
        except Stop:
            pass
        except BaseException as e:  # re-raised by the main thread, with this traceback
            fail(e)

    def drafter_worker(j: int) -> None:
        try:
            drafter = drafters[j]
            dev = str(next(drafter.parameters()).device)
            model: nn.Module = drafter
            if dist.is_initialized():
                ids = [torch.device(dev).index] if dev.startswith("cuda") else None
                model = nn.parallel.DistributedDataParallel(drafter, device_ids=ids)
            opt, sched = make_optimizer(drafter, cfg)
            g = torch.Generator().manual_seed(cfg.seed * 1000 + 17 * rank() + j + 7919 * start)
            if resume is not None:
                if resume.optimizer is not None:
                    opt.load_state_dict(resume.optimizer)
                with warnings.catch_warnings():
                    # LambdaLR's lr is a function of the step alone: replaying the steps
                    # sets it; torch warns only because no optimizer.step() came first.
                    warnings.filterwarnings("ignore", message=r"Detected call of `lr_sch")
                    for _ in range(start):
                        sched.step()
                if resume.generator is not None and j == 0:
                    g.set_state(resume.generator)
            state = TrainState(step=start, optimizer=opt, generator=g)
            if place.attention == "flex" and not place.warmup_compile:
                print(f"Compiling flex_attention... (drafter {j}, in its thread)", flush=True)
            for step in range(start + 1, cfg.steps + 1):
                batch, feats = _get(q, stop)
                batch = {k: v.to(dev) for k, v in batch.items()}
                if place.stall_seconds > 0 and rank() == place.stall_rank and step == place.stall_step:
                    print(
                        f"Rank {rank()} stalling {place.stall_seconds:g}s at step {step}...",
                        flush=True,
                    )
                    time.sleep(place.stall_seconds)
                with autocast(dev), torch.autograd.set_detect_anomaly(place.detect_anomaly):
                    res = forward_loss(model, feats.to(dev), batch, cfg, g, place.attention)
                    opt.zero_grad(set_to_none=True)
                    res.loss.backward()
                if n_d > 1:
                    barrier.wait()  # the last thread to arrive averages all replicas' grads
                gnorm = torch.nn.utils.clip_grad_norm_(drafter.parameters(), cfg.grad_clip)
                opt.step()
                sched.step()
                state.step = step
                if j == 0:
                    hist.state = state
                    log_step(
                        hist,
                        step,
                        res.loss.item(),
                        res.acc,
                        res.tokens * n_d * scale,
                        cast(float, sched.get_last_lr()[0]),  # a float: LambdaLR over floats
                        float(gnorm),
                        t_start,
                    )
                    on_step(step, drafter, state)
        except Stop:
            pass
        except BaseException as e:  # re-raised by the main thread, with this traceback
            fail(e)

    threads = [threading.Thread(target=target_worker, args=(i,), name=f"target-{i}") for i in range(n_t)]
    threads += [threading.Thread(target=drafter_worker, args=(j,), name=f"drafter-{j}") for j in range(n_d)]
    print(f"Starting {n_t} target threads and {n_d} drafter threads...", flush=True)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return hist


def log_step(
    hist: History,
    step: int,
    loss: float,
    acc: float,
    tokens: int,
    lr: float,
    gnorm: float,
    t_start: float,
) -> None:
    """Record a step and print its line: `step 12 loss 3.1234 acc 0.412 tok/s 5123 ...`."""
    now = time.perf_counter()
    prev = hist.step_end[-1] if hist.step_end else t_start
    hist.losses.append(loss)
    hist.accs.append(acc)
    hist.step_end.append(now)
    hist.tokens.append(tokens)
    if rank() == 0:
        print(
            f"step {step} loss {loss:.4f} acc {acc:.3f} tok/s {tokens / max(1e-9, now - prev):.0f} "
            f"lr {lr:.2e} grad_norm {gnorm:.3f}",
            flush=True,
        )
