"""Scan speed and memory: `triage logs` against `grep -E -f` over the same patterns.

    python bench/scan.py --mib 512            # generate (cached in /tmp) and time both
    python bench/scan.py --mib 1024 --tail    # also time the quick tail-only verdict

The log is a healthy multi-rank body (step lines, tqdm redraws, NCCL INFO) with a
CUDA OOM cascade at the end (rank 3 OOM, NCCL watchdog timeouts, ChildFailedError).
Peak RSS is read per child with os.wait4, so each number is that process's own.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASCADE = ROOT / "fixtures" / "cuda-oom" / "001-rank3-cascade-8ranks" / "input.log"


def generate(path: Path, mib: int) -> None:
    target = mib << 20
    block = []
    for step in range(1, 2001):
        r = step % 8
        block.append(f"[default{r}]:step {step} loss {2.0 / (1 + step * 1e-4):.4f} acc 0.61 "
                      f"tok/s 21512 lr 3.0e-4 grad_norm 0.91\n")
        bar = "".join(f"[default{r}]:Epoch 1: {p:3d}%|{'#' * (p // 10):10s}| {p}/100 "
                      f"[00:{p % 60:02d}<00:10,  4.51it/s]\r" for p in (step % 100, (step + 1) % 100))
        block.append(bar + "\n")
        block.append(f"node17:{1000 + r}:{2000 + r} [{r}] NCCL INFO Channel 00/02 :    0   1   2   3\n")
    body = "".join(block).encode()
    with open(path, "wb") as f:
        written = 0
        while written < target:
            f.write(body)
            written += len(body)
        f.write(CASCADE.read_bytes())


def timed(cmd: list[str]) -> tuple[float, int, int]:
    """Wall seconds, peak RSS (MiB) and exit code of one command."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss // 1024, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--log", type=Path, help="use this log instead of generating one")
    ap.add_argument("--tail", action="store_true", help="also time the tail-only verdict")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    log = args.log or Path(tempfile.gettempdir()) / f"triage-bench-{args.mib}mib.log"
    if not log.exists():
        print(f"generating {log} ...", file=sys.stderr)
        generate(log, args.mib)
    size = log.stat().st_size / (1 << 20)
    triage = [sys.executable, "-m", "triage"]
    pats = Path(tempfile.gettempdir()) / "triage-patterns.txt"
    pats.write_text(subprocess.run([*triage, "rules", "export", "--grep"], capture_output=True,
                                   text=True, check=True).stdout)
    subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)  # warm page cache
    rows = []
    cmds = {"grep -E -f": ["grep", "-E", "-c", "-f", str(pats), str(log)],
            "triage logs": [*triage, "logs", str(log), "--format", "json"]}
    if args.tail:
        cmds["triage logs --quick"] = [*triage, "logs", str(log), "--quick", "--format", "json"]
    for name, cmd in cmds.items():
        best = min((timed(cmd) for _ in range(args.repeat)), key=lambda x: x[0])
        rows.append((name, *best))
    grep_wall = rows[0][1]
    print(f"log: {log} ({size:.0f} MiB), patterns: {sum(1 for _ in pats.open())}")
    print(f"{'command':22s} {'wall s':>8s} {'MB/s':>8s} {'peak RSS MiB':>13s} {'x grep':>7s} rc")
    for name, wall, rss, rc in rows:
        print(f"{name:22s} {wall:8.2f} {size / wall:8.0f} {rss:13d} {wall / grep_wall:7.2f} {rc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
