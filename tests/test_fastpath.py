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
    from triage.ingest.supersets import hs_pieces

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
    from triage.ingest.supersets import hs_pieces

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


def _stalled_run(path: Path, steps: int = 1000, ranks: int = 8) -> tuple[float, float]:
    """A timestamped 8-rank log (a step line of each rank, then three NCCL INFO lines,
    0.4 s a step) with a 30-minute stall of every rank in the middle of the body and a
    loss spike on rank 5 a quarter after it, far from the head, the tail and the 1 MiB
    sample points; about 3 MiB. Returns the stall (s) and the spike."""
    import datetime
    import random

    rng = random.Random(7)
    t = datetime.datetime(2026, 11, 29, 12, 0, 0)
    stall_s, spike = 1800.0, 9.75
    out = []
    for step in range(steps):
        if step == steps // 2:
            t += datetime.timedelta(seconds=stall_s)
        for r in range(ranks):
            ts = t.strftime("%Y-%m-%d %H:%M:%S") + f",{t.microsecond // 1000:03d}"
            loss = spike if (step, r) == (steps * 3 // 4, 5) else 2.0 - step * 5e-4 + rng.random() * 0.01
            out.append(
                f"[rank{r}]:[{ts}] INFO train: step {step} loss {loss:.4f} grad_norm 0.93 tok/s 21400\n"
            )
            for c in range(3):
                out.append(
                    f"[rank{r}]:[{ts}] INFO nccl: NCCL INFO Channel {c:02d}/32 : 0 1 2 3 via P2P/CUMEM/read\n"
                )
            t += datetime.timedelta(milliseconds=50)
    path.write_text("".join(out))
    return stall_s, spike


def _picture(rep):
    """What the pictures and the hang reading take from a report: the extremes of each
    series over its ranks, the last steps, the metrics, the verdict."""
    ys: dict[str, list[float]] = {}
    for s in rep.series:
        ys.setdefault(s.name, []).extend(y for _x, y in s.points)
    return (
        {name: (max(v), min(v)) for name, v in ys.items()},
        [(sp.rank, sp.last_step) for sp in rep.timeline],
        {k: rep.metrics[k] for k in ("last_step", "loss_first", "loss_last", "nonfinite_loss", "toks_last")},
        summary(rep),
    )


@pytest.mark.parametrize("with_native", [True, False], ids=["native", "pure-python"])
def test_fast_path_series_keeps_a_mid_run_stall(tmp_path, monkeypatch, with_native):
    """The series the fast path reads shows the mid-run stall as the full read's does:
    its step time is read from the two lines the gap is between (a step-time series'
    largest value is the stall's, not a mean over the steps between two samples), with
    the same last steps, metrics and verdict. The one-line loss spike between the step
    samples is in it too where the native module reads every value (it reads the lines
    of each MiB's extremes); without it, only in the full read's series (bench/README.md,
    "## scan": what reading every loss value in Python would cost)."""
    import triage.ingest.scan as scan_mod

    if with_native and scan_mod.native is None:
        pytest.skip("the native module is not built here")
    if not with_native:
        monkeypatch.setattr(scan_mod, "native", None)
    log = tmp_path / "train.log"
    stall_s, spike = _stalled_run(log)
    full = analyze([str(log)], rules=get_rules(), fast=False)
    fast = analyze([str(log)], rules=get_rules(), fast=True)
    assert any("were skipped" in n for n in fast.notes)  # it is the fast path
    series, last_steps, metrics, verdict = _picture(full)
    assert series["step_time_s"][0] >= stall_s  # the full read's series holds both
    assert series["loss"][0] == spike
    got = _picture(fast)
    assert got[0]["step_time_s"] == series["step_time_s"]
    assert got[0]["loss"][1] == series["loss"][1]  # the smallest loss (the tail's)
    assert (got[0]["loss"][0] == spike) is with_native
    assert got[1:] == (last_steps, metrics, verdict)
    steps = [s for s in fast.series if s.name == "loss"]
    assert len(steps) == 8 and all(s.count >= 8 for s in steps)  # every rank's curve
