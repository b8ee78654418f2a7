"""A watched run's final triage is recorded, with the run the watch names."""

from __future__ import annotations

from pathlib import Path

from triage.cli import build_parser
from triage.history.store import open_store
from triage.watch.cli import build_session

ROOT = Path(__file__).resolve().parents[2]
RACE = (ROOT / "fixtures" / "fx-tracing-flag-race" / "002-story-2to1-glued-with-accelerate"
        / "input.log").read_bytes()


def _watch_once(log: Path, url: str, *extra: str) -> dict:
    args = build_parser().parse_args(["watch", str(log), "--no-tui", "--no-snapshot",
                                      "--history-url", url, *extra])
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
