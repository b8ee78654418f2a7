"""The watcher loop, without a screen: read the capture as it grows, diagnose live,
notice stalls and the end of the run, then snapshot and triage the whole capture.

`WatchSession.poll()` does one round and returns the events it produced; the headless
mode prints them as JSON lines (`run_headless`), the TUI turns them into panels. The
clock is injected so stall detection can be tested without waiting.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from triage.engine import get_rules
from triage.engine.rules import Rule
from triage.errors import TriageError
from triage.ingest.lines import shown_texts
from triage.ingest.normalize import SourceState
from triage.model import Diagnosis, Report, RuledOut
from triage.report.json import report_dict
from triage.watch.capture import PaneStatus, TmuxPane
from triage.watch.events import (
    Attached,
    DiagnosisFound,
    Ended,
    Event,
    Notice,
    Resumed,
    Stalled,
    Triaged,
    to_json,
)
from triage.watch.follow import Follower, LineSplitter
from triage.watch.gpu import GpuSample, GpuSampler
from triage.watch.live import LiveTriage

TAIL = 2000  # raw lines kept for the TUI's log pane
SERIES = 120  # points per sparkline
SERIES_SCAN = 32  # lines at the end of each read whose steps become sparkline points
SETTLE = 0.3  # seconds without new bytes after the pane died before the capture is final
SETTLE_MAX = 5.0
SHELL_BACK = 3.0  # seconds the shell must stay in the foreground to mean "run over"
STATUS_WAIT = 1.0  # seconds to wait for an exit status neither tmux nor /proc has yet
QUIET_REPORT = 1.0  # seconds between live reports when no new finding came
SHELLS = frozenset({"bash", "zsh", "sh", "dash", "fish", "ksh", "tcsh", "csh", "-bash", "-zsh"})


class Source(Protocol):
    """Where the bytes come from: a tmux pane (through its capture file) or a file."""

    mode: str
    name: str
    capture: Path

    def attach(self) -> Attached: ...
    def status(self) -> PaneStatus | None: ...
    def release(self) -> None: ...
    def final_lines(self, tail: list[str]) -> list[str]: ...
    def close(self, dead: bool | None, exit_status: int | None) -> None: ...


class FileSource:
    """`triage watch FILE`: the file is the capture; there is no process to watch."""

    mode = "file"

    def __init__(self, path: Path) -> None:
        if path.exists() and path.is_dir():
            raise TriageError(f"{path}: is a directory (watch one log file)")
        self.name = str(path)
        self.capture = path

    def attach(self) -> Attached:
        notes = () if self.capture.exists() else ("the file does not exist yet; waiting for it",)
        return Attached(self.name, str(self.capture), "file", notes=notes)

    def status(self) -> PaneStatus | None:
        return None

    def release(self) -> None:
        return None

    def final_lines(self, tail: list[str]) -> list[str]:
        return []

    def close(self, dead: bool | None, exit_status: int | None) -> None:
        return None


class TmuxSource:
    """`triage watch --tmux TARGET`: the pane's scrollback and live bytes go to the
    capture file (see capture.py), which is followed like any file."""

    mode = "tmux"

    def __init__(self, target: str, capture: Path, socket: str | None = None) -> None:
        self.name = target
        self.capture = capture
        self.pane = TmuxPane(target, capture, socket=socket)

    def attach(self) -> Attached:
        a = self.pane.attach()
        return Attached(
            self.name,
            str(self.capture),
            "tmux",
            pane=a.pane_id,
            pid=a.pane_pid,
            history_lines=a.history_lines,
            notes=tuple(a.notes),
        )

    def status(self) -> PaneStatus | None:
        return self.pane.status()

    def release(self) -> None:
        """Stop the pipe (the capture file then stops growing)."""
        self.pane.stop_pipe()

    def final_lines(self, tail: list[str]) -> list[str]:
        """Lines the dead pane showed last that the capture lacks (tmux drops what it
        had not yet written to a pipe when the pipe closes)."""
        return missing_tail(self.pane.final_screen(), tail)

    def close(self, dead: bool | None, exit_status: int | None) -> None:
        self.pane.close(dead=dead, exit_status=exit_status)


def missing_tail(screen: list[str], ours: list[str], anchor: int = 3) -> list[str]:
    """Lines at the end of `screen` that come after the end of `ours`.

    Only a confident alignment counts (the last `anchor` lines of ours, or all of them,
    found in a row in `screen`): a screen renders tabs, wide characters and redraws
    differently, and repeating lines would be worse than a note."""

    def key(s: str) -> str:
        return " ".join(s.split())

    scr = [key(s) for s in screen]
    mine = [key(s) for s in ours if key(s)]
    scr_nonblank = [i for i, s in enumerate(scr) if s]
    if not mine or not scr_nonblank:
        return []
    k = min(anchor, len(mine))
    want = mine[-k:]
    # search from the end: the latest place where our last k lines appear
    for end in range(len(scr_nonblank) - 1, k - 2, -1):
        idx = scr_nonblank[end - k + 1 : end + 1]
        if [scr[i] for i in idx] == want:
            return screen[idx[-1] + 1 :]
    return []


@dataclass
class RunState:
    """What the run panel shows."""

    started: float
    last_output: float | None = None
    last_progress: float | None = None
    lines: int = 0
    step: int | None = None
    loss: float | None = None
    toks: float | None = None
    phase: str | None = None
    losses: deque[float] = field(default_factory=lambda: deque(maxlen=SERIES))
    toks_series: deque[float] = field(default_factory=lambda: deque(maxlen=SERIES))
    intervals: deque[float] = field(default_factory=lambda: deque(maxlen=32))
    stalled_since: float | None = None
    ended: Ended | None = None
    ending_at: float | None = None  # when the end was noticed: the run's clock stops here
    step_times: deque[float] = field(default_factory=lambda: deque(maxlen=SERIES))

    def elapsed(self, now: float) -> float:
        """Seconds the run has been watched, up to its end (the clock stops there)."""
        return (self.ending_at if self.ending_at is not None else now) - self.started

    def usual_interval(self) -> float | None:
        """Median wall time between reads that brought a new step line."""
        if len(self.intervals) < 3:
            return None
        return statistics.median(self.intervals)


class WatchSession:
    """One watch: `start()`, then `poll()` until `done`; `stop()` ends it early."""

    def __init__(
        self,
        source: Source,
        *,
        rules: list[Rule] | None = None,
        clock: Callable[[], float] = time.monotonic,
        stall_factor: float = 10.0,
        min_stall: float = 30.0,
        report_interval: float = 0.2,
        status_interval: float = 0.5,
        snapshot: bool = True,
        gpus: GpuSampler | None = None,
        html: Path | None = None,
    ) -> None:
        self.source = source
        self.html = html  # where the HTML report goes when the run ends (None: nowhere)
        self.html_written: Path | None = None
        self.rules = rules if rules is not None else get_rules()
        self.clock = clock
        self.stall_factor = stall_factor
        self.min_stall = min_stall
        self.report_interval = report_interval
        self.status_interval = status_interval
        self.take_snapshot = snapshot
        self.gpus = gpus or GpuSampler()
        self.follower = Follower(str(source.capture))
        self.splitter = LineSplitter()
        self.live = LiveTriage(self.rules, str(source.capture))
        self.run = RunState(started=clock())
        self.tail: deque[bytes] = deque(maxlen=TAIL)
        self.emitted: dict[str, int] = {}  # signature -> confidence already announced
        self.diagnoses: list[Diagnosis] = []  # the current live view, best first
        self.ruled_out: list[RuledOut] = []  # what the live view ruled out
        self.final: Report | None = None  # the full triage once the run ended
        self._final_json: dict[str, Any] | None = None
        # facts -> a History recording the final triage (the CLI sets it; None: no history)
        self.history: Callable[[dict[str, Any]], Any] | None = None
        self.snapshot: dict[str, Any] | None = None
        self.done = False
        self._last_report = float("-inf")
        self._reported_findings = 0
        self._last_status = float("-inf")
        self._dead: PaneStatus | None = None
        self._quiet_since: float | None = None
        self._first_command: str | None = None
        self._shell_since: float | None = None
        self._end_reason = "exited"

    # -- lifecycle ------------------------------------------------------------------
    def start(self) -> list[Event]:
        """Attach to the source; the first event is `attached`."""
        ev = self.source.attach()
        self.run.started = self.clock()
        return [ev]

    def poll(self) -> list[Event]:
        """Read what arrived, diagnose, check for a stall and for the end."""
        if self.done:
            return []
        now = self.clock()
        got = self._read()
        if got:
            self.run.last_output = now
        events: list[Event] = []
        if self.live.dirty and now - self._last_report >= self.report_interval:
            # a new finding is reported at once; lines that only might change a verdict
            # (the frames after an error, the steps that show it was survived) at most
            # every QUIET_REPORT: a report deep-copies the live analysis
            fresh = self.live.findings_seen != self._reported_findings
            if fresh or now - self._last_report >= QUIET_REPORT:
                events += self._rediagnose(now)
        events += self._check_stall(now)
        if self._dead is None and now - self._last_status >= self.status_interval:
            self._last_status = now
            self._check_source()
        if self._dead is not None:
            # the process is gone: wait until tmux has handed over the last bytes
            if got or self._quiet_since is None:
                self._quiet_since = now
            if now - self._quiet_since >= SETTLE:
                events += self._finish(self._dead, self._end_reason)
        return events

    def _check_source(self) -> None:
        st = self.source.status()
        if st is None:
            return
        if self._first_command is None:
            self._first_command = st.current_command
        if not st.exists or st.dead:
            self._dead, self._quiet_since = st, None
            self._end_reason = "exited" if st.exists else "pane-closed"
            self.run.ending_at = self.clock()
        elif self._first_command not in SHELLS and st.current_command in SHELLS:
            # a command started from a shell: its end brings the shell back for good
            # (a script's `sh -c 'a; b'` is the foreground only for a moment)
            now = self.clock()
            if self._shell_since is None:
                self._shell_since = now
            elif now - self._shell_since >= SHELL_BACK:
                self._dead, self._quiet_since = st, None
                self._end_reason = "returned-to-shell"
                self.run.ending_at = self._shell_since
        else:
            self._shell_since = None

    def stop(self, reason: str = "interrupted") -> list[Event]:
        """End the watch now (the user quit): final triage of what was captured."""
        if self.done:
            return []
        self._read()
        st = self._dead or PaneStatus(exists=True)
        if self.run.ending_at is None:
            self.run.ending_at = self.clock()
        return self._finish(st, reason)

    # -- reading --------------------------------------------------------------------
    def _read(self) -> int:
        total = 0
        for chunk in self.follower.poll():
            total += len(chunk.data)
            if chunk.fresh and self.splitter.partial:
                rest = self.splitter.flush()
                self._lines(rest + b"\n", [rest])
            blob, lines = self.splitter.feed(chunk.data)
            if lines:
                self._lines(blob, lines)
        return total

    def _lines(self, blob: bytes, lines: list[bytes]) -> None:
        """Feed complete lines (joined in `blob`) to the live triage and the tail. The
        last SERIES_SCAN go in one by one, so that each step among them is a point of
        the sparklines; the rest in one call (the live triage's fast path)."""
        self.tail.extend(lines[-TAIL:])
        head = len(lines) - SERIES_SCAN
        new_step = False
        if head > 0:
            cut = len(blob) - sum(len(x) + 1 for x in lines[head:])
            new_step |= self._feed(blob[:cut], lines[:head])
            blob, lines = blob[cut:], lines[head:]
        for raw in lines:
            new_step |= self._feed(raw + b"\n", [raw])
        if new_step:
            self._step_seen()

    def _feed(self, blob: bytes, lines: list[bytes]) -> bool:
        """One feed of the live triage, then the run panel from its progress; True
        when it brought a new step."""
        self.live.feed(blob, lines)
        self.run.lines = self.live.lines
        return self._track()

    def _track(self) -> bool:
        """The run panel's phase and numbers from the live triage's progress (the
        reader the report uses, so screen and report agree); a new step number adds a
        point to the loss and tok/s series. True when the step number changed."""
        p = self.live.progress()
        r = self.run
        r.phase, r.loss, r.toks = p.phase, p.loss, p.toks
        if p.step is None or p.step == r.step:
            return False
        r.step = p.step
        if p.loss is not None:
            r.losses.append(p.loss)
        if p.toks is not None:
            r.toks_series.append(p.toks)
        return True

    def _step_seen(self) -> None:
        """A read brought a new step: the wall time since the last one is the run's
        cadence (for stall detection and the step-time sparkline)."""
        r = self.run
        now = self.clock()
        if r.last_progress is not None:
            r.intervals.append(now - r.last_progress)
            r.step_times.append(now - r.last_progress)
        r.last_progress = now

    # -- diagnosis ------------------------------------------------------------------
    def _rediagnose(self, now: float) -> list[Event]:
        self._last_report = now
        self._reported_findings = self.live.findings_seen
        view = self.live.diagnoses()
        self.diagnoses = list(view.diagnoses)
        if view.report is not None:
            self.ruled_out = list(view.report.ruled_out)
        return self._announce(self.diagnoses, final=False)

    def _announce(self, diags: Sequence[Diagnosis], final: bool) -> list[Event]:
        """A `DiagnosisFound` for each signature that is new or surer than announced."""
        out: list[Event] = []
        for d in diags:
            conf = int(d.confidence)
            if self.emitted.get(d.signature, 0) >= conf:
                continue
            self.emitted[d.signature] = conf
            line = next((e.line for e in d.evidence if e.line), None)
            out.append(DiagnosisFound(d, line, final))
        return out

    @property
    def final_report(self) -> dict[str, Any] | None:
        """The final triage as the JSON report (`final`'s dict form), for callers that
        write or compare JSON; None until the run ended."""
        if self.final is None:
            return None
        if self._final_json is None:
            self._final_json = report_dict(self.final)
        return self._final_json

    # -- stalls ---------------------------------------------------------------------
    def stall_threshold(self) -> float | None:
        """Seconds without a new step line that count as a stall (None: no rhythm yet)."""
        usual = self.run.usual_interval()
        if usual is None:
            return None
        return max(self.stall_factor * usual, self.min_stall)

    def _check_stall(self, now: float) -> list[Event]:
        r = self.run
        if r.last_progress is None or self._dead is not None:
            return []
        quiet = now - r.last_progress
        if r.stalled_since is not None:
            if quiet < now - r.stalled_since:  # a step arrived after the stall began
                stalled_for = now - r.stalled_since
                r.stalled_since = None
                self._live_fact("run.stalled_s", None)
                return [Resumed(stalled_for), *self._rediagnose(now)]
            return []
        limit = self.stall_threshold()
        if limit is None or quiet < limit:
            return []
        r.stalled_since = r.last_progress
        usual = r.usual_interval() or 0.0
        # the stall is evidence for the live diagnosis (training-hang's run.stalled_s)
        self._live_fact("run.stalled_s", round(quiet, 1))
        self._live_fact("run.step_interval_s", round(usual, 3))
        events: list[Event] = [Stalled(quiet, usual, r.step, self.gpus.sample().busy)]
        return events + self._rediagnose(now)

    def _live_fact(self, name: str, value: Any) -> None:
        facts = self.live.analysis.facts
        if value is None:
            facts.pop(name, None)
        else:
            facts[name] = value
        self.live.dirty = True

    # -- the end --------------------------------------------------------------------
    def _finish(self, st: PaneStatus, reason: str) -> list[Event]:
        events: list[Event] = []
        if st.exists and st.dead and st.exit_status is None and st.signal is None:
            st = self._await_status(st)
        self.source.release()
        self._drain()
        if (st.exists and st.dead) or (not st.exists and self.source.mode == "tmux"):
            events += self._recover()
        final = self.splitter.flush()
        self.live.feed_final(final)
        self.run.lines = self.live.lines
        if final:
            self.tail.append(final)
            self._track()  # the last line may hold the last step
        facts = self._snapshot()
        self.source.close(st.dead if st.exists else None, st.exit_status)
        facts.update(self.run_facts(st, reason))
        report = self._full_triage(facts)
        if report is not None:
            self.final = report
            events += self._announce(report.diagnoses, final=True)
        if self.html_written is not None:
            events.append(Notice(f"HTML report: {self.html_written}"))
        exit_status = st.exit_status
        if exit_status is None and st.signal:
            exit_status = -_signum(st.signal)
        ended = Ended(
            exit_status, self.live.lines, str(self.source.capture), st.signal, reason, st.status_from
        )
        self.run.ended = ended
        events.append(ended)
        if report is not None:
            events.append(Triaged(report, self.snapshot))
        self.follower.close()
        self.done = True
        return events

    def run_facts(self, st: PaneStatus, reason: str) -> dict[str, Any]:
        """What the watcher saw of the run, as facts for the rules (triage.vocabulary's
        RUN_FACTS): how the process ended, that the pane's output (stdout and stderr
        alike) was captured, and the run's rhythm."""
        r = self.run
        end = r.ending_at if r.ending_at is not None else self.clock()
        facts: dict[str, Any] = {"run.duration_s": round(end - r.started, 1)}
        if st.exit_status is not None:
            facts["run.exit_status"] = st.exit_status
        elif st.signal:
            facts["run.exit_status"] = -_signum(st.signal)  # the shell's convention, -N
        if st.signal:
            facts["run.signal"] = st.signal
        if self.source.mode == "tmux":
            # pipe-pane gets every byte the pane's terminal got: stdout and stderr
            facts["run.stderr_captured"] = True
            # a command that returned to its shell ended, but the pane lives on
            facts["run.pane_died"] = reason in ("exited", "pane-closed")
        if r.last_output is not None:
            facts["run.since_output_s"] = round(max(0.0, end - r.last_output), 1)
        usual = r.usual_interval()
        if usual is not None:
            facts["run.step_interval_s"] = round(usual, 3)
        if r.stalled_since is not None:
            facts["run.stalled_s"] = round(end - r.stalled_since, 1)
        return facts

    def _await_status(self, st: PaneStatus) -> PaneStatus:
        """tmux can mark a pane dead (pty closed) a moment before it has reaped the
        process and knows its exit status; the zombie's /proc entry (capture.py) usually
        tells at once, so this wait is short and runs off the UI thread."""
        deadline = time.monotonic() + STATUS_WAIT
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = self.source.status()
            if now is None or not now.exists:
                break
            if now.exit_status is not None or now.signal is not None:
                return now
        return st

    def _recover(self) -> list[Event]:
        """Append what the dead pane shows after the capture's end (see missing_tail)."""
        tail_text = [
            text
            for raw in [*list(self.tail)[-200:], self.splitter.partial]
            for text in shown_texts(raw, SourceState())
        ]
        try:
            missing = self.source.final_lines(tail_text)
        except TriageError:
            return []
        if not missing:
            return []
        with self.source.capture.open("ab") as fh:
            fh.write((b"\n" if self.splitter.partial else b"") + "\n".join(missing).encode("utf-8") + b"\n")
        self._drain()
        return [
            Notice(
                f"{len(missing)} line(s) that tmux had not passed to the pipe "
                "were recovered from the pane's screen"
            )
        ]

    def _drain(self) -> None:
        """Read until the capture file stops growing (the pipe's last bytes)."""
        deadline = time.monotonic() + SETTLE_MAX
        quiet = 0
        while time.monotonic() < deadline and quiet < 2:
            if self._read():
                quiet = 0
            else:
                quiet += 1
                time.sleep(0.05)

    def _snapshot(self) -> dict[str, Any]:
        """Take the evidence snapshot (unless --no-snapshot) and read its facts."""
        if not self.take_snapshot:
            return {}
        snap = take_snapshot(getattr(getattr(self.source, "pane", None), "pane_id", None))
        if snap is None:
            return {}
        self.snapshot = snap
        # imported here: the evidence layer costs a third of a second to import, which
        # a watch pays only when its run ends
        from triage.evidence import facts_from_snapshot

        try:
            return facts_from_snapshot(snap)
        except TriageError:
            return {}

    def _full_triage(self, facts: dict[str, Any]) -> Report | None:
        from triage.engine import analyze

        if not self.source.capture.exists():
            return None
        # the crash history (triage.history): set by the CLI, None with --no-history
        history = self.history(facts) if self.history is not None else None
        try:
            rep = analyze(
                [str(self.source.capture)],
                rules=self.rules,
                facts=facts,
                recall=history.recall if history is not None else None,
            )
        except TriageError:
            return None
        if history is not None:
            rep = history.finish(rep)
        if self.html is not None:
            self._write_html(rep, self.html)
        return rep

    def _write_html(self, rep: Report, path: Path) -> None:
        """The same page as `triage logs --format html`, for the run that just ended."""
        from triage.report import render_to_string

        try:
            path.write_text(render_to_string(rep, "html"), encoding="utf-8")
        except (OSError, TriageError) as e:
            sys.stderr.write(f"triage: watch: no HTML report: {e}\n")
            return
        self.html_written = path

    # -- views ----------------------------------------------------------------------
    def gpu_sample(self) -> GpuSample:
        """GPU memory and utilization now (N/A without NVML)."""
        return self.gpus.sample()


def take_snapshot(tmux_target: str | None) -> dict[str, Any] | None:
    """The evidence snapshot now; None when the evidence layer says it cannot take one
    (a TriageError). Imported lazily, as in `WatchSession._snapshot`."""
    from triage.evidence import take_snapshot as _take

    try:
        return _take(tmux_target=tmux_target)
    except TriageError:
        return None


def _signum(name: str) -> int:
    import signal as _signal

    try:
        return int(_signal.Signals[name])
    except KeyError:
        return 0


# -- hooks and the headless loop ---------------------------------------------------------
def run_hook(cmd: str, payload: dict[str, Any], timeout: float = 60.0) -> threading.Thread:
    """Run `cmd` in a shell with `payload` as JSON on stdin, in the background. Its
    stdout goes to stderr, so the JSON event stream on stdout stays clean."""
    data = (json.dumps(payload, ensure_ascii=False, default=str) + "\n").encode("utf-8")

    def work() -> None:
        try:
            p = subprocess.Popen(cmd, shell=True, stdin=subprocess.PIPE, stdout=sys.stderr, stderr=sys.stderr)
        except OSError as e:
            sys.stderr.write(f"triage: --on-diagnosis: cannot run {cmd!r}: {e}\n")
            return
        try:
            p.communicate(data, timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            sys.stderr.write(f"triage: --on-diagnosis: {cmd!r} ran over {timeout:.0f} s; killed\n")
        except BrokenPipeError:
            p.wait()

    t = threading.Thread(target=work, name="on-diagnosis", daemon=False)
    t.start()
    return t


def run_headless(
    session: WatchSession, *, poll: float = 0.2, on_diagnosis: str | None = None, out: Any = None
) -> int:
    """Print one JSON line per event until the run ends (or Ctrl-C); exit code 0."""
    stream = out or sys.stdout
    hooks: list[threading.Thread] = []

    def emit(events: list[Event]) -> None:
        for ev in events:
            stream.write(to_json(ev) + "\n")
            if on_diagnosis and isinstance(ev, DiagnosisFound):
                hooks.append(run_hook(on_diagnosis, ev.payload()))
        if events:
            stream.flush()

    try:
        emit(session.start())
        while not session.done:
            emit(session.poll())
            if not session.done:
                time.sleep(poll)
    except KeyboardInterrupt:
        emit(session.stop("interrupted"))
    finally:
        if not session.done:
            session.source.close(None, None)
        for t in hooks:
            t.join(timeout=60)
    return 0
