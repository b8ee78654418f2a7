"""One declared vocabulary (triage.vocabulary): a rule that names an event, a `where`
key, a phase, a fact or a category the pipeline never produces is an error at load,
naming the file and the key with the closest known name; the retired constructs (a
second template syntax, a fact clause that says how the log ends, `priority`, `note`)
are rejected with what to write instead; and the vocabulary cannot drift from what the
structure stage and the snapshot facts really produce."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from triage.cli import main
from triage.engine import analyze_text, log_facts
from triage.engine.rules import load_rules
from triage.errors import RuleError
from triage.evidence import facts_from_snapshot
from triage.evidence.sources.packages import probe_args
from triage.ingest import Ingest, expand_paths
from triage.structure import Structurer
from triage.structure.tables import PHASES as PHASE_TABLE
from triage.vocabulary import (
    EVENTS,
    LOG_FACTS,
    PACKAGES,
    PHASES,
    VERSION_ONLY,
    categories,
    is_fact,
)

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "rules"
FIXTURES = ROOT / "fixtures"
SNAPSHOTS = sorted((ROOT / "tests" / "data" / "snapshots").glob("*.json")) + sorted(
    FIXTURES.glob("*/*/evidence.json")
)

LINE = """id = "widget-jam"
title = "Widget jammed"
category = "memory"
remedies = ["unjam the widget"]
checks = ["grep -n WidgetJamError {log}   # where it jammed"]

