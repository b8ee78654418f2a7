"""The store on both backends: many processes at once, migrations, redaction, and a
store that fails never failing a triage."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from triage.cli import main
from triage.engine import analyze_text
from triage.history import History, derive_run
from triage.history.store import LATEST, MIGRATIONS, Record, open_store

ROOT = Path(__file__).resolve().parents[2]
OOM_LOG = ROOT / "fixtures" / "cuda-oom" / "001-rank3-cascade-8ranks" / "input.log"
PROCS = 64


def _child(url: str, i: int, report: object, barrier: object, errors: object) -> None:
    """One job recording its triage, at the same moment as the others."""
    warnings: list[str] = []
    barrier.wait()  # type: ignore[attr-defined]
    h = History(derive_run([], name=f"job-{i % 8}"), url=url, warn=warnings.append)
    out = h.finish(report)  # type: ignore[arg-type]
    if warnings or not out.history.get("id"):
        errors.put(f"{i}: {warnings}")  # type: ignore[attr-defined]
    os._exit(0)


def test_64_processes_record_at_once(store_url: str) -> None:
    """A fresh store: every process migrates and records at once; no record is lost and
    none sees a lock error."""
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(PROCS)
    errors = ctx.Queue()
    # triaged once here (the children inherit it): what is measured is the recording
    report = analyze_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB")
    procs = [ctx.Process(target=_child, args=(store_url, i, report, barrier, errors)) for i in range(PROCS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * PROCS
    problems = []
    while not errors.empty():
        problems.append(errors.get())
    assert problems == []
    store = open_store(store_url)
    try:
        assert store.count() == PROCS
        ids = [r.id for r in store.query()]
        assert len(set(ids)) == PROCS
        assert store.version() == LATEST
    finally:
        store.close()


def _json_report(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(["logs", str(OOM_LOG), "--format", "json", "--fail-on", "likely", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _assert_unchanged(capsys: pytest.CaptureFixture[str], url_args: list[str]) -> str:
    want_rc, want, _ = _json_report(["--no-history"], capsys)
    rc, out, err = _json_report(url_args, capsys)
    assert (rc, out) == (want_rc, want) and want_rc == 1
    assert err.count("\n") == 1 and err.startswith("triage: warning: crash history unavailable")
    return err


def test_corrupt_store_warns_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "history.sqlite"
    db.write_bytes(b"this is not a database\n" * 200)
    err = _assert_unchanged(capsys, ["--history-url", f"sqlite:///{db}"])
    assert "not a database" in err


def test_locked_store_warns_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holds the write lock for longer than triage waits."""
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    open_store(url).close()
    holder = sqlite3.connect(tmp_path / "history.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    monkeypatch.setenv("TRIAGE_HISTORY_TIMEOUT", "0.3")
    try:
        err = _assert_unchanged(capsys, ["--history-url", url])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "locked" in err


def test_refused_postgres_warns_once(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("psycopg")
    err = _assert_unchanged(capsys, ["--history-url", "postgresql://triage@127.0.0.1:1/triage"])
    assert "cannot connect" in err


def test_unknown_url_scheme_warns_once(capsys: pytest.CaptureFixture[str]) -> None:
    err = _assert_unchanged(capsys, ["--history-url", "mysql://db/triage"])
    assert "unsupported history URL" in err


def test_read_only_store(tmp_path: Path) -> None:
    """A store the user cannot write (as root too: the command runs without the
    capability that overrides file permissions)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    url = f"sqlite:///{folder / 'history.sqlite'}"
    store = open_store(url)
    store.close()
    (folder / "history.sqlite").chmod(0o444)
    folder.chmod(0o555)
    prefix: list[str] = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("running as root without setpriv: permissions cannot be enforced")
        prefix = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
    try:
        base = [
            *prefix,
            sys.executable,
            "-m",
            "triage",
            "logs",
            str(OOM_LOG),
            "--format",
            "json",
            "--fail-on",
            "likely",
        ]
        env = {**os.environ}
        want = subprocess.run([*base, "--no-history"], capture_output=True, text=True, env=env)
        got = subprocess.run([*base, "--history-url", url], capture_output=True, text=True, env=env)
    finally:
        folder.chmod(0o755)
    assert (got.returncode, got.stdout) == (want.returncode, want.stdout) and want.returncode == 1
    assert got.stderr.count("\n") == 1 and "crash history unavailable" in got.stderr
    assert "readonly" in got.stderr or "unable to open" in got.stderr


def test_newer_schema_is_refused_not_damaged(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    store = open_store(store_url)
    with store._write() as cur:
        cur.execute("UPDATE triage_schema SET version = 99")
    store.close()
    err = _assert_unchanged(capsys, ["--history-url", store_url])
    assert "schema version 99 is newer" in err
    assert main(["history", "--history-url", store_url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "schema version 99" in err


def test_an_old_schema_is_migrated(store_url: str) -> None:
    """A store made by the first version of the schema gains what later ones add."""
    store = open_store(store_url)
    store.close()
    if store_url.startswith("sqlite"):
        path = store_url.removeprefix("sqlite:///")
        Path(path).unlink()
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE triage_schema (version INTEGER NOT NULL)")
        for s in MIGRATIONS[0][1]:
            conn.execute(s.replace("{id}", "INTEGER PRIMARY KEY AUTOINCREMENT"))
        conn.execute("INSERT INTO triage_schema VALUES (1)")
        conn.commit()
        conn.close()
    else:
        store = open_store(store_url)
        with store._write() as cur:
            for name in ("crashes_fingerprint", "crashes_day"):
                cur.execute(f"DROP INDEX {name}")
            cur.execute("UPDATE triage_schema SET version = 1")
        store.close()
    store = open_store(store_url)
    try:
        assert store.version() == LATEST == 2
        # the index migration 2 adds exists again: creating it fails
        with pytest.raises(Exception, match="exists"), store._write() as cur:
            cur.execute("CREATE INDEX crashes_fingerprint ON crashes (fingerprint, id)")
    finally:
        store.close()


def test_stored_text_is_redacted(tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    token = "hf_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"
    log = tmp_path / "train.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/home/ana/train.py", line 3, in <module>\n'
        f"OSError: 401 Client Error for token {token}: Unauthorized\n"
    )
    assert main(["logs", str(log), "--history-url", store_url, "--format", "json"]) == 0
    capsys.readouterr()
    store = open_store(store_url)
    try:
        (rec,) = store.query()
        rows = store.rows("SELECT label, fp_parts, diagnoses FROM crashes")
    finally:
        store.close()
    assert token not in json.dumps(rows) and token not in json.dumps(rec.__dict__, default=str)
    assert rec.fp_parts["frame"] == "train.py:<module>"


def test_record_roundtrip(store_url: str) -> None:
    rec = Record(
        recorded_at=1_800_000_000.5,
        host="node-1",
        run_key="run:a",
        run_name="a",
        run_via="run",
        fingerprint="end-x",
        fp_kind="end",
        fp_parts={"k": 1},
        label="l",
        signature=None,
        confidence=None,
        failed=False,
        facts={"package.accelerate": None, "gpu.all.memory_used_mib": [0, 1]},
    )
    store = open_store(store_url)
    try:
        store.record(rec)
        (back,) = store.query("run_key = ?", ("run:a",))
    finally:
        store.close()
    assert back == rec
    assert stat.S_ISREG(os.stat(__file__).st_mode)  # (sanity: the module is a real file)
