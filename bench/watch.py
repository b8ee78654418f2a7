"""Bench `triage watch`: CPU share at 1 MB/s of output, and diagnosis latency.

    .venv/bin/python bench/watch.py [--seconds 10] [--rate-mb 1] [--trials 5] [--no-tmux]

CPU: a headless watcher (`triage watch FILE --no-tui`) follows a file that this script
appends to at the given rate in 10 slices a second; the watcher's user+system CPU over
the window (from /proc) divided by the wall time is its share of one core. Two kinds
of output: plain step lines, and step lines that hold a rule literal on every line
(`grad_norm`, a literal of nan-loss), the worst case for the live prefilter.

Latency: while the output streams, the FX-tracing RuntimeError traceback is appended
at a known instant; latency is the time until the watcher's `diagnosis` event for
fx-tracing-flag-race is read from its stdout. In tmux mode the error is printed by a
process in a pane (pipe-pane -> capture file -> watcher); the process records the
instant right before its write.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

PY = sys.executable
TB = (b"Traceback (most recent call last):\n"
      b'  File "/app/drafter.py", line 88, in run\n'
      b"    out = self.attn(q, k, v, block_mask=mask)\n"
      b"RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized "
      b"function. This is not supported at the moment.\n")


def step_lines(start: int, n: int, grad_norm: bool) -> bytes:
    extra = b" grad_norm 0.93" if grad_norm else b""
    return b"".join(b"[rank0]: step %d loss 2.%04d acc 0.61 tok/s 21512 lr 3e-4%s\n"
                    % (i, i % 9999, extra) for i in range(start, start + n))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Watcher:
    """A headless watcher subprocess whose events are read in a thread, timestamped."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([PY, "-m", "triage", "watch", *args, "--no-tui",
                                      "--no-snapshot"], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.events: list[tuple[float, dict]] = []
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.events.append((time.time(), json.loads(line)))

    def wait_event(self, pred, timeout: float = 30.0) -> float | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for t, e in list(self.events):
                if pred(e):
                    return t
            time.sleep(0.005)
        return None

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def is_fx(e: dict) -> bool:
    return e.get("event") == "diagnosis" and e.get("signature") == "fx-tracing-flag-race"


def stream(path: Path, rate: float, seconds: float, grad_norm: bool,
           error_at: float | None = None) -> float | None:
    """Append `rate` bytes/s for `seconds`; return the wall time the error was written."""
    per_slice = int(rate / 10)
    line_len = len(step_lines(1, 1, grad_norm))
    n = max(1, per_slice // line_len)
    step = 1
    t0 = time.monotonic()
    err_t = None
    with path.open("ab") as w:
        k = 0
        while time.monotonic() - t0 < seconds:
            w.write(step_lines(step, n, grad_norm))
            w.flush()
            step += n
            if error_at is not None and err_t is None and time.monotonic() - t0 >= error_at:
                err_t = time.time()
                w.write(TB)
                w.flush()
            k += 1
            time.sleep(max(0.0, t0 + k * 0.1 - time.monotonic()))
    return err_t


def bench_cpu(seconds: float, rate: float, grad_norm: bool) -> dict:
    d = Path(tempfile.mkdtemp(prefix="bench-watch-"))
    log = d / "train.log"
    log.write_bytes(b"")
    w = Watcher(str(log))
    w.wait_event(lambda e: e.get("event") == "attached")
    time.sleep(1.0)  # imports and rule loading are not the steady state
    stream(log, rate, 1.0, grad_norm)  # warm up
    c0, t0 = cpu_seconds(w.proc.pid), time.monotonic()
    stream(log, rate, seconds, grad_norm)
    time.sleep(0.3)  # the last slice is read
    c1, t1 = cpu_seconds(w.proc.pid), time.monotonic()
    size = log.stat().st_size
    w.stop()
    shutil.rmtree(d, ignore_errors=True)
    return {"grad_norm_every_line": grad_norm, "rate_mb_s": rate / 1e6,
            "cpu_share": round((c1 - c0) / (t1 - t0), 4), "bytes": size}


def bench_latency_file(trials: int, rate: float) -> list[float]:
    out = []
    for _ in range(trials):
        d = Path(tempfile.mkdtemp(prefix="bench-watch-"))
        log = d / "train.log"
        log.write_bytes(b"")
        w = Watcher(str(log))
        w.wait_event(lambda e: e.get("event") == "attached")
        time.sleep(0.5)
        err_t = stream(log, rate, 2.5, False, error_at=1.0)
        got = w.wait_event(is_fx, timeout=10)
        w.stop()
        shutil.rmtree(d, ignore_errors=True)
        if err_t is not None and got is not None:
            out.append(got - err_t)
    return out


TMUX_SCRIPT = r"""
import sys, time
out = open(sys.argv[1], "w")
for i in range(1, 4001):
    print(f"step {i} loss 1.0 tok/s 20000", flush=True)
    if i % 50 == 0:
        time.sleep(0.01)
time.sleep(0.5)
t = time.time()
out.write(repr(t)); out.close()
print("Traceback (most recent call last):\n  File \"/app/x.py\", line 1, in <module>\n"
      "RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized "
      "function. This is not supported at the moment.", flush=True)
time.sleep(3)
"""


def bench_latency_tmux(trials: int) -> list[float]:
    if shutil.which("tmux") is None:
        return []
    out = []
    for _ in range(trials):
        d = Path(tempfile.mkdtemp(prefix="bench-watch-"))
        sock = f"triage-bench-{uuid.uuid4().hex[:8]}"
        (d / "s.py").write_text(TMUX_SCRIPT)
        tm = ["tmux", "-L", sock, "-f", "/dev/null"]
        subprocess.run([*tm, "new-session", "-d", "-s", "b", f"{PY} {d / 's.py'} {d / 't'}"],
                       check=True)
        w = Watcher("--tmux", "b", "--tmux-socket", sock, "--capture", str(d / "cap.log"))
        got = w.wait_event(is_fx, timeout=30)
        w.stop()
        subprocess.run([*tm, "kill-server"], check=False, capture_output=True)
        try:
            t_err = float((d / "t").read_text())
        except (OSError, ValueError):
            t_err = None
        if got is not None and t_err is not None:
            out.append(got - t_err)
        shutil.rmtree(d, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate-mb", type=float, default=1.0)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--no-tmux", action="store_true")
    a = ap.parse_args()
    rate = a.rate_mb * 1e6
    res: dict = {"cpu": [bench_cpu(a.seconds, rate, g) for g in (False, True)]}
    lat = bench_latency_file(a.trials, rate)
    res["latency_file_s"] = {"trials": [round(x, 3) for x in lat],
                             "max": round(max(lat), 3) if lat else None,
                             "median": round(statistics.median(lat), 3) if lat else None}
    if not a.no_tmux:
        lt = bench_latency_tmux(a.trials)
        res["latency_tmux_s"] = {"trials": [round(x, 3) for x in lt],
                                 "max": round(max(lt), 3) if lt else None,
                                 "median": round(statistics.median(lt), 3) if lt else None}
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
