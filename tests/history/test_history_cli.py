"""`triage history`: grouped by fingerprint, --stats, --format json, errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from triage.cli import main

ROOT = Path(__file__).resolve().parents[2]
SNAPS = ROOT / "tests" / "data" / "snapshots"
STORY = b"Loading 5 target models...\nTarget 0 on cuda:0...\nT"
OOM = (ROOT / "fixtures" / "cuda-oom" / "001-rank3-cascade-8ranks" / "input.log").read_bytes()


def _crash(capsys: pytest.CaptureFixture[str], log: Path, content: bytes, when: int, *args: str) -> None:
    log.write_bytes(content)
    os.utime(log, ns=(when * 10**9, when * 10**9))
    assert main(["logs", str(log), "--format", "json", *args]) == 0
    capsys.readouterr()


def _history(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["history", *args]) == 0
    out = capsys.readouterr()
    assert out.err == ""
    return out.out


@pytest.fixture
def recorded(tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Two runs: the story's (the same cut-off twice, then an OOM) and another OOM."""
    log = tmp_path / "train.log"
    _crash(
        capsys,
        log,
        STORY,
        1_800_000_000,
        "--history-url",
        store_url,
        "--evidence",
        str(SNAPS / "venv-no-accelerate.json"),
    )
    _crash(
        capsys,
        log,
        STORY,
        1_800_000_600,
        "--history-url",
        store_url,
        "--evidence",
        str(SNAPS / "venv-accelerate-1.13.json"),
    )
    _crash(capsys, log, OOM, 1_800_090_000, "--history-url", store_url)
    _crash(capsys, tmp_path / "other.log", OOM, 1_800_090_100, "--history-url", store_url, "--run", "sweep-7")
    return store_url


def test_grouped_by_fingerprint(tmp_path: Path, recorded: str, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(
        _history(capsys, "--history-url", recorded, "--format", "json", "--log", str(tmp_path / "train.log"))
    )
    assert data["schema"] == "triage.history/1" and data["crashes"] == 3
    (run,) = data["runs"]
    assert run["run"]["via"] == "log"
    oom, cut = run["failures"]
    assert (oom["count"], oom["latest"], oom["kind"]) == (1, True, "error")
    assert (cut["count"], cut["latest"], cut["kind"]) == (2, False, "end")
    assert cut["first_seen"] == "2027-01-15 08:00 UTC" and cut["last_seen"] == "2027-01-15 08:10 UTC"
    later = cut["crashes"][1]
    assert later["changed_since_previous"]["package.accelerate"] == [None, "1.13.0"]
    assert "missing-accelerate" in later["ruled_out"]


def test_console_view_all_runs(recorded: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = _history(capsys, "--history-url", recorded)
    assert "4 crash(es), 2 run(s)" in text
    assert "run sweep-7  (from run; 1 triage(s))" in text
    assert "2x  gone  first 2027-01-15 08:00 UTC" in text
    assert "changed since the last: package.accelerate absent -> 1.13.0" in text
    only = _history(capsys, "--history-url", recorded, "--run", "sweep-7")
    assert "1 crash(es), 1 run(s)" in only


def test_stats(recorded: str, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(_history(capsys, "--history-url", recorded, "--stats", "--format", "json"))
    by_sig = {r["signature"]: r for r in data["by_signature"]}
    assert by_sig["cuda-oom"]["failures"] == 2 and by_sig["cuda-oom"]["runs"] == 2
    assert sum(r["failures"] for r in data["by_day"]) == data["failures"] == 4
    assert [r["day"] for r in data["by_day"]] == ["2027-01-16", "2027-01-15"]
    assert data["by_host"][0]["failures"] >= 2
    text = _history(capsys, "--history-url", recorded, "--stats")
    assert "by signature" in text and "cuda-oom" in text and "by day" in text


def test_a_diagnosis_seen_across_runs_says_so(
    tmp_path: Path, recorded: str, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "third.log"
    log.write_bytes(OOM)
    assert main(["logs", str(log), "--format", "json", "--history-url", recorded, "--run", "sweep-8"]) == 0
    report = json.loads(capsys.readouterr().out)
    spread = report["history"]["signature"]
    assert (spread["signature"], spread["count"], spread["runs"]) == ("cuda-oom", 3, 3)
    assert any("cuda-oom has been diagnosed in 3 crashes across 3 runs" in n for n in report["notes"])


def test_unreadable_store_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "h.sqlite"
    db.write_bytes(b"garbage" * 100)
    assert main(["history", "--history-url", f"sqlite:///{db}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("triage history: ") is False
    assert "history:" in err and "not a database" in err


def test_empty_store(capsys: pytest.CaptureFixture[str]) -> None:
    text = _history(capsys)
    assert "No crashes recorded yet" in text
