"""The JSON report of every fixture and corpus log, pinned.

A restructuring keeps every behaviour: this test hashes the canonical JSON report of
each fixture and each corpus log and compares it with tests/data/report-digests.json.
A change to any diagnosis, evidence line, note, metric or end state fails here, naming
the logs whose report changed. When a change is meant, refresh the file with
TRIAGE_UPDATE_GOLDEN=1 and say in the commit why the reports changed.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.accuracy_support import acc
from triage.engine import analyze, get_rules
from triage.fixtures.runner import discover, run_fixture
from triage.report import render_to_string

ROOT = Path(__file__).resolve().parent.parent
DIGESTS = ROOT / "tests" / "data" / "report-digests.json"
# every corpus under tests/ (a new batch is pinned the day it lands)
CORPORA = sorted(p.name for p in (ROOT / "tests").glob("corpus*") if (p / "logs").is_dir())
VOLATILE = ("history",)  # what the user's own run history adds; off in tests, but never pinned


def canonical(report: Any) -> str:
    data = json.loads(render_to_string(report, "json"))
    for key in VOLATILE:
        data.pop(key, None)
    # paths are given relative to the checkout (see `current`): a log's own text may name
    # where it was recorded (/work/main/.venv/...), which must stay as it is
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


def summary(report: Any) -> str:
    top = report.diagnoses[0] if report.diagnoses else None
    return f"{top.signature}/{top.confidence.label}" if top else "-"


def current() -> dict[str, dict[str, str]]:
    rules = get_rules()
    out: dict[str, dict[str, str]] = {}
    # relative paths (the test runs in the checkout's root): the reports are the same
    # wherever the repository is cloned
    for fx in discover(Path("fixtures")):
        rep = run_fixture(fx, rules)
        out[f"fixtures/{fx.name}"] = _entry(rep)
    for name in CORPORA:
        for label in acc.load_labels(Path("tests") / name):
            rep = analyze([str(label.path)], rules=rules, facts=acc._facts(label))
            out[str(label.path)] = _entry(rep)
    return out


def _entry(rep: Any) -> dict[str, str]:
    digest = hashlib.sha256(canonical(rep).encode("utf-8")).hexdigest()[:16]
    return {"sha256": digest, "top": summary(rep)}


def test_every_report_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    got = current()
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        DIGESTS.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if not DIGESTS.is_file():
        pytest.fail(f"{DIGESTS.name} missing: run with TRIAGE_UPDATE_GOLDEN=1 to write it")
    want = json.loads(DIGESTS.read_text(encoding="utf-8"))
    gone = sorted(set(want) - set(got))
    new = sorted(set(got) - set(want))
    changed = sorted(k for k in set(got) & set(want) if got[k]["sha256"] != want[k]["sha256"])
    lines = [f"{k}: {want[k]['top']} -> {got[k]['top']}" for k in changed[:15]]
    lines += [f"{k}: no longer analysed" for k in gone[:5]] + [f"{k}: not pinned" for k in new[:5]]
    assert not (gone or new or changed), (
        f"{len(changed)} reports changed, {len(gone)} gone, {len(new)} new "
        "(TRIAGE_UPDATE_GOLDEN=1 refreshes when meant):\n" + "\n".join(lines)
    )
    assert len(got) > 800  # every fixture and corpus log, not a sample
