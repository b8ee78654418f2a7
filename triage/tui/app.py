"""The `triage watch` screen: log tail, live diagnoses, GPUs, run sparklines, alerts.

The watch session does the work (capture, diagnosis, stall and end detection); the
app polls it from a worker thread and shows the result. Keys are in the footer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Static

from triage.ingest.normalize import SourceState, normalize
from triage.tui.messages import JumpTo, Polled, WatchEvents
from triage.tui.widgets import (
    AlertsPanel,
    DiagnosesPanel,
    GpuPanel,
    LogPane,
    RunPanel,
    StatusBar,
    diagnoses_text,
    gpu_text,
    status_text,
)
from triage.watch.events import (
    Attached,
    DiagnosisFound,
    Ended,
    Event,
    Notice,
    Resumed,
    Stalled,
    Triaged,
)
from triage.watch.follow import cap_line
from triage.watch.gpu import GpuSample
from triage.watch.session import WatchSession, run_hook, take_snapshot

SHOW_PER_POLL = 400  # lines written to the log pane per poll; the rest is summarised
CONTEXT = 8  # lines around evidence in the evidence view


def context_lines(path: Path, lineno: int, around: int = CONTEXT) -> list[tuple[int, str]]:
    """Lines lineno-around .. lineno+around of the capture, normalised."""
    out: list[tuple[int, str]] = []
    lo, hi = lineno - around, lineno + around
    state = SourceState()
    try:
        with path.open("rb") as fh:
            for i, raw in enumerate(fh, start=1):
                if i < lo:
                    continue
                if i > hi:
                    break
                text = " | ".join(p.text for p in normalize(cap_line(raw.rstrip(b"\n")), state))
                out.append((i, text))
    except OSError:
        pass
    return out


class EvidenceScreen(ModalScreen[None]):
    """A diagnosis's evidence in the context of the capture file."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,e", "dismiss", "close")]

    def __init__(self, title: str, lines: list[tuple[int, str]], target: int) -> None:
        super().__init__()
        self.title_text = title
        self.lines = lines
        self.target = target

    def compose(self) -> ComposeResult:
        t = Text()
        t.append(self.title_text + "\n\n", style="bold")
        for n, text in self.lines:
            style = "bold red" if n == self.target else ""
            t.append(f"{n:>7}  {text}\n", style=style)
        if not self.lines:
            t.append("(the capture file cannot be read)", style="dim")
        yield Static(t, id="evidence-body")


