"""LiveTriage.progress() is what the report says: for every fixture log fed through the
live path (chunks small enough to be read whole), the phase and the latest step, loss
and tok/s are the full report's `end_state.last_phase` and `metrics`; and a live report
leaves the live state as it was (no copy: `Analysis.report` is pure)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from triage.engine import analyze, get_rules
from triage.structure import Progress
from triage.watch.follow import LineSplitter
from triage.watch.live import PROGRESS_ALL, LiveTriage

ROOT = Path(__file__).resolve().parents[2]
LOGS = sorted((ROOT / "fixtures").glob("*/*/input.log"))
RULES = get_rules()


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _live(log: Path, report_every: int = 0) -> LiveTriage:
    live, sp = LiveTriage(RULES, str(log)), LineSplitter()
    data = log.read_bytes()
    step = 4096
    for n, i in enumerate(range(0, len(data), step)):
        _blob, lines = sp.feed(data[i : i + step])
        for j in range(0, len(lines), PROGRESS_ALL):  # each piece is read whole
            part = lines[j : j + PROGRESS_ALL]
            live.feed(b"".join(x + b"\n" for x in part), part)
        if report_every and n % report_every == 0:
            live.report()
    live.feed_final(sp.flush())
    return live


@pytest.mark.parametrize("log", LOGS, ids=[str(p.parent.relative_to(ROOT)) for p in LOGS])
def test_live_progress_agrees_with_the_report(log: Path):
    p = _live(log).progress()
    assert isinstance(p, Progress)
    rep = analyze([str(log)], rules=RULES)
    m = rep.metrics
    want = (rep.end_state.last_phase, m.get("last_step"), m.get("loss_last"), m.get("toks_last"))
    got = (p.phase, p.step, p.loss, p.toks)
    assert all(_same(a, b) for a, b in zip(got, want, strict=True)), (got, want)


@pytest.mark.parametrize("log", LOGS[::7], ids=[str(p.parent.relative_to(ROOT)) for p in LOGS[::7]])
def test_live_reports_leave_the_state_alone(log: Path):
    # repr: a NaN loss is equal to itself there
    assert repr(_live(log, report_every=1).report()) == repr(_live(log).report())


def test_live_lines_take_the_rank_in_the_file_name(tmp_path: Path) -> None:
    """A watched `rank3.log` reads as `triage logs rank3.log` does: its unprefixed lines
    are rank 3 at once (a live feed cannot hold lines back to decide), until a line
    carries another rank."""
    log = tmp_path / "rank3.log"
    log.write_bytes(b"step 10 loss 2.5\ntorch.OutOfMemoryError: CUDA out of memory.\n")
    live = _live(log)
    rep = live.report()
    assert rep.sources[0].ranks == (3,)
    assert analyze([str(log)], rules=RULES).sources[0].ranks == (3,)
    assert rep.diagnoses and rep.diagnoses[0].signature == "cuda-oom"
    assert all(e.rank == 3 for e in rep.diagnoses[0].evidence if e.line is not None)
