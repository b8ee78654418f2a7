"""`triage watch --tmux` against a real (private) tmux server."""

from __future__ import annotations

import json
import os
import re
import signal
import struct
import time
from pathlib import Path

from tests.watch.conftest import (
    PY,
    SCRIPTS,
    TmuxServer,
    capture_lines,
    events_of,
    start_watch,
    wait_for,
)

STEP = re.compile(r"^step (\d+) loss ")


def test_fx_run_is_captured_whole_and_diagnosed(tmux: TmuxServer, tmp_path: Path) -> None:
    cap, go = tmp_path / "cap.log", tmp_path / "go"
    # the run pauses after its first third until the watcher is attached: a third in the
    # scrollback, the rest live, however slowly the watcher starts on a loaded machine
    tmux.new_session("train", f"FX_STEPS_GO={go} {PY} {SCRIPTS / 'fx_steps.py'} 3000")
    proc = start_watch(
        "--tmux", "train", "--tmux-socket", tmux.socket, "--no-tui", "--capture", str(cap), "--no-snapshot"
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    go.touch()
    events, err, rc = events_of(proc)
    events.insert(0, json.loads(first))
    assert rc == 0, err
    kinds = [e["event"] for e in events]
    assert kinds[0] == "attached" and events[0]["pane"].startswith("%")
    assert events[0]["history_lines"] > 0  # the hand-over from scrollback was exercised

    steps = [int(m.group(1)) for t in capture_lines(cap) if (m := STEP.match(t))]
    assert sorted(steps) == list(range(1, 3001)), "every step line exactly once"
    assert steps == sorted(steps), "in order"

    diag = [
        i
        for i, e in enumerate(events)
        if e["event"] == "diagnosis" and e["diagnosis"]["signature"] == "fx-tracing-flag-race"
    ]
    ended = [i for i, e in enumerate(events) if e["event"] == "ended"]
    assert diag and ended and diag[0] < ended[0]
    d = events[diag[0]]["diagnosis"]
    assert d["confidence"] == "confirmed"
    assert "symbolically trace" in d["evidence"][0]["text"]
    end = events[ended[0]]
    assert end["exit_status"] in (1, None) and end["capture"] == str(cap)  # see below
    assert end["lines"] == len(cap.read_bytes().splitlines())
    assert events[-1]["event"] == "report"
    assert events[-1]["report"]["diagnoses"][0]["signature"] == "fx-tracing-flag-race"
    assert kinds.count("ended") == 1 and kinds.index("ended") == len(kinds) - 2
    # the pane died and remain-on-exit was off (tmux's default): it is closed, as tmux
    # would have done, and the server (whose only session it was) is gone
    assert "train" not in tmux.run("list-sessions", check=False)


def test_killed_pane_keeps_every_printed_line(tmux: TmuxServer, tmp_path: Path) -> None:
    cap, counter = tmp_path / "cap.log", tmp_path / "count.bin"
    tmux.run("new-session", "-d", "-s", "keep", "-x", "100", "-y", "20", "sleep 600")
    tmux.run("new-window", "-d", "-t", "keep:", "-n", "w", f"{PY} {SCRIPTS / 'counter.py'} {counter}")
    proc = start_watch(
        "--tmux", "keep:w.0", "--tmux-socket", tmux.socket, "--no-tui", "--capture", str(cap), "--no-snapshot"
    )

    def printed() -> int:
        data = counter.read_bytes() if counter.exists() else b""
        return struct.unpack("<q", data[:8])[0] if len(data) >= 8 else 0

    wait_for(lambda: cap.exists() and cap.stat().st_size > 200_000)
    pid = int(tmux.run("display", "-p", "-t", "keep:w.0", "#{pane_pid}").strip())
    os.kill(pid, signal.SIGKILL)  # mid-output: the pane dies with bytes in flight
    events, err, rc = events_of(proc)
    assert rc == 0, err
    n = printed()
    assert n > 1000
    counts = [int(t.split()[1]) for t in capture_lines(cap) if t.startswith("count ")]
    first = counts[0]
    # tmux's scrollback can hold only the window's life so far: the capture starts where
    # its history starts, and from there every line that write() handed over is there
    assert first == 1
    assert counts[:n] == list(range(1, n + 1))
    assert len(counts) <= n + 1  # at most the line being written when the kill came
    end = next(e for e in events if e["event"] == "ended")
    # tmux 3.3a sometimes never reaps a piped pane's process: then the zombie's own
    # /proc entry tells (capture.py), so how it died is always known
    assert (end["signal"], end["exit_status"]) == ("SIGKILL", -9)
    # the other window and the user's options are untouched; the dead pane is closed
    # as tmux would have (remain-on-exit off)
    assert "sleep" in tmux.run("list-panes", "-a", "-F", "#{pane_current_command}")
    assert "w" not in tmux.run("list-windows", "-t", "keep", "-F", "#{window_name}").split()


def test_user_remain_on_exit_and_pipe_are_respected(tmux: TmuxServer, tmp_path: Path) -> None:
    cap = tmp_path / "cap.log"
    tmux.run("new-session", "-d", "-s", "keep", "sleep 600")
    tmux.run("new-window", "-d", "-t", "keep:", "-n", "w", "printf 'hello\\nlast words'; sleep 1; exit 3")
    tmux.run("set-option", "-w", "-t", "keep:w", "remain-on-exit", "on")  # the user's choice
    proc = start_watch(
        "--tmux", "keep:w", "--tmux-socket", tmux.socket, "--no-tui", "--capture", str(cap), "--no-snapshot"
    )
    events, err, rc = events_of(proc)
    assert rc == 0, err
    assert capture_lines(cap)[-2:] == ["hello", "last words"]
    end = next(e for e in events if e["event"] == "ended")
    # tmux 3.3a sometimes marks a piped pane dead and never reports its exit status
    # (`#{pane_dead_status}` stays empty, the process stays an unreaped zombie): the
    # watcher reads the zombie's status from /proc instead
    assert end["exit_status"] == 3 and end["signal"] is None
    # the pane-level option we set is gone again, the window's stays; the pane stays
    # dead and visible because that is what the user's setting does
    assert tmux.run("show-options", "-p", "-q", "-v", "-t", "keep:w", "remain-on-exit").strip() == ""
    assert tmux.run("show-options", "-w", "-v", "-t", "keep:w", "remain-on-exit").strip() == "on"
    assert tmux.run("display", "-p", "-t", "keep:w", "#{pane_dead}").strip() == "1"
    # tmux will not close a dead pane's pipe; the watcher stopped the pipe's process
    assert not _pipe_processes(cap)


def _pipe_processes(cap: Path, wait: float = 2.0) -> list[int]:
    """Processes that hold the capture file open (the pipe's cat writes to it)."""
    deadline = time.monotonic() + wait
    while True:
        out = []
        for p in Path("/proc").glob("[0-9]*/fd/*"):
            try:
                if os.readlink(p) == str(cap):
                    out.append(int(p.parts[2]))
            except OSError:
                continue
        if not out or time.monotonic() > deadline:
            return out
        time.sleep(0.05)


def test_refuses_a_pane_that_already_has_a_pipe(tmux: TmuxServer, tmp_path: Path) -> None:
    tmux.new_session("p", "sleep 600")
    tmux.run("pipe-pane", "-t", "p", f"cat >> {tmp_path / 'theirs.log'}")
    proc = start_watch(
        "--tmux",
        "p",
        "--tmux-socket",
        tmux.socket,
        "--no-tui",
        "--no-snapshot",
        "--capture",
        str(tmp_path / "cap.log"),
    )
    events, err, rc = events_of(proc, timeout=30)
    assert rc == 2 and events == []
    assert err.count("\n") == 1 and "already has a pipe-pane" in err
    assert tmux.run("display", "-p", "-t", "p", "#{pane_pipe}").strip() == "1"  # theirs, kept


def test_missing_target_is_a_one_line_error(tmux: TmuxServer, tmp_path: Path) -> None:
    tmux.new_session("p", "sleep 600")
    proc = start_watch(
        "--tmux",
        "nope",
        "--tmux-socket",
        tmux.socket,
        "--no-tui",
        "--no-snapshot",
        "--capture",
        str(tmp_path / "cap.log"),
    )
    events, err, rc = events_of(proc, timeout=30)
    assert rc == 2 and events == [] and "Traceback" not in err
    assert "nope" in err and err.count("\n") == 1


def test_interrupt_stops_the_pipe_and_restores_options(tmux: TmuxServer, tmp_path: Path) -> None:
    cap = tmp_path / "cap.log"
    tmux.new_session(
        "live",
        f"{PY} -c \"import time\nfor i in range(10**6): print('step', i, 'loss 1.0', flush=True); time.sleep(0.01)\"",
    )
    proc = start_watch(
        "--tmux", "live", "--tmux-socket", tmux.socket, "--no-tui", "--no-snapshot", "--capture", str(cap)
    )
    wait_for(lambda: cap.exists() and cap.stat().st_size > 500)
    assert tmux.run("display", "-p", "-t", "live", "#{pane_pipe}").strip() == "1"
    assert tmux.run("show-options", "-p", "-v", "-t", "live", "remain-on-exit").strip() == "on"
    proc.send_signal(signal.SIGTERM)
    events, err, rc = events_of(proc)
    assert rc == 0, err
    end = next(e for e in events if e["event"] == "ended")
    assert end["reason"] == "interrupted"
    assert tmux.run("display", "-p", "-t", "live", "#{pane_pipe} #{pane_dead}").split() == ["0", "0"]
    assert tmux.run("show-options", "-p", "-q", "-v", "-t", "live", "remain-on-exit").strip() == ""
    size = cap.stat().st_size
    time.sleep(0.3)
    assert cap.stat().st_size == size  # nothing appends to the capture any more


def _kill_when_cut(tmux: TmuxServer, cap: Path, target: str = "story") -> int:
    """SIGKILL the pane's process once the story's cut-off last line is in the capture."""
    wait_for(lambda: cap.exists() and b"Target 0 on cuda:0... T" in cap.read_bytes(), timeout=30)
    pid = int(tmux.run("display", "-p", "-t", target, "#{pane_pid}").strip())
    os.kill(pid, signal.SIGKILL)
    return pid


def test_sigkilled_pane_is_evidence_in_the_final_report(tmux: TmuxServer, tmp_path: Path) -> None:
    """The dead pane of the story: SIGKILL with the whole output captured and no error in
    it. The exit signal is evidence, the lead hypothesis uses it, and the report does not
    say stderr was probably not captured (it was)."""
    cap = tmp_path / "cap.log"
    tmux.new_session("story", f"{PY} {SCRIPTS / 'story_steps.py'} 5 0.3")
    proc = start_watch(
        "--tmux",
        "story",
        "--tmux-socket",
        tmux.socket,
        "--no-tui",
        "--capture",
        str(cap),
        "--no-snapshot",
        "--poll",
        "0.1",
    )
    _kill_when_cut(tmux, cap)
    events, err, rc = events_of(proc)
    assert rc == 0, err
    end = next(e for e in events if e["event"] == "ended")
    assert (end["signal"], end["exit_status"]) == ("SIGKILL", -9)
    assert end["status_from"] in ("tmux", "proc")  # who told: tmux, or the zombie's /proc
    rep = events[-1]["report"]
    lead = rep["diagnoses"][0]
    assert lead["signature"] == "host-oom-killed" and lead["confidence"] == "likely"
    facts = [e for e in lead["evidence"] if e.get("fact") == "run.signal"]
    assert facts and "SIGKILL" in facts[0]["text"]
    assert any("dmesg" in c for c in lead["checks"])
    others = {d["signature"]: d for d in rep["diagnoses"]}
    assert "killed-by-signal" in others  # the other sender: a scheduler or a user
    assert any("sacct" in c for c in others["killed-by-signal"]["checks"])
    assert "truncated-unknown" not in others
    notes = " ".join(rep["notes"])
    assert "probably not captured" not in notes
    assert "SIGKILL" in notes and "stderr included" in notes
    assert rep["environment"].get("exit signal") == "SIGKILL"


def test_a_killed_pane_is_recovered_from_its_last_screen(tmux: TmuxServer, tmp_path: Path) -> None:
    """`tmux kill-pane` drops what tmux had not yet written to the pipe and the pane with
    it; the screen seen at the last status poll is then the copy to recover from."""
    from triage.watch.capture import TmuxPane
    from triage.watch.session import missing_tail

    tmux.new_session("k", "printf 'step 1 loss 2.0\\nstep 2 loss 1.9\\nTarget 0 on cuda:0... T'; sleep 600")
    pane = TmuxPane("k", tmp_path / "cap.log", socket=tmux.socket)
    pane.attach()
    wait_for(lambda: pane.status().exists and "Target 0" in " ".join(pane.last_screen))
    tmux.run("kill-pane", "-t", pane.pane_id)
    assert pane.status().exists is False
    screen = pane.final_screen()  # the pane is gone: tmux cannot capture it any more
    assert screen[-3:] == ["step 1 loss 2.0", "step 2 loss 1.9", "Target 0 on cuda:0... T"]
    # what the capture lacked (here: the cut line) is what recovery appends
    assert missing_tail(screen, ["step 1 loss 2.0", "step 2 loss 1.9"]) == ["Target 0 on cuda:0... T"]
    pane.close()


def test_kill_pane_keeps_what_was_printed_before_it(tmux: TmuxServer, tmp_path: Path) -> None:
    """`tmux kill-pane` right after a burst: every line that tmux had read from the
    terminal is in the capture, once, in order, although the watcher's last look at the
    screen may be older: the pipe's cat copies what the pipe still holds before it is
    stopped. (Bytes still in the terminal that tmux never read are discarded by the
    kernel when kill-pane closes it: bench/README.md, watch.)"""
    cap, done = tmp_path / "cap.log", tmp_path / "done"
    script = tmp_path / "burst.py"
    script.write_text(
        "import os, sys, time\n"
        "for i in range(1, 3001):\n"
        "    os.write(1, b'count %d %s\\n' % (i, b'=' * (i % 61)))\n"
        f"open({str(done)!r}, 'w').close()\n"
        "time.sleep(600)\n"
    )
    tmux.run("new-session", "-d", "-s", "keep", "-x", "100", "-y", "20", "sleep 600")
    tmux.run("new-window", "-d", "-t", "keep:", "-n", "w", f"{PY} {script}")
    proc = start_watch(
        "--tmux", "keep:w.0", "--tmux-socket", tmux.socket, "--no-tui", "--capture", str(cap), "--no-snapshot"
    )
    assert proc.stdout is not None
    json.loads(proc.stdout.readline())  # attached
    wait_for(done.exists, timeout=30)  # every write returned
    # and tmux has read them all from the terminal (what it never read, no one can keep)
    wait_for(lambda: "count 3000 " in tmux.run("capture-pane", "-p", "-t", "keep:w"), timeout=10)
    tmux.run("kill-pane", "-t", "keep:w.0")
    events, err, rc = events_of(proc)
    assert rc == 0, err
    counts = [int(t.split()[1]) for t in capture_lines(cap) if t.startswith("count ")]
    assert counts == list(range(1, 3001))
    end = next(e for e in events if e["event"] == "ended")
    assert end["reason"] == "pane-closed"
