"""The textual screen, driven by Pilot on a fixed-size terminal."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("textual")

from tests.watch.conftest import SCRIPTS
from triage.tui.app import EvidenceScreen, WatchApp
from triage.tui.widgets import LogPane
from triage.watch.gpu import GpuSample
from triage.watch.session import FileSource, WatchSession

GOLDEN = Path(__file__).parent / "golden" / "tui.txt"


class NoGpus:
    """A fixed GPU answer, so the screen does not depend on the test machine."""

    def sample(self) -> GpuSample:
        return GpuSample(unknown="NVML not available (test)")


def fx_run(tmp_path: Path, steps: int = 300) -> Path:
    """The real output of scripts/fx_steps.py: step lines, then the FX RuntimeError."""
    p = subprocess.run(
        [sys.executable, str(SCRIPTS / "fx_steps.py"), str(steps)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    log = tmp_path / "train.log"
    # the traceback's file paths name the checkout; make them stable for the snapshot
    log.write_bytes((p.stdout + p.stderr).replace(str(SCRIPTS).encode(), b"/scripts"))
    return log


def make_app(log: Path) -> WatchApp:
    session = WatchSession(
        FileSource(log),
        snapshot=False,
        gpus=NoGpus(),  # type: ignore[arg-type]
        clock=lambda: 100.0,
        report_interval=0,
    )
    return WatchApp(session, clock=lambda: 100.0, clock_text=False, timers=False)


def screen_text(app: WatchApp) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join(s.text.rstrip() for s in strips)


def test_tui_shows_the_run_and_its_diagnosis(tmp_path: Path) -> None:
    asyncio.run(_test_tui_shows_the_run_and_its_diagnosis(tmp_path))


async def _test_tui_shows_the_run_and_its_diagnosis(tmp_path: Path) -> None:
    app = make_app(fx_run(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        app.poll_now()
        await pilot.pause()
        text = screen_text(app)
        assert "fx-tracing-flag-race" in text and "confirmed" in text
        assert "diagnosis: fx-tracing-flag-race" in text  # the alert
        assert "step 300" in text  # run panel / status line
        assert "N/A" in text  # GPU panel without NVML
        footer = text.splitlines()[-1]
        for key in ("q quit", "/ search", "e evidence", "s snapshot", "r re-triage"):
            assert key in footer
        log = app.query_one(LogPane)
        matched = [ln for ln, t in log.rows if ln and "symbolically trace" in t]
        assert matched
        # e: jump to the evidence line, which is in the tail
        await pilot.press("e")
        await pilot.pause()
        assert log.auto_scroll is False
        # / search, then enter: the log scrolls to the last line holding the text
        await pilot.press("slash")
        await pilot.press(*"step 150 ")
        await pilot.press("enter")
        await pilot.pause()
        assert (
            app.search_at is not None
            and "step 150 " in dict((ln, t) for ln, t in log.rows if ln)[app.search_at] + " "
        )
        await pilot.press("escape")
        await pilot.pause()
        assert log.auto_scroll is True


def test_evidence_outside_the_tail_opens_the_evidence_view(tmp_path: Path) -> None:
    asyncio.run(_test_evidence_outside_the_tail_opens_the_evidence_view(tmp_path))


async def _test_evidence_outside_the_tail_opens_the_evidence_view(tmp_path: Path) -> None:
    app = make_app(fx_run(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        app.poll_now()
        await pilot.pause()
        app.query_one(LogPane).rows.clear()  # as if the line had scrolled out of the tail
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, EvidenceScreen)
        assert "symbolically trace" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, EvidenceScreen)


def test_tui_screen_snapshot(tmp_path: Path) -> None:
    asyncio.run(_test_tui_screen_snapshot(tmp_path))


async def _test_tui_screen_snapshot(tmp_path: Path) -> None:
    """The whole screen as text, fixed size, no clock and no cursor: it must not change
    unless the layout is meant to (TRIAGE_UPDATE_GOLDEN=1 rewrites the golden file)."""
    app = make_app(fx_run(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        app.poll_now()
        await pilot.pause()
        first = screen_text(app)
        app.poll_now()  # nothing new: the same screen
        await pilot.pause()
        assert screen_text(app) == first
    text = first.replace(str(tmp_path), "<tmp>")
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text + "\n")
    assert text + "\n" == GOLDEN.read_text()


def test_tui_on_the_tmux_run(tmux, tmp_path: Path) -> None:
    """The acceptance run (3000 steps, then the FX error) watched through the TUI."""
    asyncio.run(_tui_on_the_tmux_run(tmux, tmp_path))


async def _tui_on_the_tmux_run(tmux, tmp_path: Path) -> None:
    import time

    from tests.watch.conftest import PY
    from triage.watch.session import TmuxSource

    tmux.new_session("train", f"{PY} {SCRIPTS / 'fx_steps.py'} 3000")
    source = TmuxSource("train", tmp_path / "cap.log", socket=tmux.socket)
    session = WatchSession(source, snapshot=False, gpus=NoGpus())  # type: ignore[arg-type]
    app = WatchApp(session, timers=False)
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 60
        while not session.done and time.monotonic() < deadline:
            app.poll_now()
            await pilot.pause(0.1)
        await pilot.pause()
        text = screen_text(app)
        assert session.done
        assert "fx-tracing-flag-race" in text and "confirmed" in text
        # tmux's status, or the unreaped zombie's from /proc when tmux has none
        assert session.run.ended is not None and session.run.ended.exit_status == 1
        assert "ended: exit 1" in text.splitlines()[0]
        assert "run ended: exit 1" in text
        assert "pane %" in text.splitlines()[0]


def test_tui_on_a_sigkilled_pane(tmux, tmp_path: Path) -> None:
    """The dead pane of the story through the TUI: the header shows the SIGKILL, the
    last partial line stays, the details pane lists the hypotheses' checks and what
    was ruled out, and ] moves to the next hypothesis."""
    asyncio.run(_tui_on_a_sigkilled_pane(tmux, tmp_path))


async def _tui_on_a_sigkilled_pane(tmux, tmp_path: Path) -> None:
    import signal
    import time

    from tests.watch.conftest import PY
    from triage.tui.widgets import DetailsPanel
    from triage.watch.session import TmuxSource

    tmux.new_session("story", f"{PY} {SCRIPTS / 'story_steps.py'} 5 0.3")
    cap = tmp_path / "cap.log"
    session = WatchSession(TmuxSource("story", cap, socket=tmux.socket), snapshot=False, gpus=NoGpus())  # type: ignore[arg-type]
    app = WatchApp(session, timers=False)
    async with app.run_test(size=(140, 50)) as pilot:
        deadline = time.monotonic() + 30
        while b"Target 0 on cuda:0... T" not in (cap.read_bytes() if cap.exists() else b""):
            assert time.monotonic() < deadline
            app.poll_now()
            await pilot.pause(0.05)
        pid = int(tmux.run("display", "-p", "-t", "story", "#{pane_pid}").strip())
        os.kill(pid, signal.SIGKILL)
        while not session.done and time.monotonic() < deadline:
            app.poll_now()
            await pilot.pause(0.05)
        await pilot.pause()
        text = screen_text(app)
        header = text.splitlines()[0]
        assert "ended: exit -9 (SIGKILL)" in header
        assert "Target 0 on cuda:0... T" in text  # the partial last line is kept
        details = app.query_one(DetailsPanel)
        shown = str(details.render())
        assert "host-oom-killed" in shown and "likely" in shown
        assert "dmesg" in shown and "checks" in shown  # the check that tells
        assert "run.signal = SIGKILL" in shown  # the evidence it uses
        seen = []
        for _ in app.current_diagnoses():  # ] walks the hypotheses, one per press
            await pilot.press("right_square_bracket")
            await pilot.pause()
            seen.append(str(details.render()).split("\n", 1)[0])
            if "killed-by-signal" in seen[-1]:
                assert "sacct" in str(details.render())  # the scheduler's check
                break
        else:
            raise AssertionError(f"killed-by-signal not among {seen}")


def test_sparklines_are_drawn_on_an_honest_scale() -> None:
    """From 0 to the top: a ±2.5% wobble of tok/s stays a flat row of full bars, a
    halving is half the height, and the label says what the top means."""
    from triage.tui.widgets import spark, spark_text

    wobble = [21000 * (1 + 0.025 * (-1) ** i) for i in range(20)]
    assert set(spark(wobble, 20)) <= {"▇", "█"}
    assert spark([2.0, 1.0], 2) == "█▄"
    assert spark([0.0, 1.0], 2) == " █"
    assert spark([], 5) == "" and len(spark(list(range(1, 100)), 10)) == 10
    assert spark_text("tok/s", wobble, 20).plain.startswith("tok/s 20.5k max 21.5k\n")


def test_the_header_stops_its_clock_and_shows_a_hang() -> None:
    """The run's clock stops when the end is noticed (not when the final triage is
    done), the end reads exit and signal, and a stall shows while it happens."""
    from triage.tui.widgets import status_text
    from triage.watch.events import Ended
    from triage.watch.session import RunState

    run = RunState(started=100.0, last_output=130.0, last_progress=120.0)
    run.stalled_since = 120.0
    live = status_text("train", "%1", run, now=160.0).plain
    assert "running 00:01:00" in live and "STALLED 40 s" in live
    run.ending_at = 140.0
    ending = status_text("train", "%1", run, now=170.0).plain
    assert "ran 00:00:40" in ending and "last output 10 s ago" in ending
    assert "STALLED" not in ending and "triaging" in ending
    run.ended = Ended(-9, 12, "cap.log", "SIGKILL", "exited", "proc")
    done = status_text("train", "%1", run, now=999.0).plain
    assert "ran 00:00:40" in done and done.endswith("ended: exit -9 (SIGKILL)")
    run.ended = Ended(None, 12, "cap.log", None, "pane-closed")
    assert status_text("t", None, run, now=999.0).plain.endswith("ended: pane-closed (exit status unknown)")
