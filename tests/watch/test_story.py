"""The project's story under watch, end to end: the reference runtime (`python -m
dflash_runtime train`) in its story placement (5 targets, 3 drafter threads, flex
attention) on CPU, in a real tmux pane, SIGKILLed from outside while it loads its
targets, watched through the real textual TUI driven by Pilot.

How "killed while loading the targets" is made deterministic: on CPU the tiny preset
loads its targets by building one and pretraining it on generated data (inside
`load_targets`, after `Loading 5 target models...` and before `Target 0 on cpu...`).
With `--target-pretrain-steps` far beyond what the test waits for, the process is
certainly still loading when the test sees that line and kills it: a condition, not a
timing. (Loading from a `--target-path` checkpoint takes about 50 ms a target on CPU,
too short a window to hit on a loaded 2-core machine.)
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import time
from pathlib import Path

import pytest

from tests.watch.conftest import PY, TmuxServer

pytest.importorskip("textual")
pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("torch", "transformers")),
    reason="needs the runtime extra (torch, transformers): pip install -e '.[runtime]'",
)

from triage.tui.app import WatchApp  # noqa: E402
from triage.tui.widgets import DetailsPanel, LogPane  # noqa: E402
from triage.watch.gpu import GpuSample  # noqa: E402
from triage.watch.session import TmuxSource, WatchSession  # noqa: E402

LOADING = "Loading 5 target models..."
TIMEOUT = 45.0  # the whole run: torch/transformers imports dominate (~7 s idle)


class NoGpus:
    """A fixed GPU answer, so the screen does not depend on the test machine."""

    def sample(self) -> GpuSample:
        return GpuSample(unknown="NVML not available (test)")


def story_command() -> str:
    """The runtime's train command in the story's placement, on CPU, tiny shapes."""
    args = [
        *(PY, "-m", "dflash_runtime", "train", "--device", "cpu", "--preset", "tiny"),
        *("--targets", "5", "--drafters", "3", "--attention", "flex"),
        *("--steps", "3", "--eval-prompts", "0", "--cpu-threads", "1"),
        # loading stays in progress for minutes: the kill lands in it by construction
        *("--target-pretrain-steps", "1000000"),
    ]
    return " ".join(args)


def screen_text(app: WatchApp) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join(s.text.rstrip() for s in strips)


async def _until(app: WatchApp, pilot, cond, what: str, deadline: float) -> None:
    """Poll the session (as the TUI's timer would) until `cond()`; fail after `deadline`."""
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        app.poll_now()
        await pilot.pause(0.05)


def test_story_killed_while_loading_targets(tmux: TmuxServer, tmp_path: Path) -> None:
    asyncio.run(_story(tmux, tmp_path))


async def _story(tmux: TmuxServer, tmp_path: Path) -> None:
    cap = tmp_path / "cap.log"
    tmux.new_session("story", f"cd {tmp_path} && exec {story_command()}", width=140, height=40)
    session = WatchSession(TmuxSource("story", cap, socket=tmux.socket), snapshot=False, gpus=NoGpus())  # type: ignore[arg-type]
    app = WatchApp(session, timers=False)
    deadline = time.monotonic() + TIMEOUT
    async with app.run_test(size=(140, 50)) as pilot:

        def loading() -> bool:
            return cap.exists() and LOADING.encode() in cap.read_bytes()

        await _until(app, pilot, loading, "the runtime to start loading its targets", deadline)
        pid = int(tmux.run("display", "-p", "-t", "story", "#{pane_pid}").strip())
        assert "Target 0 on cpu" not in cap.read_text(errors="replace")  # still loading
        os.kill(pid, signal.SIGKILL)  # from outside, as the OOM killer or a scheduler would
        await _until(app, pilot, lambda: session.done, "the final triage", deadline)
        await pilot.pause()
        _check_screen(app, cap)
        await _check_other_hypothesis(app, pilot)


def _check_screen(app: WatchApp, cap: Path) -> None:
    """The last line, the end in the header, the hypotheses and their checks."""
    text = screen_text(app)
    header = text.splitlines()[0]
    assert "ended: exit -9 (SIGKILL)" in header, header
    last = cap.read_bytes().decode("utf-8", "replace").rstrip("\r\n").rsplit("\n", 1)[-1].strip()
    assert last == LOADING  # the run's last words: the line it died after
    log = app.query_one(LogPane)
    printed = [t for ln, t in log.rows if ln]
    assert printed and printed[-1].strip() == LOADING  # kept, and still the last row
    assert LOADING in text
    details = str(app.query_one(DetailsPanel).render())
    lead = details.split("\n", 1)[0]
    assert "host-oom-killed" in lead or "killed-by-signal" in lead, lead
    assert "run.signal = SIGKILL" in details  # the evidence the hypothesis uses
    assert "checks" in details and ("dmesg" in details or "sacct" in details or "cgroup" in details)
    assert "stderr was probably not captured" not in text


async def _check_other_hypothesis(app: WatchApp, pilot) -> None:
    """`]` walks the hypotheses: the other killer (a scheduler, a user) comes with the
    check that tells it from the OOM killer."""
    details = app.query_one(DetailsPanel)
    seen = []
    for _ in app.current_diagnoses():
        await pilot.press("right_square_bracket")
        await pilot.pause()
        seen.append(str(details.render()))
        if "killed-by-signal" in seen[-1].split("\n", 1)[0]:
            assert "sacct" in seen[-1] or "scheduler" in seen[-1]
            return
    raise AssertionError(f"killed-by-signal not among {[s.split(chr(10), 1)[0] for s in seen]}")
