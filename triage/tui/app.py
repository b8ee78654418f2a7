"""The `triage watch` screen: log tail, live diagnoses with the selected one in full
(evidence, checks, fixes, ruled out), GPUs, run sparklines, alerts.

The watch session does the work (capture, diagnosis, stall and end detection); the
app polls it from a worker thread and shows the result. The end of a run (waiting for
the last bytes, the snapshot, the full triage) runs in that thread too: the UI thread
only redraws, and the header's clock goes on (and stops at the end) while it runs.
Keys are in the footer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Static
from textual.worker import get_current_worker

from triage.engine import analyze
from triage.errors import TriageError
from triage.ingest.lines import shown_texts
from triage.ingest.normalize import SourceState
from triage.model import Confidence, Diagnosis, RuledOut
from triage.tui.messages import JumpTo, Polled, WatchEvents
from triage.tui.widgets import (
    AlertsPanel,
    DetailsPanel,
    DiagnosesPanel,
    GpuPanel,
    LogPane,
    RunPanel,
    StatusBar,
    details_text,
    diagnoses_text,
    end_words,
    gpu_text,
    set_if_changed,
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
from triage.watch.gpu import GpuSample
from triage.watch.session import WatchSession, run_hook, take_snapshot

SHOW_PER_POLL = 400  # lines written to the log pane per poll; the rest is summarised
CLOCK_INTERVAL = 1.0  # seconds between redraws of the header's clock
UI_INTERVAL = 0.5  # seconds between redraws for new lines alone (events redraw at once)
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
                text = " | ".join(shown_texts(raw.rstrip(b"\n"), state))
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
        Binding("right_square_bracket", "select(1)", "next diagnosis", key_display="]"),
        Binding("left_square_bracket", "select(-1)", "previous", key_display="["),
        Binding("e", "evidence", "evidence"),
        Binding("s", "snapshot", "snapshot"),
        Binding("r", "retriage", "re-triage"),
        Binding("f", "follow", "follow", show=False),
        Binding("n", "next_match", "next match", show=False),
        Binding("escape", "cancel_search", "cancel", show=False),
    ]

    def __init__(
        self,
        session: WatchSession,
        *,
        poll: float = 0.2,
        on_diagnosis: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        gpu_interval: float = 2.0,
        clock_text: bool = True,
        timers: bool = True,
    ) -> None:
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
        self.selected = 0  # the diagnosis shown in the details pane
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
                yield DetailsPanel(id="details")
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
        self.query_one(DetailsPanel).update(details_text(None))
        self.query_one(GpuPanel).update(gpu_text(None))
        self.handle_events(self.session.start())
        self.refresh_view()
        if self.timers:
            self._poll_loop()
            # the header's clock has a resolution of a second; it must move even while
            # the poll thread is busy with the end of the run (snapshot, full triage)
            self.set_interval(CLOCK_INTERVAL, self.refresh_status)
            self.set_interval(self.gpu_interval, self._sample_gpus)
            self._sample_gpus()
        else:
            self.show_gpus(self.session.gpu_sample())

    # -- polling ------------------------------------------------------------------
    @work(thread=True, group="poll")
    def _poll_loop(self) -> None:
        """One thread polls the session for the whole watch (a thread per poll costs
        more than the poll) and wakes the UI only when something changed."""
        worker = get_current_worker()
        last_ui, pending = float("-inf"), False
        while not worker.is_cancelled and not self.session.done:
            t0 = time.monotonic()
            with self._lock:
                before = (self.session.live.lines, self.session.run.step)
                events = self.session.poll()
                pending |= before != (self.session.live.lines, self.session.run.step)
            if events:
                self.post_message(WatchEvents(events))
            # events are drawn at once; plain new lines at most every UI_INTERVAL (each
            # redraw costs the same whether it brings one line or fifty)
            if events or (pending and t0 - last_ui >= UI_INTERVAL):
                self.post_message(Polled(0))
                last_ui, pending = t0, False
            time.sleep(max(0.0, self.poll_interval - (time.monotonic() - t0)))
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
        set_if_changed(self.query_one(GpuPanel), gpu_text(sample))  # every 2 s, rarely new

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
                alerts.add(
                    f"diagnosis: {d.signature} ({d.confidence.label}){where}",
                    "bold red" if d.confidence is Confidence.CONFIRMED else "bold yellow",
                )
                if self.on_diagnosis:
                    self._hooks.append(run_hook(self.on_diagnosis, ev.payload()))
            elif isinstance(ev, Stalled):
                hang = "; GPUs busy: training-hang?" if ev.gpus_busy else ""
                alerts.add(
                    f"stalled: no step for {ev.seconds:.0f} s (usual {ev.usual_interval:.1f} s){hang}",
                    "bold red",
                )
            elif isinstance(ev, Resumed):
                alerts.add(f"resumed after {ev.seconds:.0f} s", "green")
            elif isinstance(ev, Notice):
                alerts.add(ev.text, "yellow")
            elif isinstance(ev, Ended):
                how = end_words(ev.exit_status, ev.signal, ev.reason)
                alerts.add(
                    f"run ended: {how}; {ev.lines} lines in {ev.capture}",
                    "bold red" if ev.exit_status or ev.signal else "bold",
                )
            elif isinstance(ev, Triaged):
                n = len(ev.report.diagnoses)
                alerts.add(f"full triage of the capture: {n} diagnos{'is' if n == 1 else 'es'}", "bold")
                if ev.snapshot is not None:
                    from triage.watch.gpu import from_snapshot

                    self.show_gpus(from_snapshot(ev.snapshot))

    def current_diagnoses(self) -> list[Diagnosis]:
        """The final triage's diagnoses once the run ended, else the live ones."""
        if self.session.final is not None:
            return list(self.session.final.diagnoses)
        return self.session.diagnoses

    def current_ruled_out(self) -> list[RuledOut]:
        """What the final triage (else the live view) ruled out."""
        if self.session.final is not None:
            return list(self.session.final.ruled_out)
        return list(self.session.ruled_out)

    def refresh_view(self) -> None:
        """Redraw the log tail, diagnoses, details, run panel and status line (each
        widget only when its text changed)."""
        self._write_tail()
        diags = self.current_diagnoses()
        if diags:
            self.selected = min(self.selected, len(diags) - 1)
        sel = self.selected if diags else None
        set_if_changed(self.query_one(DiagnosesPanel), diagnoses_text(diags, sel))
        d = diags[self.selected] if diags else None
        set_if_changed(
            self.query_one(DetailsPanel),
            details_text(d, self.current_ruled_out(), self._line_text, index=self.selected, total=len(diags)),
        )
        self.query_one(RunPanel).show(self.session.run)
        self.refresh_status()

    def _line_text(self, lineno: int) -> str | None:
        """Capture line `lineno` as the log pane shows it, when it is in the tail."""
        log = self.query_one(LogPane)
        row = log.row_of(lineno)
        return log.rows[row][1] if row is not None else None

    def refresh_status(self) -> None:
        """Redraw the status line (run time, freshness, stall, how the run ended)."""
        target = self.attached.target if self.attached else self.session.source.name
        pane = self.attached.pane if self.attached else None
        set_if_changed(
            self.query_one(StatusBar),
            status_text(target, pane, self.session.run, self.clock(), self.clock_text),
            layout=False,
        )  # one row, always

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
            text = " | ".join(shown_texts(raw, state))
            log.add_line(lineno, text, lineno in matched)
        self.shown_upto = total
        log.flush()

    # -- actions ------------------------------------------------------------------
    def jump(self, lineno: int) -> None:
        """Show capture line `lineno`: in the log pane if it is in the tail, else in
        the evidence view read from the capture file."""
        if self.query_one(LogPane).jump(lineno):
            return
        self.push_screen(
            EvidenceScreen(
                f"line {lineno} of {self.session.source.capture}",
                context_lines(self.session.source.capture, lineno),
                lineno,
            )
        )

    def action_select(self, step: int) -> None:
        """Select the next (1) or previous (-1) diagnosis for the details pane."""
        diags = self.current_diagnoses()
        if not diags:
            return
        self.selected = (self.selected + step) % len(diags)
        self.refresh_view()

    def action_evidence(self) -> None:
        """Jump to the evidence line of the selected diagnosis."""
        diags = self.current_diagnoses()
        if not diags:
            self.query_one(AlertsPanel).add("no diagnosis yet: no evidence to show", "dim")
            return
        d = diags[min(self.selected, len(diags) - 1)]
        line = next((e.line for e in d.evidence if e.line), None)
        self.refresh_view()
        if line is None:
            self.query_one(AlertsPanel).add(f"{d.signature}: evidence is not a log line", "dim")
            return
        self.post_message(JumpTo(line))

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
            self.call_from_thread(
                self.query_one(AlertsPanel).add, "snapshot: not available in this install", "dim"
            )
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
        try:
            rep = analyze([str(self.session.source.capture)], rules=self.session.rules)
        except TriageError as e:
            self.call_from_thread(self.query_one(AlertsPanel).add, f"re-triage: {e}", "red")
            return
        live = [d for d in rep.diagnoses if d.evidence and d.evidence[0].line]
        self.call_from_thread(self._retriaged, live, len(rep.diagnoses))

    def _retriaged(self, diags: list[Diagnosis], total: int) -> None:
        if self.session.final is None and diags:
            self.session.diagnoses = diags
        self.query_one(AlertsPanel).add(
            f"re-triaged the capture: {total} diagnos{'is' if total == 1 else 'es'}", "bold"
        )
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
