"""The engine's side, pure: the history's finding reaches the reasoning as a fact
(`history.recurrence`), and only what a hypothesis depends on can rule it out."""

from __future__ import annotations

from pathlib import Path

from triage import evidence
from triage.engine import analyze_text
from triage.engine.reason import RECURRENCE_FACT

SNAPS = Path(__file__).resolve().parents[2] / "tests" / "data" / "snapshots"
STORY = "Loading 5 target models...\nTarget 0 on cuda:0...\nT"


def _facts(snapshot: str, changed: dict) -> dict:
    facts = evidence.facts_from_snapshot(evidence.load_snapshot(str(SNAPS / snapshot)))
    facts[RECURRENCE_FACT] = {
        "previous": "crash #1 (2026-12-01 20:01 UTC, n)",
        "current": "this crash (2026-12-01 20:09 UTC)",
        "fingerprint": "end-abc",
        "changed": changed,
    }
    return facts


def _signatures(report) -> list[str]:
    return [d.signature for d in report.diagnoses]


def test_a_changed_dependency_rules_out() -> None:
    # the snapshot of crash 2 alone would keep missing-accelerate (accelerate still absent);
    # the history says the compile cache went from cold to warm and the run died the same way
    facts = _facts(
        "venv-no-accelerate.json", {"inductor_cache.cold": [True, False], "inductor_cache.entries": [0, 41]}
    )
    facts["inductor_cache.cold"] = False
    facts[RECURRENCE_FACT]["suspected"] = ["missing-accelerate", "fx-tracing-flag-race"]
    rep = analyze_text(STORY, facts=facts)
    assert "fx-tracing-flag-race" not in _signatures(rep)
    # with a warm cache the race's clause does not even fire: the earlier crash's
    # hypothesis is still named as ruled out, with the reason
    (out,) = [x for x in rep.ruled_out if x.signature == "fx-tracing-flag-race"]
    assert out.because.startswith("suspected in the earlier crash; the run died the same way")
    assert "inductor_cache.cold: true -> false" in out.because
    assert "crash #1" in out.because and "end-abc" in out.because
    assert "missing-accelerate" in _signatures(rep)  # accelerate did not change


def test_an_unrelated_change_rules_nothing_out() -> None:
    rep = analyze_text(
        STORY, facts=_facts("venv-no-accelerate.json", {"driver.version": ["550.54", "560.35"]})
    )
    assert rep.ruled_out == ()
    assert _signatures(analyze_text(STORY, facts=_facts("venv-no-accelerate.json", {}))) == _signatures(rep)


def test_the_logs_own_message_outranks_the_history() -> None:
    log = "ModuleNotFoundError: No module named 'accelerate'"
    rep = analyze_text(log, facts=_facts("venv-no-accelerate.json", {"package.accelerate": ["0.20.0", None]}))
    assert _signatures(rep)[0] == "missing-accelerate"
    assert rep.diagnoses[0].confidence.label == "confirmed"


def test_a_change_that_now_supports_it_rules_nothing_out() -> None:
    # crash 2's kernel log gained the OOM kill: that confirms, it does not rule out
    facts = _facts("host-oom.json", {"kernel.oom_killer": [None, "Killed process 4242 (python)"]})
    rep = analyze_text("step 10 loss 2.0\nKilled\n", facts=facts)
    assert "host-oom-killed" in _signatures(rep)
    assert all(x.signature != "host-oom-killed" for x in rep.ruled_out)
