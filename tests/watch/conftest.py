"""A private tmux server per test (never the user's), and helpers to run the watcher."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"
PY = sys.executable


@dataclass
class TmuxServer:
    """`tmux -L triage-test-<uuid>`: created for one test, killed after it."""

    socket: str
    conf: Path

    def run(self, *args: str, check: bool = True) -> str:
        p = subprocess.run(
            ["tmux", "-L", self.socket, "-f", str(self.conf), *args],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        if check and p.returncode != 0:
            raise AssertionError(f"tmux {args}: {p.stderr}")
        return p.stdout

    def new_session(self, name: str, command: str, *, width: int = 120, height: int = 30) -> None:
        self.run("new-session", "-d", "-s", name, "-x", str(width), "-y", str(height), command)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[TmuxServer]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    conf = tmp_path / "tmux.conf"
    # a scrollback large enough for the whole run: what tmux drops before the watcher
    # attaches is not the watcher's to keep
    conf.write_text("set -g history-limit 100000\n")
    server = TmuxServer(f"triage-test-{uuid.uuid4().hex[:12]}", conf)
    try:
        yield server
    finally:
        server.run("kill-server", check=False)


def watch_cmd(*args: str) -> list[str]:
    return [PY, "-m", "triage", "watch", *args]


def start_watch(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.Popen(
        watch_cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e
    )


def events_of(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[list[dict], str, int]:
    out, err = proc.communicate(timeout=timeout)
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    return events, err, proc.returncode


def wait_for(pred, timeout: float = 20.0, every: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(every)
    raise AssertionError("condition not met in time")


def capture_lines(path: Path) -> list[str]:
    """The capture as triage reads it: ANSI stripped, \\r redraws resolved."""
    from triage.ingest.normalize import SourceState, normalize
    from triage.ingest.reader import split_lines

    state = SourceState()
    out: list[str] = []
    for raw in split_lines([path.read_bytes()]):
        out.extend(p.text for p in normalize(raw.data, state))
    return out
