"""Scan speed and memory: `triage logs` against `grep -E -f` over the same patterns,
side by side in one run, over log shapes that stress the fast path differently.

    python bench/scan.py --mib 512                    # every shape (generated, cached in /tmp)
    python bench/scan.py --mib 512 --shape ranks-logging --shape folder
    python bench/scan.py --mib 1024 --tail            # also time the quick tail-only verdict
    python bench/scan.py --mib 8 --shape steps --shape ranks-logging --full
                                                      # also the per-line path (--full)

Shapes (each a healthy body with a CUDA OOM cascade at the end: rank 3 OOM, NCCL
watchdog timeouts, ChildFailedError, so every run must find cuda-oom):

    steps          step lines, tqdm redraws, NCCL INFO (the original bench log)
    ranks-logging  `[rankN]:` on every line; python-logging step lines (INFO:pkg.train:...),
                   tqdm bars redrawn with \r on one line, NCCL INFO Channel lines, glog
                   heartbeats, checkpoint and use_cache notices (a common `:INFO` shape)
    warning        a benign warning (a rule's literal, never its finding) every 20 lines
    timestamped    every line timestamped, DeepSpeed / python-logging style
    long-line      a 64 MiB line (a tqdm bar that never ends its line) in the body
    folder         500 rank files in one folder (the cascade at the end of rank 3's)

Peak RSS is read per child with os.wait4, so each number is that process's own.
Each triage run's top diagnosis is printed: it must be cuda-oom, as the full read says.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CASCADE = ROOT / "fixtures" / "cuda-oom" / "001-rank3-cascade-8ranks" / "input.log"


def _fill(f: Any, body: bytes, target: int) -> None:
    written = 0
    while written < target:
        f.write(body)
        written += len(body)


def _steps_body() -> bytes:
    block = []
    for step in range(1, 2001):
        r = step % 8
        block.append(
            f"[default{r}]:step {step} loss {2.0 / (1 + step * 1e-4):.4f} acc 0.61 "
            f"tok/s 21512 lr 3.0e-4 grad_norm 0.91\n"
        )
        bar = "".join(
            f"[default{r}]:Epoch 1: {p:3d}%|{'#' * (p // 10):10s}| {p}/100 "
            f"[00:{p % 60:02d}<00:10,  4.51it/s]\r"
            for p in (step % 100, (step + 1) % 100)
        )
        block.append(bar + "\n")
        block.append(f"node17:{1000 + r}:{2000 + r} [{r}] NCCL INFO Channel 00/02 :    0   1   2   3\n")
    return "".join(block).encode()


def _ranks_logging_body() -> bytes:
    """55% python-logging step lines, 20% tqdm redraws, 15% NCCL INFO, 7% glog, the rest
    checkpoint and use_cache notices; `[rankN]:` on every line."""
    rng = random.Random(16)
    out = []
    for i in range(4000):
        r = i % 8
        x = rng.random()
        step = 100 + i
        if x < 0.55:
            line = (
                f"INFO:pkg.train:step {step} loss {2.41 - i * 1e-4:.2f} acc 0.31 grad_norm "
                f"{1.07 + rng.random() / 10:.2f} lr 6.00e-04 tok/s {21000 + rng.randrange(1000)}"
            )
        elif x < 0.75:
            line = "".join(
                f"{p:3d}%|{'#' * (p // 10):10s}| {p * 10}/1000 [00:{p % 60:02d}<01:40, 9.8it/s]\r"
                for p in (i % 97, i % 97 + 1, i % 97 + 2)
            )
        elif x < 0.90:
            line = (
                f"node17:{1000 + r}:{2000 + r} [{r}] NCCL INFO Channel {i % 32:02d}/32 : "
                f"{r} {(r + 1) % 8} {(r + 2) % 8} via P2P/CUMEM/read"
            )
        elif x < 0.97:
            line = f"W1129 12:13:{i % 60:02d}.{i:06d} {24000 + r} pkg/logger.py:93] heartbeat ok"
        elif x < 0.985:
            line = f"INFO:pkg.ckpt:Saving checkpoint to /ckpt/step_{step}/model.safetensors"
        else:
            line = "`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`."
        out.append(f"[rank{r}]:{line}\n")
    return "".join(out).encode()


def _warning_body() -> bytes:
    out = []
    for i in range(2000):
        if i % 20 == 0:
            out.append(
                "/venv/lib/python3.11/site-packages/torch/utils/checkpoint.py:91: UserWarning: "
                "None of the inputs have requires_grad=True. Gradients will be None\n"
            )
        else:
            out.append(f"step {i} loss {2.0 - i * 1e-4:.4f} acc 0.61 tok/s 21512 lr 3.0e-4\n")
    return "".join(out).encode()


def _timestamped_body() -> bytes:
    out = []
    for i in range(3000):
        ms = f"2026-11-29 12:{i // 60 % 60:02d}:{i % 60:02d},{i % 1000:03d}"
        if i % 3 == 0:
            out.append(
                f"[{ms}] [INFO] [logging.py:128:log_dist] [Rank 0] step={i}, skipped=0, "
                f"lr=[0.0003], mom=[(0.9, 0.95)]\n"
            )
        elif i % 3 == 1:
            out.append(
                f"{ms} - INFO - __main__ - step {i} loss {2.0 - i * 1e-4:.4f} grad_norm 0.93 tok/s 21400\n"
            )
        else:
            out.append(
                f"[{ms}] [INFO] [timer.py:260:stop] epoch=0/micro_step={i}/global_step={i}, "
                "RunningAvgSamplesPerSec=96.1, CurrSamplesPerSec=95.8, MemAllocated=21.3GB\n"
            )
    return "".join(out).encode()


def generate(path: Path, mib: int, shape: str) -> None:
    """Write the `shape` log (a folder for `folder`) of about `mib` MiB."""
    target = mib << 20
    cascade = CASCADE.read_bytes()
    if shape == "folder":
        path.mkdir(parents=True)
        body = _ranks_logging_body()
        for r in range(500):
            with open(path / f"rank{r}.log", "wb") as f:
                _fill(f, body, target // 500)
                if r == 3:
                    f.write(cascade)
        return
    body = {
        "steps": _steps_body,
        "ranks-logging": _ranks_logging_body,
        "warning": _warning_body,
        "timestamped": _timestamped_body,
        "long-line": _steps_body,
    }[shape]()
    with open(path, "wb") as f:
        if shape == "long-line":
            _fill(f, body, target // 2)
            bar = b"".join(
                f"{p % 100:3d}%|{'#' * (p % 100 // 10):10s}| {p}/99999 [00:10<00:10, 4.5it/s]\r".encode()
                for p in range(1000)
            )
            _fill(f, bar, 64 << 20)
            f.write(b"\n")
            _fill(f, body, target // 2 - (64 << 20))
        else:
            _fill(f, body, target)
        f.write(cascade)


def timed(cmd: list[str]) -> tuple[float, float, int, int, bytes]:
    """Wall seconds, CPU seconds (user + system: steadier than wall on a shared machine),
    peak RSS (MiB), exit code and stdout of one command."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        cpu = usage.ru_utime + usage.ru_stime
        return wall, cpu, usage.ru_maxrss // 1024, proc.returncode, out.read()


