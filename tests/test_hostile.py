"""Hostile input: every input gets a result or a one-line error with exit 2, never a
traceback, within a bounded time."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

LIMIT_S = 60
ROOT = Path(__file__).resolve().parent.parent


def triage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "triage", *args], capture_output=True, text=True, timeout=LIMIT_S
    )


def make(tmp: Path, name: str, data: bytes) -> str:
    p = tmp / name
    p.write_bytes(data)
    return str(p)


CASES = {
    "invalid-utf8": lambda: b"step 1 \xff\xfe\xfd loss 2.0\n\xc3\x28 RuntimeError: x\n",
    "nul-bytes": lambda: b"step 1\x00\x00 loss\x00 2\nValueError: \x00boom\n",
    "empty": lambda: b"",
    "crlf": lambda: (
        b'step 1 loss 2\r\nTraceback (most recent call last):\r\n  File "a.py", line 1, in <module>\r\nValueError: x\r\n'
    ),
    "random-binary": lambda: random.Random(1).randbytes(3 << 20),
    "redos-bait-a": lambda: b"a" * (4 << 20),
    "redos-bait-colon": lambda: (b"Error: " * 200_000) + b"\n",
    "redos-spaces-line": lambda: b" " * (2 << 20) + b"out of memory" + b" " * (1 << 20) + b"\n",
    "ansi-storm": lambda: (
        b"\x1b[31m\x1b[0m\x1b[2K\x1b[1A" * 100_000
        + b"\nRuntimeError: CUDA error: an illegal memory access was encountered\n"
    ),
    "long-single-line": lambda: b'{"msg": "' + b"x" * (64 << 20) + b'"}',
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_file(tmp_path: Path, name: str, validate_report):
    path = make(tmp_path, f"{name}.log", CASES[name]())
    t0 = time.monotonic()
    out = triage("logs", path, "--format", "json")
    assert time.monotonic() - t0 < LIMIT_S
    assert out.returncode in (0, 1, 2), out.stderr
    assert "Traceback" not in out.stderr
    if out.returncode == 2:
        assert out.stderr.count("\n") == 1
    else:
        validate_report(json.loads(out.stdout))


def test_truncated_gzip_is_read(tmp_path: Path, validate_report):
    blob = gzip.compress(
        b"step 1 loss 2.0\n" * 50_000
        + b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB\n"
    )
    path = make(tmp_path, "cut.log.gz", blob[: len(blob) - 40])
    out = triage("logs", path, "--format", "json")
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    validate_report(rep)
    assert rep["sources"][0]["truncated"] is True
    assert rep["sources"][0]["lines"] > 1000


def test_gzip_log_is_read(tmp_path: Path):
    path = make(
        tmp_path,
        "ok.log.gz",
        gzip.compress(b"[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB\n"),
    )
    rep = json.loads(triage("logs", path, "--format", "json").stdout)
    assert rep["diagnoses"][0]["signature"] == "cuda-oom"


@pytest.mark.parametrize("what", ["missing", "empty-folder", "unreadable", "directory-of-binaries"])
def test_bad_paths_one_line_exit_2(tmp_path: Path, what: str):
    if what == "missing":
        target = str(tmp_path / "nope.log")
    elif what == "empty-folder":
        (tmp_path / "d").mkdir()
        target = str(tmp_path / "d")
    elif what == "unreadable":
        if os.geteuid() == 0:
            pytest.skip("root reads every file")
        p = tmp_path / "secret.log"
        p.write_text("x\n")
        p.chmod(0)
        target = str(p)
    else:
        d = tmp_path / "bins"
        d.mkdir()
        (d / "model.safetensors").write_bytes(b"\x00" * 10)
        target = str(d)
    out = triage("logs", target, "--format", "json")
    assert out.returncode == 2
    assert out.stderr.startswith("triage: error:") and out.stderr.count("\n") == 1


def test_bad_snapshot_is_one_line(tmp_path: Path):
    log = make(tmp_path, "a.log", b"step 1\n")
    snap = make(tmp_path, "snap.json", b"{not json")
    out = triage("logs", log, "--evidence", snap)
    assert out.returncode == 2 and "Traceback" not in out.stderr


def test_no_eval_exec_pickle_in_triage():
    import re
    from pathlib import Path as P

    root = P(__file__).resolve().parent.parent / "triage"
    bad = re.compile(r"\b(?:eval|exec)\(|\bimport pickle\b|\bpickle\.loads?\(|\bmarshal\.loads?\(")
    # repro scenarios are programs run in a subprocess; they never read logs or rules
    files = [p for p in root.rglob("*.py") if "repro/scenarios" not in str(p)]
    hits = [
        f"{p}:{i}" for p in files for i, line in enumerate(p.read_text().splitlines(), 1) if bad.search(line)
    ]
    assert hits == []


def test_triage_makes_no_network_calls(monkeypatch, tmp_path: Path):
    import socket

    from triage.cli import main

    def refuse(*a, **k):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    log = make(
        tmp_path, "a.log", b"[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB\n"
    )
    assert main(["logs", log, "--format", "json", "-o", str(tmp_path / "r.json")]) == 0


def test_a_binary_file_is_named_as_one(tmp_path: Path):
    """A checkpoint or core file given by mistake is read, and the report says it is
    not text; a log that holds U+FFFD as pasted text is a log."""
    path = make(tmp_path, "model.bin", random.Random(2).randbytes(200_000))
    rep = json.loads(triage("logs", path, "--format", "json").stdout)
    assert any("does not look like a text log" in n for n in rep["notes"])
    pasted = make(tmp_path, "pasted.log", ("100%|" + "\ufffd" * 40 + "| 9/9\n").encode() * 50)
    rep = json.loads(triage("logs", pasted, "--format", "json").stdout)
    assert not any("text log" in n or "UTF-16" in n for n in rep["notes"])


def test_a_utf16_log_is_read_and_named(tmp_path: Path):
    """PowerShell's `>` writes UTF-16: its lines are still read, and the note says how
    to convert it."""
    text = (ROOT / "fixtures/cuda-oom/001-rank3-cascade-8ranks/input.log").read_text()
    path = make(tmp_path, "win.log", text.replace("\n", "\r\n").encode("utf-16"))
    rep = json.loads(triage("logs", path, "--format", "json").stdout)
    assert rep["diagnoses"][0]["signature"] == "cuda-oom"
    assert any("UTF-16" in n and "iconv" in n for n in rep["notes"])
