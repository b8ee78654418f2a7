"""How a process ended, read from its zombie's /proc entry (the fallback for a pane
whose process tmux 3.3a never reaps): real child processes, left unreaped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from triage.watch.capture import proc_start_time, zombie_status

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _zombie(args: list[str], kill: bool) -> tuple[subprocess.Popen[bytes], str]:
    p = subprocess.Popen(args)
    start = proc_start_time(p.pid)
    assert start is not None
    if kill:
        os.kill(p.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while zombie_status(p.pid, start) is None:  # Popen reaps only in wait()/poll()
        assert time.monotonic() < deadline, "the child never became a zombie"
        time.sleep(0.01)
    return p, start


def test_a_sigkilled_zombie_says_sigkill() -> None:
    p, start = _zombie([sys.executable, "-c", "import time; time.sleep(60)"], kill=True)
    try:
        assert zombie_status(p.pid, start) == (-9, "SIGKILL")
    finally:
        p.wait()
    assert zombie_status(p.pid, start) is None  # reaped: nothing to read any more


def test_an_exit_status_is_read_whole() -> None:
    p, start = _zombie([sys.executable, "-c", "raise SystemExit(3)"], kill=False)
    try:
        assert zombie_status(p.pid, start) == (3, None)
        # another start time is another process that had this pid: not ours to report
        assert zombie_status(p.pid, str(int(start) + 1)) is None
    finally:
        p.wait()


def test_a_live_process_has_no_exit_status() -> None:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start = proc_start_time(p.pid)
        assert start is not None and zombie_status(p.pid, start) is None
    finally:
        p.kill()
        p.wait()
