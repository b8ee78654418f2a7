"""The project's story across three crashes, on both backends, through the real CLI.

1. The cut-off log with a snapshot of a venv without accelerate: missing-accelerate
   leads (nothing to remember yet).
2. The operator installs accelerate and relaunches; the run dies the same way (the same
   log, rewritten): missing-accelerate is ruled out *because the run died the same way
   after accelerate appeared*, naming both crashes and the fact; the report leads with
   the hypotheses that remain.
3. The run dies with a different fingerprint (the race's RuntimeError is captured at
   last): a new failure, and the old one is reported gone (the fix held).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from triage.cli import main

ROOT = Path(__file__).resolve().parents[2]
SNAPS = ROOT / "tests" / "data" / "snapshots"
STORY = (
    ROOT / "fixtures" / "missing-accelerate" / "001-story-cut-off-no-accelerate" / "input.log"
).read_bytes()
RACE = (
    ROOT / "fixtures" / "fx-tracing-flag-race" / "002-story-2to1-glued-with-accelerate" / "input.log"
).read_bytes()


def _crash(log: Path, content: bytes, when: int) -> None:
    """The run writes its log anew (a relaunch): same path, a later mtime."""
    log.write_bytes(content)
    os.utime(log, ns=(when * 10**9, when * 10**9))


def _triage(capsys: pytest.CaptureFixture[str], log: Path, snapshot: str, url: str) -> dict:
    rc = main(
        ["logs", str(log), "--evidence", str(SNAPS / snapshot), "--format", "json", "--history-url", url]
    )
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert out.err == ""
    return json.loads(out.out)


def _leading(report: dict) -> list[str]:
    return [d["signature"] for d in report["diagnoses"] if d["signature"] != "truncated-unknown"]


def test_story_three_crashes(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str], validate_report
) -> None:
    log = tmp_path / "train.log"
    _crash(log, STORY, 1_800_000_000)
    first = _triage(capsys, log, "venv-no-accelerate.json", store_url)
    validate_report(first)
    assert _leading(first)[0] == "missing-accelerate"
    assert first["history"]["fingerprint"]["kind"] == "end"
    assert "recurrence" not in first["history"]

    # accelerate installed, relaunched, died the same way
    _crash(log, STORY, 1_800_000_600)
    second = _triage(capsys, log, "venv-accelerate-1.13.json", store_url)
    validate_report(second)
    assert second["history"]["fingerprint"]["id"] == first["history"]["fingerprint"]["id"]
    assert "missing-accelerate" not in [d["signature"] for d in second["diagnoses"]]
    (out,) = [x for x in second["ruled_out"] if x["signature"] == "missing-accelerate"]
    because = out["because"]
    assert "died the same way" in because
    assert "package.accelerate: absent -> 1.13.0" in because
    assert f"crash #{first['history']['id']}" in because and "this crash" in because
    # the remaining hypotheses lead
    assert _leading(second)[:2] == ["fx-tracing-flag-race", "host-oom-killed"]
    rec = second["history"]["recurrence"]
    assert rec["count"] == 2 and rec["previous"] == first["history"]["id"]
    assert rec["changed"]["package.accelerate"] == [None, "1.13.0"]
    assert any("died this way 2 times" in n for n in second["notes"])

    # a different failure: the race's RuntimeError reaches the log
    _crash(log, RACE, 1_800_001_200)
    third = _triage(capsys, log, "venv-accelerate-1.13.json", store_url)
    validate_report(third)
    assert third["diagnoses"][0]["signature"] == "fx-tracing-flag-race"
    assert third["history"]["fingerprint"]["id"] != first["history"]["fingerprint"]["id"]
    held = third["history"]["fix_held"]
    assert held["gone"] == first["history"]["fingerprint"]["id"]
    assert held["gone_count"] == 2 and held["now"] == "new"
    note = next(n for n in third["notes"] if "did not recur" in n)
    assert f"crash #{second['history']['id']}" in note and "2 crash(es)" in note
    assert "new failure" in note and "fx-tracing-flag-race" in note
    # nothing the snapshots show changed between crashes 2 and 3 (the log now has the
    # error): gone, but no fix is claimed
    assert held["changed"] == {} and "the fix held" not in note


def test_a_fix_that_held(tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The failure stops after a change the snapshots show, and the run fails otherwise."""
    log = tmp_path / "train.log"
    _crash(log, STORY, 1_800_000_000)
    _triage(capsys, log, "venv-no-accelerate.json", store_url)
    _crash(log, RACE, 1_800_000_600)
    after = _triage(capsys, log, "venv-accelerate-1.13.json", store_url)
    held = after["history"]["fix_held"]
    assert held["changed"]["package.accelerate"] == [None, "1.13.0"]
    note = next(n for n in after["notes"] if "did not recur" in n)
    assert "after package.accelerate absent -> 1.13.0" in note and "the fix held" in note


def test_the_story_in_the_console(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The default store (XDG_STATE_HOME) and the console view say it too."""
    log = tmp_path / "train.log"
    _crash(log, STORY, 1_800_000_000)
    assert main(["logs", str(log), "--evidence", str(SNAPS / "venv-no-accelerate.json")]) == 0
    capsys.readouterr()
    _crash(log, STORY, 1_800_000_600)
    assert (
        main(["logs", str(log), "--evidence", str(SNAPS / "venv-accelerate-1.13.json"), "--width", "200"])
        == 0
    )
    out = capsys.readouterr()
    assert out.err == ""
    ruled = out.out.split("Ruled out", 1)[1]
    assert "missing-accelerate: the run died the same way again" in ruled
    assert (Path(os.environ["XDG_STATE_HOME"]) / "triage" / "history.sqlite").is_file()


def test_retriaging_the_same_log_is_not_a_second_crash(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "train.log"
    _crash(log, STORY, 1_800_000_000)
    first = _triage(capsys, log, "venv-no-accelerate.json", store_url)
    # the same file, unchanged, looked at again with a newer snapshot: nothing recurred
    again = _triage(capsys, log, "venv-accelerate-1.13.json", store_url)
    assert again["history"]["id"] == first["history"]["id"]
    assert "recurrence" not in again["history"]
    assert any("not recorded again" in n for n in again["notes"])
    assert all("died the same way" not in x["because"] for x in again["ruled_out"])


def test_no_history_records_nothing(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "train.log"
    _crash(log, STORY, 1_800_000_000)
    assert main(["logs", str(log), "--format", "json", "--history-url", store_url, "--no-history"]) == 0
    assert "history" not in json.loads(capsys.readouterr().out)
    assert main(["history", "--history-url", store_url, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["crashes"] == 0
