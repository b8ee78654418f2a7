"""Bench `triage watch`: CPU share at 1 MB/s of output, and diagnosis latency; and for
the dead pane: the exit status known over many deaths under load, the TUI's longest
frame gap at death, and the TUI's CPU share in a real terminal.

    .venv/bin/python bench/watch.py [--seconds 10] [--rate-mb 1] [--trials 5] [--no-tmux]
    .venv/bin/python bench/watch.py --only death [--deaths 50] [--load 2]
    .venv/bin/python bench/watch.py --only tui [--seconds 10]
    .venv/bin/python bench/watch.py --only kill-pane [--kills 30] [--load 2]

Exit status (`--only death`): `--load` busy-looping processes keep the cores busy; each
of `--deaths` panes runs tests/watch/scripts/story_steps.py (steps, then a line cut off
mid-word) under a headless WatchSession and is SIGKILLed once its last line is in the
capture; a death counts as known when the `ended` event says SIGKILL (from tmux or from
the zombie's /proc entry: `status_from` says which).

Frame gap (`--only death` too): the TUI (textual's headless driver, real app loop, the
evidence snapshot on as by default) watches a story pane; a 20 ms timer on the UI thread
records when it runs; the pane is SIGKILLed; the longest gap between two timer runs from
the kill until the final report is shown is the longest the screen could not redraw.

Kill-pane (`--only kill-pane`): a pane prints numbered lines (as fast as the terminal
takes them, and at 500 lines/s) and records in a shared map how many writes returned;
a headless WatchSession watches it as `triage watch` does; `tmux kill-pane` at a random
moment; lost = lines written that are not in the capture after the watch ended.

TUI CPU (`--only tui`): `triage watch FILE` runs in a 120x40 tmux pane (a real terminal
that renders every frame) while this script appends step lines at 10 lines/s, then at
1 MB/s, with the FX traceback appended at a known instant; the TUI process's CPU (from
/proc) over the window divided by wall time, and the time until its --on-diagnosis hook
runs for that line.

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
import itertools
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
TB = (
    b"Traceback (most recent call last):\n"
    b'  File "/app/drafter.py", line 88, in run\n'
    b"    out = self.attn(q, k, v, block_mask=mask)\n"
    b"RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized "
    b"function. This is not supported at the moment.\n"
)


def step_lines(start: int, n: int, grad_norm: bool) -> bytes:
    extra = b" grad_norm 0.93" if grad_norm else b""
    return b"".join(
        b"[rank0]: step %d loss 2.%04d acc 0.61 tok/s 21512 lr 3e-4%s\n" % (i, i % 9999, extra)
        for i in range(start, start + n)
    )


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Watcher:
    """A headless watcher subprocess whose events are read in a thread, timestamped."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [PY, "-m", "triage", "watch", *args, "--no-tui", "--no-snapshot"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
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


def stream(
    path: Path, rate: float, seconds: float, grad_norm: bool, error_at: float | None = None
) -> float | None:
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
    return {
        "grad_norm_every_line": grad_norm,
        "rate_mb_s": rate / 1e6,
        "cpu_share": round((c1 - c0) / (t1 - t0), 4),
        "bytes": size,
    }


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
        subprocess.run([*tm, "new-session", "-d", "-s", "b", f"{PY} {d / 's.py'} {d / 't'}"], check=True)
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


STORY = Path(__file__).resolve().parent.parent / "tests" / "watch" / "scripts" / "story_steps.py"
CUT = b"Target 0 on cuda:0... T"
BUSY = (
    "import time\nfor i in range(10**9):\n print(f'step {i} loss 2.0 tok/s 21000', "
    "flush=True)\n time.sleep(0.002)"
)


