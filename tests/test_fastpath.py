"""The fast path (windows around literal hits) gives the same verdict as reading
every line, on every fixture, and keeps true line numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.engine import analyze, get_rules
from triage.fixtures import discover
from triage.ingest.scan import Gap, LiteralScanner, windows

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
FIXTURES = discover(ROOT)


def summary(rep):
    return [(d.signature, d.confidence, d.role, d.explained_by) for d in rep.diagnoses], rep.end_state.kind


@pytest.mark.parametrize("fx", FIXTURES, ids=[f.name for f in FIXTURES])
def test_same_verdict_with_and_without_prefilter(fx):
    from triage.evidence import facts_from_snapshot, load_snapshot

    facts = facts_from_snapshot(load_snapshot(str(fx.evidence))) if fx.evidence else None
    slow = analyze([str(fx.log)], rules=get_rules(), facts=facts, fast=False)
    fast = analyze([str(fx.log)], rules=get_rules(), facts=facts, fast=True)
    assert summary(fast) == summary(slow)


@pytest.mark.parametrize("engine", ["python", "ahocorasick_rs", "hyperscan"])
def test_windows_keep_line_numbers(engine):
    try:
        sc = LiteralScanner(["NEEDLE"], ["icase-hit"], engine=engine)
    except RuntimeError:
        pytest.skip(f"{engine} not installed")
    if sc.engine != engine:
        pytest.skip(f"{engine} not installed")
    lines = [f"line {i}" for i in range(1, 20001)]
    lines[9999] = "a NEEDLE here"
    lines[15000] = "an ICASE-HIT here"
    data = ("\n".join(lines) + "\npartial").encode()
    chunks = [data[i : i + 7000] for i in range(0, len(data), 7000)]
    got = {}
    gaps = 0
    for item in windows(iter(chunks), sc, before=3, after=2, head=5, tail_bytes=100):
        if isinstance(item, Gap):
            gaps += 1
            continue
        got[item.lineno] = item.data.decode()
    for ln, text in got.items():
        expected = lines[ln - 1] if ln <= len(lines) else "partial"
        assert text == expected, ln
    assert 10000 in got and 9997 in got and 10002 in got
    assert 15001 in got
    assert 1 in got and 5 in got
    assert got[20001] == "partial"
    assert gaps >= 3
    assert len(got) < 200


def test_scanner_engines_agree():
    data = b"xx out of memory yy\nTraceback (most recent call last)\nfoo\n" * 100
    res = {}
    for engine in ("python", "ahocorasick_rs", "hyperscan"):
        try:
            sc = LiteralScanner(["out of memory", "Traceback"], [], engine=engine)
        except RuntimeError:
            continue
        res[engine] = {data.rfind(b"\n", 0, o) for o in sc.offsets(data)}
    assert len({frozenset(v) for v in res.values()}) == 1


def test_hyperscan_pieces_find_every_line_the_pattern_finds():
    """hyperscan runs each confirm pattern as trimmed pieces (`hs_pieces`): on every
    fixture and corpus line, a piece matches wherever the whole pattern does, and each
    piece compiles where the whole did."""
    import re

    from triage.engine.match import Matcher
    from triage.ingest.scan import hs_pieces

    _plain, _iplain, confirm = Matcher(get_rules()).scan_literals()
    root = ROOT.parent / "tests"
    lines = [
        ln
        for p in [*ROOT.glob("*/*/input.log"), *root.glob("corpus*/**/*.log")]
        for ln in p.read_bytes().splitlines()
    ]
    trimmed = 0
    for c in confirm:
        flags = re.IGNORECASE if c.icase else 0
        try:
            whole = re.compile(c.pattern.encode(), flags)
        except re.error:
            continue
        pieces, icase = hs_pieces(c.pattern)
        parts = [re.compile(p.encode(), flags | (re.IGNORECASE if icase else 0)) for p in pieces]
        trimmed += sum(p not in c.pattern.split("|") for p in pieces)
        for ln in lines:
            if whole.search(ln):
                assert any(p.search(ln) for p in parts), (c.pattern, ln)
    assert trimmed >= 2  # nan-loss's and the loss-is-nan clause's common heads are gone


def test_hs_pieces_trim_only_an_unbounded_head_with_a_literal_after_it():
    from triage.ingest.scan import hs_pieces

    assert hs_pieces(r"(?:loss|grad[\w\x80-\xff]*) (?:is|was) not finite|x+y") == (
        [" (?:is|was) not finite", "x+y"],
        False,
    )
    assert hs_pieces(r"(?i)loss[ ]*=[ ]*(?:nan|inf)") == (["loss[ ]*=[ ]*(?:nan|inf)"], True)
    assert hs_pieces(r"[Ll]oss(?:b|c\d+)? is (?:nan|inf)") == ([" is (?:nan|inf)"], False)
    assert hs_pieces(r"lib(?:a|b\w*): cannot open shared object") == (
        [r"lib(?:a|b\w*): cannot open shared object"],
        False,
    )
