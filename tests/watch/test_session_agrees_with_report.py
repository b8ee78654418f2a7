"""The watch screen and the report agree on where the run is: for every fixture log,
the phase, step, loss and tok/s the run panel and status line show (the session's
RunState) are the report's `end_state.last_phase` and `metrics`.

The watcher runs headless over a file source (no tmux): it reads the whole log as a
live run would, then is stopped, which feeds the unfinished last line too. A log that
ends with a newline must agree already while the run is live."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from triage.engine import analyze, get_rules
from triage.watch.gpu import GpuSample
from triage.watch.session import FileSource, RunState, WatchSession

ROOT = Path(__file__).resolve().parents[2]
LOGS = sorted((ROOT / "fixtures").glob("*/*/input.log"))
RULES = get_rules()


class NoGpus:
    """No NVML: the screen's numbers do not depend on the machine."""

    def sample(self) -> GpuSample:
        return GpuSample(unknown="NVML not available (test)")


def _same(a: object, b: object) -> bool:
    """Equal, with NaN equal to NaN (a diverged loss is the same on both sides)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _screen(run: RunState) -> dict[str, object]:
    return {"phase": run.phase, "step": run.step, "loss": run.loss, "toks": run.toks}


def _report(log: Path) -> dict[str, object]:
    rep = analyze([str(log)], rules=RULES)
    m = rep.metrics
    return {
        "phase": rep.end_state.last_phase,
        "step": m.get("last_step"),
        "loss": m.get("loss_last"),
        "toks": m.get("toks_last"),
    }


def _differences(screen: dict[str, object], report: dict[str, object]) -> dict[str, object]:
    return {k: (screen[k], report[k]) for k in report if not _same(screen[k], report[k])}


def _watch(log: Path) -> tuple[dict[str, object], dict[str, object]]:
    """What the screen shows once the whole log was read (live), and after the stop."""
    clock = iter(range(10**6))
    session = WatchSession(
        FileSource(log),
        rules=RULES,
        clock=lambda: float(next(clock)),
        snapshot=False,
        gpus=NoGpus(),  # type: ignore[arg-type]
    )
    session.start()
    while True:  # a poll reads at most a follower's read size
        before = session.follower.position
        session.poll()
        if session.follower.position == before:
            break
    live = _screen(session.run)
    session.stop()
    return live, _screen(session.run)


def test_fixtures_are_there() -> None:
    assert len(LOGS) >= 100


@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_screen_and_report_agree(log: Path) -> None:
    report = _report(log)
    live, final = _watch(log)
    assert not _differences(final, report), "after the stop"
    if log.read_bytes().endswith(b"\n"):
        assert not _differences(live, report), "while live"


def test_a_step_line_that_mentions_a_checkpoint_is_training(tmp_path: Path) -> None:
    """The case the review found: the screen said checkpoint-saving, the report said
    training. Both read the line with one reader now."""
    log = tmp_path / "train.log"
    log.write_text("Loading 5 target models...\nstep 1200 loss 1.93 | Saving checkpoint\n")
    live, final = _watch(log)
    assert live == final == _report(log) == {"phase": "training", "step": 1200, "loss": 1.93, "toks": None}
