"""A noise corpus: healthy training-log lines of many shapes, generated (seeded, so the
same lines every run), for `triage rules lint` to measure how often each literal and
each structure trigger hits where nothing is wrong.

Each shape is a small table of line templates filled with varying numbers, ranks and
times, in the layouts real tools print: python `logging`, DeepSpeed, Lightning,
Megatron-LM, the HF Trainer, glog, journald, tqdm redraws, NCCL INFO at scale, and
lines that all carry a timestamp. Lines are raw (prefixes, `\\r` redraws kept), as the
fast path's scan sees them.
"""

from __future__ import annotations

import random
from collections.abc import Callable

Shape = Callable[[random.Random, int], str]


def _python_logging(rng: random.Random, i: int) -> str:
    loss, gn = 2.6 - i * 1e-5 + rng.random() * 0.1, 0.8 + rng.random()
    return rng.choice(
        [
            f"INFO:pkg.train:step {i} loss {loss:.2f} acc 0.{rng.randrange(100):02d} grad_norm {gn:.2f} "
            f"lr 6.00e-04 tok/s {20000 + rng.randrange(3000)}",
            f"INFO:__main__:epoch 1 step {i}/120000 | loss={loss:.4f} | ppl={2.718**loss:.2f}",
            f"INFO:root:Evaluating at step {i}: eval_loss {loss + 0.1:.3f}, eval_accuracy 0.{rng.randrange(99)}",
            f"WARNING:pkg.data:skipping sample {rng.randrange(10**6)}: sequence length "
            f"{4096 + rng.randrange(900)} > 4096",
            f"INFO:pkg.ckpt:Saving checkpoint to /ckpt/run7/step_{i}/model.safetensors",
            f"INFO:pkg.ckpt:Saved checkpoint step_{i} in {rng.random() * 20:.1f}s",
            'DEBUG:urllib3.connectionpool:https://huggingface.co:443 "HEAD /api/models/Qwen/Qwen3-8B '
            'HTTP/1.1" 200 0',
            f"INFO:pkg.train:throughput {rng.random() * 400:.1f} TFLOP/s, mem {60 + rng.random() * 18:.1f} GiB, "
            f"max mem {70 + rng.random() * 8:.1f} GiB",
        ]
    )


def _deepspeed(rng: random.Random, i: int) -> str:
    ts = f"[2026-11-29 12:{i // 60 % 60:02d}:{i % 60:02d},{rng.randrange(1000):03d}]"
    return rng.choice(
        [
            f"{ts} [INFO] [logging.py:128:log_dist] [Rank 0] step={i}, skipped={rng.randrange(3)}, "
            f"lr=[0.0003], mom=[(0.9, 0.95)]",
            f"{ts} [INFO] [timer.py:260:stop] epoch=0/micro_step={i * 4}/global_step={i}, "
            f"RunningAvgSamplesPerSec={90 + rng.random() * 9:.2f}, "
            f"CurrSamplesPerSec={90 + rng.random() * 9:.2f}, "
            f"MemAllocated={20 + rng.random():.2f}GB, MaxMemAllocated={30 + rng.random():.2f}GB",
            f"{ts} [INFO] [fused_optimizer.py:362:_update_scale] Grad overflow on iteration {i}",
            f"{ts} [INFO] [fused_optimizer.py:363:_update_scale] Reducing dynamic loss scale from "
            f"{2 ** rng.randrange(10, 17)} to {2 ** rng.randrange(9, 16)}",
            f"{ts} [INFO] [engine.py:3563:_save_zero_checkpoint] zero checkpoint saved "
            f"/ckpt/global_step{i}/zero_pp_rank_0_mp_rank_00_optim_states.pt",
            f"{ts} [INFO] [torch_checkpoint_engine.py:33:commit] [Torch] Checkpoint global_step{i} is ready now!",
            f"{ts} [INFO] [config.py:1000:print]   zero_optimization ............ stage={rng.randrange(4)}",
            f"{ts} [WARNING] [stage3.py:2139:step] 1 pytorch allocator cache flushes since last step.",
        ]
    )


def _lightning(rng: random.Random, i: int) -> str:
    p = i % 101
    return rng.choice(
        [
            f"Epoch {i // 1000}: {p:3d}%|{'█' * (p // 10):10s}| {p * 12}/1212 [02:{p % 60:02d}<01:40, "
            f"{rng.random() * 9:.2f}it/s, v_num=3, train_loss={2 + rng.random():.3f}]",
            f"LOCAL_RANK: {i % 8} - CUDA_VISIBLE_DEVICES: [0,1,2,3,4,5,6,7]",
            "GPU available: True (cuda), used: True",
            "TPU available: False, using: 0 TPU cores",
            f"Epoch {i // 1000}, global step {i}: 'val_loss' reached {2 + rng.random():.5f} "
            f"(best {2 + rng.random():.5f}), saving model to '/ckpt/epoch={i // 1000}-step={i}.ckpt' as top 3",
            "  | Name  | Type             | Params | Mode ",
            f"{rng.randrange(1, 900)} M    Trainable params",
            "`Trainer.fit` stopped: `max_epochs=3` reached.",
        ]
    )