def bench_exit_status(deaths: int, load: int) -> dict:
    """Deaths whose exit signal the watcher knew, under `load` busy processes."""
    if shutil.which("tmux") is None:
        return {"skipped": "tmux is not installed"}
    from triage.watch.session import TmuxSource, WatchSession

    hogs = [subprocess.Popen([PY, "-c", "while True: pass"]) for _ in range(load)]
    d = Path(tempfile.mkdtemp(prefix="bench-death-"))
    sock = f"triage-bench-{uuid.uuid4().hex[:8]}"
    tm = ["tmux", "-L", sock, "-f", "/dev/null"]
    subprocess.run([*tm, "new-session", "-d", "-s", "keep", "sleep 3600"], check=True)
    known, sources, worst = 0, {"tmux": 0, "proc": 0}, 0.0
    busy = d / "busy.py"
    busy.write_text(BUSY)
    try:
        for i in range(deaths):
            # half the panes die quiet (the story: a cut line, then waiting), half while
            # printing (tmux 3.3a then loses the status most often)
            cmd = f"{PY} {STORY} 3 0.05" if i % 2 == 0 else f"{PY} {busy}"
            subprocess.run([*tm, "new-window", "-d", "-t", "keep:", "-n", f"w{i}", cmd], check=True)
            cap = d / f"cap{i}.log"
            s = WatchSession(TmuxSource(f"keep:w{i}", cap, socket=sock), snapshot=False, status_interval=0.1)
            s.start()
            deadline = time.monotonic() + 30
            killed_at = None
            while not s.done and time.monotonic() < deadline:
                s.poll()
                if (
                    killed_at is None
                    and cap.exists()
                    and (CUT in cap.read_bytes() or cap.stat().st_size > 20_000)
                ):
                    pid = int(
                        subprocess.run(
                            [*tm, "display", "-p", "-t", f"keep:w{i}", "#{pane_pid}"],
                            capture_output=True,
                            text=True,
                        ).stdout.strip()
                    )
                    os.kill(pid, 9)
                    killed_at = time.monotonic()
                time.sleep(0.02)
            if killed_at is not None:
                worst = max(worst, time.monotonic() - killed_at)
            if s.run.ended is not None and s.run.ended.signal == "SIGKILL":
                known += 1
                sources[s.run.ended.status_from or "unknown"] = (
                    sources.get(s.run.ended.status_from or "unknown", 0) + 1
                )
            if not s.done:
                s.stop()
    finally:
        for h in hogs:
            h.kill()
        subprocess.run([*tm, "kill-server"], check=False, capture_output=True)
        shutil.rmtree(d, ignore_errors=True)
    return {
        "deaths": deaths,
        "load_processes": load,
        "signal_known": known,
        "told_by": sources,
        "slowest_end_s": round(worst, 2),
    }


COUNTER = Path(__file__).resolve().parent.parent / "tests" / "watch" / "scripts" / "counter.py"


STEADY = (
    "import mmap, os, struct, sys, time\n"
    "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); os.write(fd, bytes(8))\n"
    "mm = mmap.mmap(fd, 8)\n"
    "for i in range(1, 10**9):\n"
    "    os.write(1, b'count %d loss 2.0 tok/s 21000\\n' % i); mm[:8] = struct.pack('<q', i)\n"
    "    time.sleep(0.002)\n"
)


def bench_kill_pane(trials: int, load: int = 0, seed: int = 17) -> dict:
    """Lines lost when the watched pane is closed by `tmux kill-pane` at a random moment
    while it prints numbered lines as fast as the pty takes them (counter.py: it records
    in a shared map how many writes returned, so after its death we know what it wrote).
    Lost = lines it wrote that are not in the capture after the watch ended."""
    if shutil.which("tmux") is None:
        return {"skipped": "tmux is not installed"}
    import random

    rng = random.Random(seed)
    d = Path(tempfile.mkdtemp(prefix="bench-killpane-"))
    sock = f"triage-bench-{uuid.uuid4().hex[:8]}"
    tm = ["tmux", "-L", sock, "-f", "/dev/null"]
    subprocess.run([*tm, "new-session", "-d", "-s", "keep", "sleep 3600"], check=True)
    subprocess.run([*tm, "set", "-g", "history-limit", "200000"], check=True)
    (d / "steady.py").write_text(STEADY)
    hogs = [subprocess.Popen([PY, "-c", "while True: pass"]) for _ in range(load)]
    out: dict = {"trials": trials, "load_processes": load}
    try:
        for kind, script in (("burst", COUNTER), ("steady_500_lines_s", d / "steady.py")):
            lost = [_kill_pane_trial(tm, sock, d, script, i, rng.uniform(0.0, 1.0)) for i in range(trials)]
            out[kind] = {
                "lost_lines": lost,
                "trials_with_loss": sum(1 for x in lost if x),
                "max_lost": max(lost) if lost else None,
            }
    finally:
        for h in hogs:
            h.kill()
        subprocess.run([*tm, "kill-server"], check=False, capture_output=True)
        shutil.rmtree(d, ignore_errors=True)
    return out