[[match]]
literal = "WidgetJamError"
regex = 'WidgetJamError: jammed'
"""
EXAMPLES = """
[examples]
fire = ["WidgetJamError: jammed at step 3"]
quiet = ["widget ok"]
"""


def load(tmp_path: Path, body: str, *, folder: str = "memory", top: str = "") -> RuleError:
    """Write one rule under tmp_path/rules/<folder>/ and expect the load to fail."""
    d = tmp_path / "rules" / folder
    d.mkdir(parents=True, exist_ok=True)
    (d / "widget-jam.toml").write_text(
        LINE.replace('category = "memory"\n', top or 'category = "memory"\n') + body + EXAMPLES
    )
    with pytest.raises(RuleError) as exc:
        load_rules([tmp_path / "rules"], include_default=False)
    assert "widget-jam.toml" in exc.value.path
    return exc.value


def test_unknown_event_names_the_key_and_the_closest_event(tmp_path: Path):
    e = load(tmp_path, '\n[[match]]\nkind = "event"\nevent = "torchrun-falure"\n')
    assert e.key == "match[1].event"
    assert "'torchrun-failure'" in e.problem and "did you mean" in e.problem


def test_where_key_the_event_does_not_carry(tmp_path: Path):
    e = load(
        tmp_path, '\n[[match]]\nkind = "event"\nevent = "child-exit"\nwhere = { sginal = ["SIGKILL"] }\n'
    )
    assert e.key == "match[1].where.sginal"
    assert "did you mean 'signal'" in e.problem
    # a key of another event is not one this event carries
    e = load(tmp_path, '\n[[match]]\nkind = "event"\nevent = "child-exit"\nwhere = { root_rank = [0] }\n')
    assert e.key == "match[1].where.root_rank" and "carries no 'root_rank'" in e.problem


def test_unknown_last_phase(tmp_path: Path):
    e = load(
        tmp_path, '\n[[match]]\nkind = "end"\nend_state = ["cut-mid-line"]\nlast_phase = ["modle-loading"]\n'
    )
    assert e.key == "match[1].last_phase"
    assert "did you mean 'model-loading'" in e.problem


def test_unknown_phase_of_a_line_clause(tmp_path: Path):
    e = load(
        tmp_path,
        "\n[[match]]\nliteral = \"WidgetSlipError\"\nregex = 'WidgetSlipError'\n"
        'phase = ["checkpoint-savng"]\n',
    )
    assert e.key == "match[1].phase"
    assert "did you mean 'checkpoint-saving'" in e.problem


def test_predicate_on_a_misspelt_package(tmp_path: Path):
    e = load(
        tmp_path,
        '\n[[evidence]]\nwhen = "package.acclerate >= 0.26"\neffect = "rule_out"\n'
        'because = "accelerate imports"\n',
    )
    assert e.key == "evidence[0].when"
    assert "'package.acclerate'" in e.problem and "did you mean 'package.accelerate'" in e.problem


def test_predicate_on_an_unknown_fact_or_package(tmp_path: Path):
    e = load(tmp_path, '\n[[match]]\nkind = "fact"\nwhen = "gpu.temperature > 90"\n')
    assert e.key == "match[1].when" and "unknown fact 'gpu.temperature'" in e.problem
    # a real package the probe never reads is not a fact either
    e = load(tmp_path, '\n[[evidence]]\nwhen = "package.left-pad present"\neffect = "note"\nbecause = "x"\n')
    assert e.key == "evidence[0].when" and "unknown fact 'package.left-pad'" in e.problem


def test_a_phase_compared_with_a_phase_that_does_not_exist(tmp_path: Path):
    e = load(
        tmp_path, '\n[[evidence]]\nwhen = "log.last_phase == modle-loading"\neffect = "note"\nbecause = "x"\n'
    )
    assert e.key == "evidence[0].when" and "did you mean 'model-loading'" in e.problem


def test_category_must_be_the_folder(tmp_path: Path):
    e = load(tmp_path, "", top='category = "memroy"\n')
    assert e.key == "category" and "'memory'" in e.problem
    # a rule at the top of a user's folder names a known category
    d = tmp_path / "flat"
    d.mkdir()
    (d / "widget-jam.toml").write_text(LINE.replace('"memory"', '"hardwre"') + EXAMPLES)
    with pytest.raises(RuleError) as exc:
        load_rules([d], include_default=False)
    assert exc.value.key == "category" and "did you mean 'hardware'" in exc.value.problem


def test_retired_priority_and_note(tmp_path: Path):
    e = load(tmp_path, "", top='category = "memory"\npriority = 2\n')
    assert e.key == "priority" and "retired" in e.problem
    e = load(
        tmp_path, '\n[[match]]\nliteral = "WidgetSlipError"\nregex = \'WidgetSlipError\'\nnote = "why"\n'
    )
    assert e.key == "match[1].note" and "retired" in e.problem


def test_a_fact_clause_that_says_how_the_log_ends_is_retired(tmp_path: Path):
    e = load(
        tmp_path,
        '\n[[match]]\nkind = "fact"\n'
        'when = "log.truncated and log.last_phase == compiling and inductor_cache.cold"\n',
    )
    assert e.key == "match[1].when"
    assert 'kind = "end"' in e.problem and "end_state" in e.problem and "last_phase" in e.problem


def test_the_retired_template_form_and_unknown_template_names(tmp_path: Path):
    e = load(
        tmp_path,
        '\n[[evidence]]\nwhen = "package.accelerate present"\neffect = "note"\n'
        'because = "accelerate {package.accelerate} imports"\n',
    )
    assert e.key == "evidence[0].because" and "{fact:package.accelerate}" in e.problem
    e = load(
        tmp_path,
        '\n[[evidence]]\nwhen = "package.accelerate present"\neffect = "note"\n'
        'because = "accelerate {fact:package.acclerate} imports"\n',
    )
    assert e.key == "evidence[0].because" and "did you mean 'package.accelerate'" in e.problem
    d = tmp_path / "rules" / "memory"
    (d / "widget-jam.toml").write_text(
        LINE.replace('["unjam the widget"]', '["pip install {match:module|<module>}"]') + EXAMPLES
    )
    with pytest.raises(RuleError) as exc:
        load_rules([tmp_path / "rules"], include_default=False)
    assert exc.value.key == "remedies[0]"
    assert "no clause's regex has a group named 'module'" in exc.value.problem


def test_rules_lint_reports_the_file_and_the_key(tmp_path: Path, capsys):
    d = tmp_path / "rules" / "memory"
    d.mkdir(parents=True)
    (d / "widget-jam.toml").write_text(
        LINE + '\n[[match]]\nkind = "end"\nend_state = ["cut-mid-line"]\n'
        'last_phase = ["modle-loading"]\n' + EXAMPLES
    )
    assert main(["rules", "lint", "--rules", str(tmp_path / "rules"), "--only"]) == 1
    out = capsys.readouterr()
    text = out.out + out.err
    assert "widget-jam.toml: match[1].last_phase: unknown phase 'modle-loading'" in text


def test_because_fills_the_one_template_syntax():
    """A rule's `because` is filled by `{fact:NAME|default}`, like checks and remedies."""
    d = RULES / "memory"
    likely = LINE.replace("jammed'\n", 'jammed\'\nconfidence = "likely"\n')
    rule_text = (
        likely + '\n[[evidence]]\nwhen = "package.accelerate present"\neffect = "rule_out"\n'
        'because = "accelerate {fact:package.accelerate} in {fact:python.executable}; '
        'torch {fact:torch.version|(not recorded)}"\n' + EXAMPLES
    )
    import tomllib

    from triage.engine.rules import parse_rule

    rule = parse_rule(tomllib.loads(rule_text), str(d / "widget-jam.toml"))
    # the clause is a likely guess from the log, so the snapshot rules it out
    assert rule.clauses[0].confidence.name == "LIKELY"
    facts = {"package.accelerate": "1.13.0", "python.executable": "/root/venv/bin/python"}
    rep = analyze_text("step 1\nWidgetJamError: jammed\n", rules=[rule], facts=facts)
    assert rep.diagnoses == ()
    assert [r.because for r in rep.ruled_out] == [
        "accelerate 1.13.0 in /root/venv/bin/python; torch (not recorded)"
    ]