def _megatron(rng: random.Random, i: int) -> str:
    return rng.choice(
        [
            f" [2026-11-29 12:13:{i % 60:02d}] iteration {i:8d}/  500000 | consumed samples: {i * 1024:12d} | "
            f"elapsed time per iteration (ms): {800 + rng.random() * 40:.1f} | learning rate: 3.000E-04 | "
            f"global batch size:  1024 | lm loss: {2 + rng.random():.6E} | loss scale: 1.0 | "
            f"grad norm: {0.9 + rng.random():.3f} | number of skipped iterations:   0 | "
            f"number of nan iterations:   0 |",
            rng.choice(
                [
                    "(min, max) time across ranks (ms):",
                    f"    forward-backward ...............................: "
                    f"({700 + rng.random() * 9:.2f}, {710 + rng.random() * 9:.2f})",
                ]
            ),
            f"saving checkpoint at iteration {i:8d} to /ckpt/megatron",
            f"  successfully saved checkpoint from iteration {i:8d} to /ckpt/megatron [ t 1/8, p 1/1 ]",
            f"[Rank {i % 64}] (after {i} iterations) memory (MB) | allocated: {20000 + rng.randrange(900)} | "
            f"max allocated: {30000 + rng.randrange(900)} | reserved: 42000 | max reserved: 42000",
            "> building train, validation, and test datasets for GPT ...",
        ]
    )


def _hf_trainer(rng: random.Random, i: int) -> str:
    return rng.choice(
        [
            f"{{'loss': {2 + rng.random():.4f}, 'grad_norm': {0.5 + rng.random():.6f}, "
            f"'learning_rate': {rng.random() * 5:.4f}e-05, 'epoch': {i / 10000:.2f}}}",
            f"{{'eval_loss': {2 + rng.random():.4f}, 'eval_runtime': {rng.random() * 90:.4f}, "
            f"'eval_samples_per_second': {rng.random() * 300:.3f}, 'eval_steps_per_second': "
            f"{rng.random() * 9:.3f}, 'epoch': {i / 10000:.2f}}}",
            f"{{'train_runtime': {rng.random() * 9000:.4f}, 'train_samples_per_second': {rng.random() * 90:.3f}, "
            f"'train_steps_per_second': {rng.random():.3f}, 'train_loss': {2 + rng.random():.4f}, 'epoch': 3.0}}",
            f"Saving model checkpoint to ./out/checkpoint-{i}",
            f"Configuration saved in ./out/checkpoint-{i}/config.json",
            f"Model weights saved in ./out/checkpoint-{i}/model.safetensors",
            "`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`.",
            rng.choice(["***** Running Evaluation *****", f"  Num examples = {rng.randrange(9000)}"]),
            f"Loading checkpoint shards: {i % 101:3d}%|{'█' * (i % 101 // 10):10s}| {i % 5}/4 "
            f"[00:0{i % 9}<00:00,  1.2{i % 9}it/s]",
        ]
    )


def _glog(rng: random.Random, i: int) -> str:
    lvl = rng.choice("IIIIW")
    t = f"{lvl}1129 12:{i // 60 % 60:02d}:{i % 60:02d}.{rng.randrange(10**6):06d} {24000 + i % 8:6d}"
    return rng.choice(
        [
            f"{t} pkg/logger.py:93] heartbeat ok",
            f"{t} torch/distributed/run.py:792] Setting OMP_NUM_THREADS environment variable for each "
            f"process to be 1 in default",
            f"{t} torch/distributed/elastic/agent/server/api.py:{rng.randrange(900)}] [default] "
            "Starting worker group",
            f"{t} torch/_dynamo/convert_frame.py:{rng.randrange(999)}] [0/{i % 4}] torchdynamo start compiling "
            f"forward /work/model.py:{rng.randrange(400)}",
            f"{t} torch/_inductor/utils.py:{rng.randrange(999)}] [0/0] compiled graph in "
            f"{rng.random() * 30:.2f}s",
            f"{t} torch/distributed/elastic/multiprocessing/redirects.py:29] NOTE: Redirects are currently "
            f"not supported in Windows or MacOs.",
        ]
    )


def _journald(rng: random.Random, i: int) -> str:
    t = f"Nov 29 12:{i // 60 % 60:02d}:{i % 60:02d} gpu-node-{i % 32:02d}"
    return rng.choice(
        [
            f"{t} python[{20000 + i % 97}]: step {i} loss {2 + rng.random():.3f}",
            f"{t} systemd[1]: Started Session {rng.randrange(9999)} of User train.",
            f"{t} kernel: [{rng.random() * 10**6:12.6f}] NVRM: loading NVIDIA UNIX x86_64 Kernel "
            "Module  550.54.15",
            f"{t} nvidia-persistenced[{rng.randrange(9999)}]: device 0000:{rng.randrange(256):02x}:00.0 - "
            f"persistence mode enabled.",
            f"{t} CRON[{rng.randrange(99999)}]: (root) CMD (run-parts /etc/cron.hourly)",
            f"{t} sshd[{rng.randrange(99999)}]: Accepted publickey for train from 10.0.{i % 256}.7 port "
            f"{rng.randrange(65535)} ssh2",
            f'{t} dockerd[1311]: time="2026-11-29T12:13:02.123456789Z" level=info msg="ignoring event" '
            f"container={rng.randrange(16**12):012x}",
        ]
    )