def _kill_pane_trial(tm: list[str], sock: str, d: Path, script: Path, i: int, delay: float) -> int:
    """One pane, watched by a headless WatchSession polled as `triage watch` does (every
    0.2 s, status every 0.5 s), killed `delay` s after the capture first holds 20 kB."""
    from triage.watch.session import TmuxSource, WatchSession

    counter, cap = d / f"count{i}.bin", d / f"cap{i}.log"
    subprocess.run(
        [*tm, "new-window", "-d", "-t", "keep:", "-n", f"w{i}", f"{PY} {script} {counter}"], check=True
    )
    s = WatchSession(TmuxSource(f"keep:w{i}", cap, socket=sock), snapshot=False)
    s.start()
    deadline, kill_at = time.monotonic() + 60, None
    while not s.done and time.monotonic() < deadline:
        s.poll()
        now = time.monotonic()
        if kill_at is None and cap.exists() and cap.stat().st_size > 20_000:
            kill_at = now + delay
        if kill_at is not None and now >= kill_at:
            subprocess.run([*tm, "kill-pane", "-t", f"keep:w{i}"], check=False, capture_output=True)
            kill_at = float("inf")
        time.sleep(min(0.2, max(0.0, (kill_at or 0) - now)) if kill_at != float("inf") else 0.2)
    if not s.done:
        s.stop()
    data = counter.read_bytes()
    written = int.from_bytes(data[:8], "little", signed=True)
    seen = set()
    for line in cap.read_bytes().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == b"count" and parts[1].isdigit():
            seen.add(int(parts[1]))
    missing = [k for k in range(1, written + 1) if k not in seen]
    return len(missing)


def bench_frame_gap(trials: int) -> dict:
    """The TUI's longest gap between two runs of a 20 ms UI timer, from a SIGKILL of the
    watched pane until the final report is on screen."""
    if shutil.which("tmux") is None:
        return {"skipped": "tmux is not installed"}
    import asyncio

    from triage.tui.app import WatchApp
    from triage.watch.session import TmuxSource, WatchSession

    gaps: list[float] = []
    signals: list[str | None] = []

    async def one(i: int) -> None:
        d = Path(tempfile.mkdtemp(prefix="bench-gap-"))
        sock = f"triage-bench-{uuid.uuid4().hex[:8]}"
        tm = ["tmux", "-L", sock, "-f", "/dev/null"]
        subprocess.run(
            [*tm, "new-session", "-d", "-s", "story", "-x", "120", "-y", "40", f"{PY} {STORY} 5 0.3"],
            check=True,
        )
        cap = d / "cap.log"
        session = WatchSession(TmuxSource("story", cap, socket=sock), snapshot=True)
        app = WatchApp(session)
        ticks: list[float] = []
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                app.set_interval(0.02, lambda: ticks.append(time.monotonic()))
                deadline = time.monotonic() + 30
                while not (cap.exists() and CUT in cap.read_bytes()):
                    if time.monotonic() > deadline:
                        return
                    await pilot.pause(0.05)
                pid = int(
                    subprocess.run(
                        [*tm, "display", "-p", "-t", "story", "#{pane_pid}"], capture_output=True, text=True
                    ).stdout.strip()
                )
                killed = time.monotonic()
                os.kill(pid, 9)
                while session.final_report is None and time.monotonic() < killed + 30:
                    await pilot.pause(0.05)
                await pilot.pause(0.3)
                done = time.monotonic()
                ts = [killed] + [t for t in ticks if killed <= t <= done] + [done]
                gaps.append(max(b - a for a, b in itertools.pairwise(ts)))
                ended = session.run.ended
                signals.append(ended.signal if ended else None)
        finally:
            subprocess.run([*tm, "kill-server"], check=False, capture_output=True)
            shutil.rmtree(d, ignore_errors=True)

    for i in range(trials):
        asyncio.run(one(i))
    return {
        "trials": len(gaps),
        "max_gap_ms": round(max(gaps) * 1000) if gaps else None,
        "gaps_ms": [round(g * 1000) for g in gaps],
        "signals": signals,
    }


HOOK = "cat > /dev/null; date +%s.%N >> {out}"


def bench_tui_cpu(seconds: float) -> dict:
    """The TUI in a real terminal (a tmux pane): CPU share at 10 lines/s and at 1 MB/s,
    and the time from the FX error line to its --on-diagnosis hook; `tail -f` in the
    same pane size is what a user would watch instead."""
    if shutil.which("tmux") is None:
        return {"skipped": "tmux is not installed"}
    out: dict = {}
    for name, rate_lines, rate_bytes in (("10_lines_s", 10, None), ("1_mb_s", None, 1e6)):
        out[name] = _pane_cpu(seconds, rate_lines, rate_bytes, tui=True)
        out[name]["tail_f_cpu_share"] = _pane_cpu(seconds, rate_lines, rate_bytes, tui=False)["cpu_share"]
    return out


