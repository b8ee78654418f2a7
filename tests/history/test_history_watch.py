"""A watched run's final triage is recorded, with the run the watch names."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from triage.cli import build_parser
from triage.cli.watch import build_session
from triage.history.store import open_store

ROOT = Path(__file__).resolve().parents[2]
RACE = (
    ROOT / "fixtures" / "fx-tracing-flag-race" / "002-story-2to1-glued-with-accelerate" / "input.log"
).read_bytes()


def _watch_once(log: Path, url: str, *extra: str) -> dict:
    args = build_parser().parse_args(
        ["watch", str(log), "--no-tui", "--no-snapshot", "--history-url", url, *extra]
    )
    session = build_session(args)
    session.start()
    session.poll()
    session.stop()
    assert session.final_report is not None
    return session.final_report


def test_watch_records_the_final_triage(tmp_path: Path, store_url: str) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(RACE)
    first = _watch_once(log, store_url)
    assert first["history"]["run"]["via"] == "log"
    assert first["history"]["fingerprint"]["parts"]["signature"] == "fx-tracing-flag-race"
    second = _watch_once(log, store_url, "--run", "drafters")
    assert second["history"]["run"] == {"key": "run:drafters", "name": "drafters", "via": "run"}
    store = open_store(store_url)
    try:
        recs = store.query()
    finally:
        store.close()
    assert [r.command for r in recs] == ["watch", "watch"]
    assert {r.run_key for r in recs} == {"run:drafters", first["history"]["run"]["key"]}


def test_watch_no_history(tmp_path: Path, store_url: str) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(RACE)
    assert "history" not in _watch_once(log, store_url, "--no-history")


def test_a_tmux_watch_is_the_sessions_run(tmp_path: Path) -> None:
    """A real tmux server: the run dies in the session `train`, and the watch records it
    into that session's run (the default store; the backends are tested above). One
    watch only: a watch takes seconds, and recurrences are the CLI tests' business."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    socket = f"triage-hist-{uuid.uuid4().hex[:10]}"
    conf = tmp_path / "tmux.conf"
    conf.write_text("set -g history-limit 10000\n")
    reports = []
    try:
        for i in range(1):
            go = tmp_path / f"go{i}"
            # the run dies once the watcher is attached (the test says when: no sleeps)
            die = (
                f"import os, sys, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
                "print('Loading 5 target models...'); print('Target 0 on cuda:0...')\n"
                "sys.stdout.write('T'); sys.stdout.flush()\n"
            )
            script = tmp_path / f"die{i}.py"
            script.write_text(die)
            subprocess.run(
                [
                    "tmux",
                    "-L",
                    socket,
                    "-f",
                    str(conf),
                    "new-session",
                    "-d",
                    "-s",
                    "train",
                    "-x",
                    "120",
                    "-y",
                    "30",
                    f"{sys.executable} {script}",
                ],
                check=True,
                timeout=20,
            )
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "triage",
                    "watch",
                    "--tmux",
                    "train",
                    "--tmux-socket",
                    socket,
                    "--no-tui",
                    "--no-snapshot",
                    "--capture",
                    str(tmp_path / f"cap{i}.log"),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert proc.stdout is not None
            assert json.loads(proc.stdout.readline())["event"] == "attached"
            go.touch()
            out, err = proc.communicate(timeout=90)
            assert proc.returncode == 0, err
            events = [json.loads(x) for x in out.splitlines() if x.strip()]
            reports.append(events[-1]["report"])
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    (only,) = (r["history"] for r in reports)
    assert only["run"] == {"key": "tmux:train", "name": "train", "via": "tmux"}
    assert only["fingerprint"]["parts"]["last_line"] == "T"
    store = open_store(None)  # the default: XDG_STATE_HOME under tmp_path
    try:
        (rec,) = store.query()
    finally:
        store.close()
    assert (rec.run_key, rec.command, rec.id) == ("tmux:train", "watch", only["id"])