def _tqdm(rng: random.Random, i: int) -> str:
    start = i % 90
    frames = [
        f"{p:3d}%|{'#' * (p // 10):10s}| {p * 10}/1000 [00:{p % 60:02d}<01:40, {9 + rng.random():.2f}it/s]"
        for p in range(start, start + rng.randrange(1, 6))
    ]
    return rng.choice(["", "Training: ", "Epoch 1/3: ", "eval: "]) + "\r".join(frames)


def _nccl_info(rng: random.Random, i: int) -> str:
    r, n = i % 512, 512
    host = f"gpu-node-{r // 8:03d}:{30000 + r}:{31000 + r}"
    return rng.choice(
        [
            f"{host} [{r % 8}] NCCL INFO Channel {i % 32:02d}/32 : {r} {(r + 1) % n} {(r + 2) % n} "
            f"via P2P/CUMEM/read",
            f"{host} [{r % 8}] NCCL INFO Channel {i % 16:02d}/0 : {r}[{r % 8}] -> {(r + 8) % n}[{r % 8}] "
            f"[send] via NET/IB/{r % 8}/GDRDMA",
            f"{host} [{r % 8}] NCCL INFO Connected all rings",
            f"{host} [{r % 8}] NCCL INFO Connected all trees",
            f"{host} [{r % 8}] NCCL INFO comm 0x{rng.randrange(16**12):012x} rank {r} nranks {n} cudaDev "
            f"{r % 8} nvmlDev {r % 8} busId {rng.randrange(256):x}000 commId 0x{rng.randrange(16**16):016x} - "
            f"Init COMPLETE",
            f"{host} [{r % 8}] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; "
            f"OOB ib0:10.1.{r % 256}.2<0>",
            f"{host} [{r % 8}] NCCL INFO Using network IB",
            f"{host} [{r % 8}] NCCL INFO threadThresholds 8/8/64 | 4096/8/64 | 512 | 512",
            f"{host} [{r % 8}] NCCL INFO {r % 32} coll channels, {r % 32} collnet channels, 0 nvls channels, "
            f"32 p2p channels, 32 p2p channels per peer",
            f"{host} [{r % 8}] NCCL INFO ncclCommInitRank comm 0x{rng.randrange(16**12):012x} rank {r} nranks "
            f"{n} cudaDev {r % 8} busId {rng.randrange(256):x}000 - Init COMPLETE",
        ]
    )


def _timestamped(rng: random.Random, i: int) -> str:
    ts = f"2026-11-29 12:{i // 60 % 60:02d}:{i % 60:02d},{rng.randrange(1000):03d}"
    iso = f"2026-11-29T12:{i // 60 % 60:02d}:{i % 60:02d}.{rng.randrange(10**6):06d}Z"
    return rng.choice(
        [
            f"{ts} - INFO - __main__ - step {i} loss {2 + rng.random():.4f} grad_norm 0.93 tok/s 21400",
            f"{ts} - INFO - trainer - ***** Running training *****",
            f"[{ts}][train][INFO] - epoch 0 step {i} lr 3.0e-04 loss {2 + rng.random():.3f}",
            f"{iso} INFO worker {i % 8}: batch {i} done in {rng.random():.3f}s",
            f"{iso} stdout F [rank{i % 8}]: step {i} loss {2 + rng.random():.4f}",
            f"{ts} | INFO | data | loaded shard {i % 1024:05d}-of-01024 ({rng.randrange(10**6)} samples)",
            f"[{ts}] {{train.py:{rng.randrange(400)}}} INFO - tokens seen: {i * 4_194_304}",
        ]
    )


SHAPES: dict[str, Shape] = {
    "python-logging": _python_logging,
    "deepspeed": _deepspeed,
    "lightning": _lightning,
    "megatron": _megatron,
    "hf-trainer": _hf_trainer,
    "glog": _glog,
    "journald": _journald,
    "tqdm": _tqdm,
    "nccl-info": _nccl_info,
    "timestamped": _timestamped,
}
# Rank prefixes the launchers add to any of the shapes above.
PREFIXES = ("", "", "[rank{r}]:", "[default{r}]:", "{r}: ", "[1,{r}]<stdout>:")


def noise_lines(per_shape: int = 4000, seed: int = 16) -> list[str]:
    """`per_shape` healthy raw lines of each shape, interleaved, the same every call."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(per_shape):
        for fn in SHAPES.values():
            prefix = rng.choice(PREFIXES).format(r=i % 8)
            out.append(prefix + fn(rng, 1000 + i * 7))
    return out