def _pane_cpu(seconds: float, rate_lines: int | None, rate_bytes: float | None, *, tui: bool) -> dict:
    """CPU share of the process in a 120x40 pane (the TUI or `tail -f`) while the log
    grows at the given rate; for the TUI, the FX error's --on-diagnosis latency too."""
    d = Path(tempfile.mkdtemp(prefix="bench-tui-"))
    log, hook_out = d / "train.log", d / "hook.txt"
    log.write_bytes(b"")
    sock = f"triage-bench-{uuid.uuid4().hex[:8]}"
    tm = ["tmux", "-L", sock, "-f", "/dev/null"]
    cmd = (
        f"{PY} -m triage watch {log} --no-snapshot --on-diagnosis '{HOOK.format(out=hook_out)}'"
        if tui
        else f"tail -f {log}"
    )
    subprocess.run([*tm, "new-session", "-d", "-s", "tui", "-x", "120", "-y", "40", cmd], check=True)
    try:
        pid = int(
            subprocess.run(
                [*tm, "display", "-p", "-t", "tui", "#{pane_pid}"], capture_output=True, text=True
            ).stdout.strip()
        )
        # not the start-up (imports, rules, first frame): from the first full screen on
        deadline = time.monotonic() + 60
        while (
            tui
            and time.monotonic() < deadline
            and "q quit"
            not in subprocess.run(
                [*tm, "capture-pane", "-p", "-t", "tui"], capture_output=True, text=True
            ).stdout
        ):
            time.sleep(0.2)
        time.sleep(1.0)
        if rate_bytes is not None:
            stream(log, rate_bytes, 1.0, False)
        else:
            _slow(log, rate_lines or 10, 1.0, 1)
        c0, t0 = cpu_seconds(pid), time.monotonic()
        if rate_bytes is not None:
            err_t = stream(log, rate_bytes, seconds, False, error_at=seconds / 2)
        else:
            err_t = _slow(log, rate_lines or 10, seconds, 10_000, error_at=seconds / 2)
        time.sleep(0.3)
        c1, t1 = cpu_seconds(pid), time.monotonic()
        try:
            hook_t: float | None = float(hook_out.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            hook_t = None
        res: dict = {"cpu_share": round((c1 - c0) / (t1 - t0), 4)}
        if tui:
            res["diagnosis_latency_s"] = (
                round(hook_t - err_t, 3) if hook_t is not None and err_t is not None else None
            )
        return res
    finally:
        subprocess.run([*tm, "kill-server"], check=False, capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


def _slow(path: Path, per_s: int, seconds: float, first: int, error_at: float | None = None) -> float | None:
    """Append `per_s` step lines a second, one at a time; the FX error at `error_at`."""
    t0 = time.monotonic()
    err_t = None
    k = 0
    with path.open("ab") as w:
        while time.monotonic() - t0 < seconds:
            w.write(step_lines(first + k, 1, False))
            w.flush()
            if error_at is not None and err_t is None and time.monotonic() - t0 >= error_at:
                err_t = time.time()
                w.write(TB)
                w.flush()
            k += 1
            time.sleep(max(0.0, t0 + k / per_s - time.monotonic()))
    return err_t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate-mb", type=float, default=1.0)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--no-tmux", action="store_true")
    ap.add_argument(
        "--only",
        choices=("headless", "death", "tui", "kill-pane"),
        help="one group of measures (default: headless, the original set)",
    )
    ap.add_argument("--deaths", type=int, default=50)
    ap.add_argument("--kills", type=int, default=30, help="tmux kill-pane trials")
    ap.add_argument("--load", type=int, default=2, help="busy processes during the deaths")
    a = ap.parse_args()
    if a.only == "death":
        print(
            json.dumps(
                {"exit_status": bench_exit_status(a.deaths, a.load), "frame_gap": bench_frame_gap(3)},
                indent=2,
            )
        )
        return
    if a.only == "kill-pane":
        print(json.dumps({"kill_pane": bench_kill_pane(a.kills, a.load)}, indent=2))
        return
    if a.only == "tui":
        print(json.dumps({"tui": bench_tui_cpu(a.seconds)}, indent=2))
        return
    rate = a.rate_mb * 1e6
    res: dict = {"cpu": [bench_cpu(a.seconds, rate, g) for g in (False, True)]}
    lat = bench_latency_file(a.trials, rate)
    res["latency_file_s"] = {
        "trials": [round(x, 3) for x in lat],
        "max": round(max(lat), 3) if lat else None,
        "median": round(statistics.median(lat), 3) if lat else None,
    }
    if not a.no_tmux:
        lt = bench_latency_tmux(a.trials)
        res["latency_tmux_s"] = {
            "trials": [round(x, 3) for x in lt],
            "max": round(max(lt), 3) if lt else None,
            "median": round(statistics.median(lt), 3) if lt else None,
        }
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