def test_shipped_rules_speak_the_one_template_syntax():
    for r in load_rules():
        for e in r.evidence:
            assert "{fact:" in e.because or "{" not in e.because, (r.path, e.because)


# -- the vocabulary cannot drift ---------------------------------------------------------


def test_phases_are_the_structure_table():
    assert tuple(name for name, _ in PHASE_TABLE) == PHASES


@pytest.mark.parametrize("snap", SNAPSHOTS, ids=[str(p.relative_to(ROOT)) for p in SNAPSHOTS])
def test_every_snapshot_fact_is_declared(snap: Path):
    facts = facts_from_snapshot(json.loads(snap.read_text(encoding="utf-8")))
    assert [f for f in facts if not is_fact(f)] == []


def test_log_facts_are_declared():
    st = Structurer().finish([])
    assert tuple(log_facts(st, [])) == LOG_FACTS


def test_every_event_the_structure_emits_on_the_fixtures_is_declared():
    seen: dict[str, set[str]] = {}
    logs = sorted(FIXTURES.glob("*/*/input.log"))
    assert logs
    for log in logs:
        ingest = Ingest(expand_paths([str(log)]))
        s = Structurer()
        for line in ingest:
            s.feed(line)
        for ev in s.finish(ingest.sources).events:
            seen.setdefault(ev.kind, set()).update(ev.data)
    assert set(seen) <= set(EVENTS), sorted(set(seen) - set(EVENTS))
    for kind, keys in seen.items():
        assert keys <= EVENTS[kind], (kind, sorted(keys - EVENTS[kind]))
    # the fixtures exercise the events rules use most
    assert {"child-exit", "torchrun-failure", "cpp-exception"} <= set(seen)


def test_categories_are_the_rule_folders():
    cats = categories(RULES)
    assert cats and all(r.category in cats for r in load_rules())
    assert {r.category for r in load_rules()} == set(cats)


def test_the_probe_reads_the_vocabulary_package_list():
    """One list: the probe has none of its own, the caller hands it the vocabulary's."""
    probe = (ROOT / "triage" / "evidence" / "probe.py").read_text(encoding="utf-8")
    assert "PACKAGES = [" not in probe and "VERSION_ONLY = [" not in probe
    args = probe_args()
    assert f"--packages={','.join(f'{d}:{m}' for d, m in PACKAGES)}" in args
    assert f"--version-only={','.join(VERSION_ONLY)}" in args
    assert is_fact("package.flash-attn") and is_fact("installed.nvidia-nccl-cu12")
