"""The headless watcher loop on a followed file: live diagnosis, stalls (with a fake
clock), the end of a watch, and the CLI's JSON lines."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.watch.conftest import SCRIPTS, events_of, start_watch, wait_for
from triage.engine import analyze, get_rules
from triage.model import Confidence
from triage.watch.events import DiagnosisFound, Ended, Resumed, Stalled, Triaged
from triage.watch.follow import LineSplitter
from triage.watch.live import LiveTriage
from triage.watch.session import FileSource, WatchSession

FX = (
    "RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized "
    "function. This is not supported at the moment."
)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture(scope="module")
def fx_log(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The real output of scripts/fx_steps.py (a Python traceback) for 400 steps."""
    p = subprocess.run(
        [__import__("sys").executable, str(SCRIPTS / "fx_steps.py"), "400"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    return p.stdout + p.stderr


def test_live_diagnoses_do_not_depend_on_chunking(fx_log: bytes, tmp_path: Path) -> None:
    rules = get_rules()
    whole = tmp_path / "whole.log"
    whole.write_bytes(fx_log)
    full = [
        d.signature for d in analyze([str(whole)], rules=rules).diagnoses if d.evidence and d.evidence[0].line
    ]
    for size in (1, 7, 64, 4096, len(fx_log)):
        live, sp = LiveTriage(rules, "x"), LineSplitter()
        for i in range(0, len(fx_log), size):
            live.feed(*sp.feed(fx_log[i : i + size]))
        got = [d.signature for d in live.diagnoses().diagnoses]
        assert got == full, size
        assert got[0] == "fx-tracing-flag-race"
        assert live.fed < 100  # the 400 step lines were not fed one by one


def test_session_emits_each_signature_once(fx_log: bytes, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(b"")
    clock = Clock()
    s = WatchSession(FileSource(log), clock=clock, snapshot=False, report_interval=0)
    s.start()
    with log.open("ab") as w:
        w.write(fx_log)
    ev = s.poll()
    found = [e for e in ev if isinstance(e, DiagnosisFound)]
    assert [e.signature for e in found][:1] == ["fx-tracing-flag-race"]
    assert found[0].line is not None and FX in fx_log.decode().splitlines()[found[0].line - 1]
    with log.open("ab") as w:
        w.write(fx_log)  # the same error again: no new event
    clock.t += 1
    assert not [e for e in s.poll() if isinstance(e, DiagnosisFound)]
    assert s.run.step == 400 and s.run.lines == 2 * fx_log.count(b"\n")


def test_stall_then_resume_with_a_fake_clock(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(b"")
    clock = Clock()
    s = WatchSession(FileSource(log), clock=clock, snapshot=False, stall_factor=10, min_stall=5)
    s.start()
    with log.open("ab") as w:
        for i in range(1, 11):
            w.write(b"step %d loss 1.0 tok/s 100\n" % i)
            w.flush()
            clock.t += 1.0
            assert not [e for e in s.poll() if isinstance(e, Stalled)]
        assert s.stall_threshold() == pytest.approx(10.0)
        clock.t += 5.0  # 6 s quiet < 10 s
        assert not [e for e in s.poll() if isinstance(e, Stalled)]
        clock.t += 5.0
        stalls = [e for e in s.poll() if isinstance(e, Stalled)]
        assert len(stalls) == 1 and stalls[0].last_step == 10
        assert stalls[0].to_dict()["event"] == "stall"
        clock.t += 30.0
        assert not [e for e in s.poll() if isinstance(e, Stalled)]  # once per stall
        w.write(b"step 11 loss 1.0\n")
        w.flush()
        clock.t += 1.0
        assert [e for e in s.poll() if isinstance(e, Resumed)]


def test_stop_gives_ended_and_a_full_report(fx_log: bytes, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(fx_log + b"Target 0 on cuda:0... T")  # a last line without newline
    s = WatchSession(FileSource(log), snapshot=False)
    s.start()
    s.poll()
    ev = s.stop()
    ended = [e for e in ev if isinstance(e, Ended)]
    rep = [e for e in ev if isinstance(e, Triaged)]
    assert ended and ended[0].lines == fx_log.count(b"\n") + 1 and ended[0].reason == "interrupted"
    assert rep and rep[0].to_dict()["report"]["schema"] == "triage.report/1"
    assert rep[0].report is s.final and s.final_report == rep[0].to_dict()["report"]
    assert s.done and s.poll() == []


def test_cli_follows_a_file_until_terminated(fx_log: bytes, tmp_path: Path, validate_report) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"step 1 loss 2.0\n")
    hook_out = tmp_path / "hook.json"
    proc = start_watch(str(log), "--no-tui", "--poll", "0.05", "--on-diagnosis", f"cat > {hook_out}")
    wait_for(lambda: proc.stdout is not None and log.exists(), timeout=5)
    line = proc.stdout.readline()  # type: ignore[union-attr]
    assert json.loads(line)["event"] == "attached"
    with log.open("ab") as w:
        w.write(fx_log)
    wait_for(lambda: hook_out.exists() and hook_out.stat().st_size > 0, timeout=20)
    proc.send_signal(signal.SIGTERM)
    events, err, rc = events_of(proc)
    assert rc == 0, err
    kinds = [e["event"] for e in events]
    assert kinds[-2:] == ["ended", "report"] and "diagnosis" in kinds
    assert json.loads(hook_out.read_text())["signature"] == "fx-tracing-flag-race"
    validate_report(events[-1]["report"])
    assert "snapshot" in events[-1]  # taken when the watch ended (values may be unknown)


def test_cli_usage_errors_are_one_line(tmp_path: Path) -> None:
    for args in (
        [],
        [str(tmp_path / "a.log"), "--tmux", "x"],
        [str(tmp_path / "a.log"), "--capture", str(tmp_path / "c.log")],
        [str(tmp_path)],
    ):
        proc = start_watch(*args, "--no-tui")
        events, err, rc = events_of(proc, timeout=30)
        assert rc == 2 and events == [] and err.count("\n") == 1, (args, err)


def test_a_stall_is_a_live_training_hang(tmp_path: Path) -> None:
    """A stall in step cadence while the process lives is evidence (run.stalled_s): the
    live view diagnoses training-hang with it, and drops it when steps resume."""
    log = tmp_path / "run.log"
    log.write_bytes(b"")
    clock = Clock()
    s = WatchSession(
        FileSource(log), clock=clock, snapshot=False, stall_factor=10, min_stall=5, report_interval=0
    )
    s.start()
    with log.open("ab") as w:
        for i in range(1, 11):
            w.write(b"step %d loss 1.0 tok/s 100\n" % i)
            w.flush()
            clock.t += 1.0
            s.poll()
        assert not [d for d in s.diagnoses if d.signature == "training-hang"]
        clock.t += 11.0
        ev = s.poll()
        found = [e for e in ev if isinstance(e, DiagnosisFound)]
        assert [e.signature for e in found] == ["training-hang"]
        hang = found[0].diagnosis
        assert hang.confidence is Confidence.LIKELY
        assert any(e.fact == "run.stalled_s" for e in hang.evidence)
        w.write(b"step 11 loss 1.0\n")
        w.flush()
        clock.t += 1.0
        s.poll()
        assert not [d for d in s.diagnoses if d.signature == "training-hang"]


CUT_LOG = "step 1 loss 2.0\nstep 2 loss 1.9\nLoading 5 target models...\nTarget 0 on cuda:0... T"


def test_how_the_watched_run_ended_is_reasoned_about() -> None:
    """The run facts a watcher adds: a SIGKILL with stderr captured leads with the
    OOM-killer hypothesis and says nothing of stderr not being captured; SIGTERM is
    killed-by-signal; exit 0 rules out a crash; without the watcher the old note stays."""
    from triage.engine import analyze_text

    seen = {"run.stderr_captured": True, "run.pane_died": True}
    kill = analyze_text(CUT_LOG, facts={**seen, "run.signal": "SIGKILL", "run.exit_status": -9})
    assert kill.diagnoses[0].signature == "host-oom-killed"
    assert kill.diagnoses[0].evidence[0].fact == "run.signal"
    assert "truncated-unknown" not in [d.signature for d in kill.diagnoses]
    assert not any("probably not captured" in n for n in kill.notes)
    assert any("killed by SIGKILL" in n for n in kill.notes)
    # the story's other hypotheses raise with a traceback, which the captured stderr lacks
    cold = analyze_text(CUT_LOG, facts={**seen, "run.signal": "SIGKILL", "inductor_cache.cold": True})
    assert {"fx-tracing-flag-race", "missing-accelerate"} <= {r.signature for r in cold.ruled_out}
    assert [d.signature for d in cold.diagnoses] == ["host-oom-killed", "killed-by-signal"]
    story = analyze_text(CUT_LOG, facts={"inductor_cache.cold": True})  # nothing watched
    assert {"fx-tracing-flag-race", "missing-accelerate"} <= {d.signature for d in story.diagnoses}

    term = analyze_text(CUT_LOG, facts={**seen, "run.signal": "SIGTERM", "run.exit_status": -15})
    assert term.diagnoses[0].signature == "killed-by-signal"

    ok = analyze_text(
        CUT_LOG + "\nRuntimeError: CUDA error: out of memory\nstep 3 loss 1.8\n",
        facts={**seen, "run.exit_status": 0},
    )
    assert all(d.confidence.label == "possible" for d in ok.diagnoses)
    assert any("status 0" in e.text for d in ok.diagnoses for e in d.counter_evidence)
    assert "truncated-unknown" in [r.signature for r in ok.ruled_out]

    plain = analyze_text(CUT_LOG)
    assert any("probably not captured" in n for n in plain.notes)