SHAPES = ("steps", "ranks-logging", "warning", "timestamped", "long-line", "folder")


def top(rc_out: bytes) -> str:
    """The top diagnosis of a JSON report, or what went wrong."""
    try:
        diags = json.loads(rc_out)["diagnoses"]
    except (ValueError, KeyError):
        return "no report"
    return f"{diags[0]['signature']} {diags[0]['confidence']}" if diags else "none"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--shape", action="append", choices=SHAPES, help="default: every shape")
    ap.add_argument("--log", type=Path, help="use this log instead of generating one")
    ap.add_argument("--tail", action="store_true", help="also time the tail-only verdict")
    ap.add_argument(
        "--full", action="store_true", help="also time the per-line path (`triage logs --full`, no history)"
    )
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    triage = [sys.executable, "-m", "triage"]
    pats = Path(tempfile.gettempdir()) / "triage-patterns.txt"
    pats.write_text(
        subprocess.run(
            [*triage, "rules", "export", "--grep"], capture_output=True, text=True, check=True
        ).stdout
    )
    logs = (
        [("log", args.log)]
        if args.log
        else [
            (sh, Path(tempfile.gettempdir()) / f"triage-bench-{sh}-{args.mib}mib.log")
            for sh in (args.shape or SHAPES)
        ]
    )
    print(f"patterns: {sum(1 for _ in pats.open())}; best of {args.repeat}")
    print(
        f"{'shape':14s} {'MiB':>5s} {'command':20s} {'wall s':>7s} {'cpu s':>6s} {'MB/s':>6s} "
        f"{'peak RSS MiB':>12s} {'x grep':>6s} {'cpu x':>6s} rc  top diagnosis"
    )
    for shape, log in logs:
        if not log.exists():
            print(f"generating {log} ...", file=sys.stderr)
            generate(log, args.mib, shape)
        files = sorted(log.iterdir()) if log.is_dir() else [log]
        size = sum(p.stat().st_size for p in files) / (1 << 20)
        subprocess.run(["cat", *map(str, files)], stdout=subprocess.DEVNULL, check=True)  # page cache
        cmds = {
            "grep -E -f": ["grep", "-E", "-c", "-r", "-f", str(pats), str(log)],
            "triage logs": [*triage, "logs", str(log), "--format", "json"],
        }
        if args.tail:
            cmds["triage logs --quick"] = [*triage, "logs", str(log), "--quick", "--format", "json"]
        if args.full:
            cmds["triage logs --full"] = [
                *triage,
                "logs",
                str(log),
                "--full",
                "--no-history",
                "--format",
                "json",
            ]
        rows = []
        for name, cmd in cmds.items():
            best = min((timed(cmd) for _ in range(args.repeat)), key=lambda x: x[0])
            rows.append((name, *best))
        grep_wall, grep_cpu = rows[0][1], rows[0][2]
        for name, wall, cpu, rss, rc, out in rows:
            verdict = top(out) if name.startswith("triage") else ""
            print(
                f"{shape:14s} {size:5.0f} {name:20s} {wall:7.2f} {cpu:6.2f} {size / wall:6.0f} "
                f"{rss:12d} {wall / grep_wall:6.2f} {cpu / max(grep_cpu, 1e-3):6.2f} {rc:2d}  "
                f"{verdict}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
