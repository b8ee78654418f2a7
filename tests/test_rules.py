"""Rules load, and every rule's inline examples fire or stay quiet as declared."""

from __future__ import annotations

import pytest

from triage.engine import get_rules
from triage.engine.catalog import SIGNATURES
from triage.engine.lint import check_rule_examples, lint_rule

RULES = get_rules()


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_examples(rule):
    assert check_rule_examples(rule) == []


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_lint(rule):
    assert lint_rule(rule, check_examples=False) == []


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_has_remedies_and_checks(rule):
    assert rule.remedies, f"{rule.id}: no remedies"
    assert rule.checks, f"{rule.id}: no checks"


def test_rule_ids_are_canonical_or_new():
    canonical = {s for s, _ in SIGNATURES}
    for r in RULES:
        for target in r.explains:
            assert target in canonical or target in {x.id for x in RULES}, (r.id, target)


def test_rule_literals_are_selective():
    """No common-word literals; none that hits many lines of the healthy fixtures."""
    from triage.engine.lint import _selectivity

    assert _selectivity(RULES) == []


def test_lines_of_the_same_second_keep_their_order():
    """A timestamp on every line with one time for all of them (a wrapper stamping each line
    with the second it read it) must not reorder cause and consequence: the rank's own error
    still leads srun's and the agent's SIGTERMs that came after it (a real corpus_real9 log)."""
    from pathlib import Path

    from triage.engine import analyze_text

    log = (
        Path(__file__).parent
        / "corpus_real9/logs/unc_slurm_torchrun_straggler_example_cuda_device_busy_unavailable.log"
    )
    text = log.read_text()
    stamped = "".join(f"[2026-12-02 03:44:01] {line}\n" for line in text.splitlines())
    tops = []
    for t in (text, stamped):
        rep = analyze_text(t, rules=get_rules())
        top = rep.diagnoses[0]
        tops.append((top.signature, top.confidence.label, top.role))
    assert tops[0] == tops[1] == ("unclassified-error", "possible", "root-cause")