class WatchApp(App[int]):
    """Live view of one watch session."""

    CSS_PATH = "app.tcss"
    TITLE = "triage watch"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "quit"),
        Binding("slash", "search", "search"),
        Binding("e", "evidence", "evidence"),
        Binding("s", "snapshot", "snapshot"),
        Binding("r", "retriage", "re-triage"),
        Binding("f", "follow", "follow", show=False),
        Binding("n", "next_match", "next match", show=False),
        Binding("escape", "cancel_search", "cancel", show=False),
    ]

    def __init__(self, session: WatchSession, *, poll: float = 0.2,
                 on_diagnosis: str | None = None, clock: Callable[[], float] = time.monotonic,
                 gpu_interval: float = 2.0, clock_text: bool = True, timers: bool = True) -> None:
        super().__init__()
        self.session = session
        self.poll_interval = poll
        self.on_diagnosis = on_diagnosis
        self.clock = clock
        self.gpu_interval = gpu_interval
        self.clock_text = clock_text
        self.timers = timers
        self.attached: Attached | None = None
        self.shown_upto = 0  # the last capture line written to the log pane
        self.gpus: GpuSample | None = None
        self.evidence_index = 0
        self.search_needle = ""
        self.search_at: int | None = None
        self._lock = threading.Lock()
        self._hooks: list[threading.Thread] = []

    # -- layout -------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        with Horizontal(id="main"):
            yield LogPane(id="log")
            with Vertical(id="side"):
                yield DiagnosesPanel(id="diagnoses")
                yield GpuPanel(id="gpus")
                yield AlertsPanel(id="alerts")
        yield RunPanel(id="run")
        yield Input(placeholder="search the log (enter: find, n: next, esc: close)", id="search")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#search", Input).display = False
        self.query_one("#search", Input).cursor_blink = False
        self.query_one(LogPane).focus()  # keys go to the app, not to the hidden search box
        self.query_one(DiagnosesPanel).update(diagnoses_text([]))
        self.query_one(GpuPanel).update(gpu_text(None))
        self.handle_events(self.session.start())
        self.refresh_view()
        if self.timers:
            self.set_interval(self.poll_interval, self._tick)
            self.set_interval(self.gpu_interval, self._sample_gpus)
            self._sample_gpus()
        else:
            self.show_gpus(self.session.gpu_sample())

    # -- polling ------------------------------------------------------------------
    def _tick(self) -> None:
        if not self.session.done:
            self._poll_worker()
        else:
            self.refresh_status()

    @work(thread=True, exclusive=False, group="poll")
    def _poll_worker(self) -> None:
        if not self._lock.acquire(blocking=False):
            return  # the previous poll (a final triage, say) is still running
        try:
            events = self.session.poll()
        finally:
            self._lock.release()
        self.post_message(WatchEvents(events))
        self.post_message(Polled(0))

    def poll_now(self) -> list[Event]:
        """One poll on this thread (tests, and the `r` key's fresh look)."""
        with self._lock:
            events = self.session.poll()
        self.handle_events(events)
        self.refresh_view()
        return events

    @work(thread=True, group="gpu")
    def _sample_gpus(self) -> None:
        sample = self.session.gpu_sample()
        self.call_from_thread(self.show_gpus, sample)

    def show_gpus(self, sample: GpuSample) -> None:
        """Show a GPU sample."""
        self.gpus = sample
        self.query_one(GpuPanel).update(gpu_text(sample))

    def on_watch_events(self, message: WatchEvents) -> None:
        self.handle_events(message.events)

    def on_polled(self, message: Polled) -> None:
        self.refresh_view()

    def on_jump_to(self, message: JumpTo) -> None:
        self.jump(message.lineno)

    # -- events -------------------------------------------------------------------
    def handle_events(self, events: list[Event]) -> None:
        """Turn watch events into alerts and panel updates."""
        alerts = self.query_one(AlertsPanel)
        for ev in events:
            if isinstance(ev, Attached):
                self.attached = ev
                for note in ev.notes:
                    alerts.add(note, "yellow")
            elif isinstance(ev, DiagnosisFound):
                d = ev.diagnosis
                where = f" at line {ev.line}" if ev.line else ""
                alerts.add(f"diagnosis: {d['signature']} ({d['confidence']}){where}",
                           "bold red" if d["confidence"] == "confirmed" else "bold yellow")
                if self.on_diagnosis:
                    self._hooks.append(run_hook(self.on_diagnosis, d))
            elif isinstance(ev, Stalled):
                hang = "; GPUs busy: training-hang?" if ev.gpus_busy else ""
                alerts.add(f"stalled: no step for {ev.seconds:.0f} s "
                           f"(usual {ev.usual_interval:.1f} s){hang}", "bold red")
            elif isinstance(ev, Resumed):
                alerts.add(f"resumed after {ev.seconds:.0f} s", "green")
            elif isinstance(ev, Notice):
                alerts.add(ev.text, "yellow")
            elif isinstance(ev, Ended):
                how = f"exit status {ev.exit_status}" if ev.exit_status is not None else ev.reason
                if ev.signal:
                    how += f" ({ev.signal})"
                alerts.add(f"run ended: {how}; {ev.lines} lines in {ev.capture}",
                           "bold red" if ev.exit_status else "bold")
            elif isinstance(ev, Triaged):
                n = len(ev.report.get("diagnoses", []))
                alerts.add(f"full triage of the capture: {n} diagnos{'is' if n == 1 else 'es'}",
                           "bold")
                if ev.snapshot is not None:
                    from triage.watch.gpu import from_snapshot

                    self.show_gpus(from_snapshot(ev.snapshot))

    def current_diagnoses(self) -> list[dict[str, Any]]:
        """The final triage's diagnoses once the run ended, else the live ones."""
        if self.session.final_report is not None:
            return list(self.session.final_report.get("diagnoses", []))
        return self.session.diagnoses

    def refresh_view(self) -> None:
        """Redraw the log tail, diagnoses, run panel and status line."""
        self._write_tail()
        diags = self.current_diagnoses()
        sel = (self.evidence_index - 1) % len(diags) if diags and self.evidence_index else None
        self.query_one(DiagnosesPanel).update(diagnoses_text(diags, sel))
        self.query_one(RunPanel).show(self.session.run)
        self.refresh_status()

    def refresh_status(self) -> None:
        """Redraw the status line (run time, freshness)."""
        target = self.attached.target if self.attached else self.session.source.name
        pane = self.attached.pane if self.attached else None
        self.query_one(StatusBar).update(
            status_text(target, pane, self.session.run, self.clock(), self.clock_text))

    def _write_tail(self) -> None:
        log = self.query_one(LogPane)
        s = self.session
        if not self._lock.acquire(blocking=False):
            return  # a poll is running; the next refresh shows its lines
        try:
            total = s.live.lines
            tail = list(s.tail)
            matched = set(s.live.matched)
        finally:
            self._lock.release()
        new = total - self.shown_upto
        if new <= 0:
            return
        new = min(new, len(tail))
        first = total - new + 1
        if new > SHOW_PER_POLL:
            log.add_gap(new - SHOW_PER_POLL)
            first = total - SHOW_PER_POLL + 1
        state = SourceState()
        for lineno in range(first, total + 1):
            raw = tail[len(tail) - (total - lineno) - 1]
            text = " | ".join(p.text for p in normalize(cap_line(raw), state))
            log.add_line(lineno, text, lineno in matched)
        self.shown_upto = total

    # -- actions ------------------------------------------------------------------
    def jump(self, lineno: int) -> None:
        """Show capture line `lineno`: in the log pane if it is in the tail, else in
        the evidence view read from the capture file."""
        if self.query_one(LogPane).jump(lineno):
            return
        self.push_screen(EvidenceScreen(f"line {lineno} of {self.session.source.capture}",
                                        context_lines(self.session.source.capture, lineno),
                                        lineno))

    def action_evidence(self) -> None:
        """Jump to the evidence of the selected diagnosis; again: the next diagnosis."""
        diags = self.current_diagnoses()
        if not diags:
            self.query_one(AlertsPanel).add("no diagnosis yet: no evidence to show", "dim")
            return
        d = diags[self.evidence_index % len(diags)]
        self.evidence_index += 1
        ev = next((e for e in d.get("evidence", []) if e.get("line")), None)
        self.refresh_view()
        if ev is None:
            self.query_one(AlertsPanel).add(f"{d['signature']}: evidence is not a log line", "dim")
            return
        self.post_message(JumpTo(int(ev["line"])))

    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.display = True
        box.focus()

    def action_cancel_search(self) -> None:
        box = self.query_one("#search", Input)
        box.display = False
        self.search_at = None
        self.query_one(LogPane).focus()
        self.query_one(LogPane).follow()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.search_needle = event.value
        self.search_at = None
        self.action_next_match()
        self.query_one(LogPane).focus()

    def action_next_match(self) -> None:
        if not self.search_needle:
            return
        hit = self.query_one(LogPane).search(self.search_needle, self.search_at)
        if hit is None:
            self.query_one(AlertsPanel).add(f"not found in the tail: {self.search_needle!r}", "dim")
            return
        self.search_at = hit
        self.query_one(LogPane).jump(hit)

    def action_follow(self) -> None:
        self.query_one(LogPane).follow()

    @work(thread=True, group="snapshot")
    def action_snapshot(self) -> None:
        """Take an evidence snapshot now (in the background)."""
        pane = self.attached.pane if self.attached else None
        snap = take_snapshot(pane)
        if snap is None:
            self.call_from_thread(self.query_one(AlertsPanel).add,
                                  "snapshot: not available in this install", "dim")
            return
        path = Path(str(self.session.source.capture) + ".snapshot.json")
        try:
            import json

            path.write_text(json.dumps(snap, indent=2, default=str), encoding="utf-8")
            msg = f"snapshot written to {path}"
        except OSError as e:
            msg = f"snapshot: cannot write {path} ({e.strerror})"
        self.call_from_thread(self.query_one(AlertsPanel).add, msg, "bold")

    @work(thread=True, group="retriage", exclusive=True)
    def action_retriage(self) -> None:
        """A fresh full triage of the capture so far (the live view is incremental)."""
        from triage.engine import analyze
        from triage.errors import TriageError
        from triage.report.json import report_dict

        try:
            rep = report_dict(analyze([str(self.session.source.capture)],
                                      rules=self.session.rules))
        except TriageError as e:
            self.call_from_thread(self.query_one(AlertsPanel).add, f"re-triage: {e}", "red")
            return
        live = [d for d in rep["diagnoses"] if d["evidence"] and d["evidence"][0].get("line")]
        self.call_from_thread(self._retriaged, live, len(rep["diagnoses"]))

    def _retriaged(self, diags: list[dict[str, Any]], total: int) -> None:
        if self.session.final_report is None and diags:
            self.session.diagnoses = diags
        self.query_one(AlertsPanel).add(f"re-triaged the capture: {total} diagnos"
                                        f"{'is' if total == 1 else 'es'}", "bold")
        self.refresh_view()

    async def action_quit(self) -> None:
        """Quit: the pipe is stopped and the pane's options restored."""
        self.exit(0)

    def finish(self) -> None:
        """After the app closed: end the watch properly if the run is still going."""
        with self._lock:
            if not self.session.done:
                self.session.source.close(None, None)
        for t in self._hooks:
            t.join(timeout=60)


def run_app(session: WatchSession, *, poll: float = 0.2, on_diagnosis: str | None = None) -> int:
    """Run the TUI until the user quits; the capture file stays."""
    app = WatchApp(session, poll=poll, on_diagnosis=on_diagnosis)
    try:
        code = app.run()
    finally:
        app.finish()
    if session.source.mode == "tmux" and session.source.capture.exists():
        print(f"triage: capture kept at {session.source.capture}")
    return int(code or 0)
