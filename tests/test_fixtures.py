"""The one hook that runs every regression fixture in fixtures/."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.engine import get_rules
from triage.fixtures import check_fixture, discover
from triage.report.json import report_dict

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
FIXTURES = discover(ROOT)


@pytest.mark.parametrize("fx", FIXTURES, ids=[f.name for f in FIXTURES])
def test_fixture(fx, validate_report):
    result = check_fixture(fx, get_rules())
    assert result.report is not None
    validate_report(report_dict(result.report))
    assert result.ok, "\n".join(result.problems)


def test_every_fixture_names_its_source():
    for fx in FIXTURES:
        src = fx.expected["source"].lower()
        assert any(w in src for w in ("recorded", "composed", "script", "repro")), fx.name
