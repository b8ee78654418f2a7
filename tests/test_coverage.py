"""Every canonical signature has a rule and at least two passing fixtures (the
fixtures themselves are checked by test_fixtures.py)."""

from __future__ import annotations

from pathlib import Path

from triage.engine.catalog import SIGNATURES, coverage, fixture_counts

ROOT = Path(__file__).resolve().parent.parent


def test_every_canonical_signature_has_a_rule_and_two_fixtures():
    rows = {r["signature"]: r for r in coverage()}
    counts = fixture_counts(ROOT / "fixtures")
    lacking = [s for s, _ in SIGNATURES if not rows[s]["rule"] or counts.get(s, 0) < 2]
    assert lacking == []


def test_healthy_fixtures_exist():
    assert fixture_counts(ROOT / "fixtures").get("none", 0) >= 3
