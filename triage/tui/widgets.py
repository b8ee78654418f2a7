"""Small widgets of the watch screen. Each turns plain data (the engine's `Diagnosis`
and `RuledOut`, the session's RunState, a GpuSample) into text; none of them reads
files or tmux."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Static

from triage.model import Diagnosis, Evidence, RuledOut
from triage.watch.gpu import GpuSample
from triage.watch.session import RunState

CONF_STYLE = {"confirmed": "bold red", "likely": "bold yellow", "possible": "cyan"}


def fmt_duration(seconds: float) -> str:
    """00:04:12 (hours grow past 99 if they must)."""
    s = max(0, int(seconds))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def end_words(exit_status: int | None, signal: str | None, reason: str) -> str:
    """How the run ended, in the header's words: "exit -9 (SIGKILL)", "exit 0",
    "pane-closed (exit status unknown)"."""
    if exit_status is None and signal is None:
        return f"{reason} (exit status unknown)" if reason != "interrupted" else reason
    how = f"exit {exit_status}" if exit_status is not None else "killed"
    return how + (f" ({signal})" if signal else "")


def status_text(target: str, pane: str | None, run: RunState, now: float, clock_text: bool = True) -> Text:
    """The top line: what is watched, for how long (the clock stops at the end), how
    fresh the output is, where the run is, and how it ended."""
    parts = [target]
    if pane:
        parts.append(f"pane {pane}")
    if clock_text:
        word = "ran" if run.ending_at is not None else "running"
        parts.append(f"{word} {fmt_duration(run.elapsed(now))}")
        if run.last_output is not None:
            at = run.ending_at if run.ending_at is not None else now
            parts.append(f"last output {max(0, int(at - run.last_output))} s ago")
    if run.phase:
        parts.append(f"phase: {run.phase}")
    if run.step is not None:
        parts.append(f"step {run.step}")
    t = Text(" · ".join(parts))
    if run.stalled_since is not None and run.ending_at is None:
        quiet = f" {int(now - run.stalled_since)} s" if clock_text else ""
        t.append(f" · STALLED{quiet}: no step line (training-hang?)", style="bold red")
    if run.ended is not None:
        e = run.ended
        t.append(
            f" · ended: {end_words(e.exit_status, e.signal, e.reason)}",
            style="bold red" if e.exit_status or e.signal else "bold",
        )
    elif run.ending_at is not None:
        t.append(" · ended: reading the last output and triaging…", style="bold")
    return t


class StatusBar(Static):
    """The watched target, run time, freshness of the output, phase and step."""


class LogPane(Static, can_focus=True):
    """The log's tail; lines that a rule matched are highlighted. Remembers which
    capture line each row shows, so evidence and search hits can be scrolled to.

    It draws only the rows that fit, as one text, without a layout pass: a scrolling
    log widget re-lays out the whole screen for every line it gets, which made the
    screen cost 8% of a core at 3 lines a second. Keys: up/down, page up/down, end."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "scroll_rows(-1)", show=False),
        Binding("down", "scroll_rows(1)", show=False),
        Binding("pageup", "scroll_rows(-20)", show=False),
        Binding("pagedown", "scroll_rows(20)", show=False),
        Binding("end", "follow_end", show=False),
    ]

    def __init__(self, max_lines: int = 2000, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rows: deque[tuple[int | None, str]] = deque(maxlen=max_lines)
        self._hot: deque[bool] = deque(maxlen=max_lines)  # matched by a rule
        self.auto_scroll = True
        self.top = 0  # the first row shown when not following the end
        self._dirty = True

    def add_line(self, lineno: int, text: str, matched: bool) -> None:
        """Append one line of the capture (shown at the next `flush`)."""
        self.rows.append((lineno, text))
        self._hot.append(matched)
        self._dirty = True

    def add_gap(self, skipped: int) -> None:
        """Mark lines that arrived too fast to show (they are in the capture file)."""
        self.rows.append((None, f"… {skipped} lines not shown (see the capture file)"))
        self._hot.append(False)
        self._dirty = True

    def flush(self) -> None:
        """Repaint (this widget only, no layout) if rows were added or the view moved."""
        if self._dirty:
            self._dirty = False
            self.refresh()

    def render(self) -> Text:
        """The rows that fit, from `top` (or the last ones while following the end)."""
        h = max(1, self.content_size.height or 30)
        n = len(self.rows)
        if self.auto_scroll:
            self.top = max(0, n - h)
        self.top = max(0, min(self.top, max(0, n - 1)))
        t = Text(no_wrap=True, overflow="crop", end="")
        for i in range(self.top, min(n, self.top + h)):
            ln, text = self.rows[i]
            style = "bold red" if self._hot[i] else ("dim italic" if ln is None else "")
            if i > self.top:
                t.append("\n")
            t.append(text, style=style)
        return t

    def row_of(self, lineno: int) -> int | None:
        """The row showing capture line `lineno`, if it is still in the tail."""
        for i, (ln, _) in enumerate(self.rows):
            if ln == lineno:
                return i
        return None

    def jump(self, lineno: int) -> bool:
        """Scroll so that `lineno` shows (and stop following); False if not in the tail."""
        row = self.row_of(lineno)
        if row is None:
            return False
        self.auto_scroll = False
        self.top = max(0, row - (self.content_size.height or 30) // 2)
        self._dirty = True
        self.flush()
        return True

    def follow(self) -> None:
        """Follow the end of the log again."""
        self.auto_scroll = True
        self._dirty = True
        self.flush()

    def action_scroll_rows(self, delta: int) -> None:
        """Move the view by `delta` rows (scrolling up stops following the end)."""
        h = self.content_size.height or 30
        if self.auto_scroll:
            self.top = max(0, len(self.rows) - h)
        self.top = max(0, min(self.top + delta, max(0, len(self.rows) - h)))
        self.auto_scroll = self.top >= len(self.rows) - h
        self._dirty = True
        self.flush()

    def action_follow_end(self) -> None:
        self.follow()

    def on_mouse_scroll_up(self) -> None:
        self.action_scroll_rows(-3)

    def on_mouse_scroll_down(self) -> None:
        self.action_scroll_rows(3)

    def search(self, needle: str, before: int | None = None) -> int | None:
        """The capture line of the last row before `before` containing `needle`
        (case-insensitive), searching backwards from the end."""
        low = needle.lower()
        for ln, text in reversed(self.rows):
            if ln is None or (before is not None and ln >= before):
                continue
            if low in text.lower():
                return ln
        return None


def diagnoses_text(diags: Sequence[Diagnosis], selected: int | None = None) -> Text:
    """One row per diagnosis, root cause first (the report's order), with confidence
    and role; the selected one (shown in the details pane) is marked."""
    t = Text()
    t.append("diagnoses  ([ ] select)\n", style="bold")
    if not diags:
        t.append("(none yet)", style="dim")
        return t
    for i, d in enumerate(diags):
        conf = d.confidence.label
        mark = "▶ " if i == selected else "  "
        t.append(f"{mark}{i + 1} ", style="bold")
        t.append(d.signature, style="bold")
        t.append(f"  {conf}", style=CONF_STYLE.get(conf, ""))
        if d.role and d.role != "root-cause":
            t.append(f"  ({d.role})", style="dim")
        t.append("\n")
    t.rstrip()
    return t


def details_text(
    d: Diagnosis | None,
    ruled_out: Iterable[RuledOut] = (),
    line_text: Callable[[int], str | None] | None = None,
    *,
    index: int = 0,
    total: int = 0,
) -> Text:
    """Everything about one diagnosis: its evidence with context (the capture line
    before an evidence line, and the frames the report kept), what it explains, the
    checks that tell it from the others, the fixes, what speaks against it, and what
    was ruled out (for the report as a whole)."""
    t = Text()
    if d is None:
        t.append("details\n", style="bold")
        t.append("(no diagnosis yet)", style="dim")
        return t
    _details_head(t, d, index, total)
    t.append("evidence\n", style="bold underline")
    for e in d.evidence:
        _evidence_row(t, e, line_text)
    _details_tail(t, d, tuple(ruled_out))
    t.rstrip()
    return t


def _details_head(t: Text, d: Diagnosis, index: int, total: int) -> None:
    """`2/3 signature  confidence  role of X`, then the title."""
    conf = d.confidence.label
    t.append(f"{index + 1}/{total} ", style="bold")
    t.append(d.signature, style="bold")
    t.append(f"  {conf}", style=CONF_STYLE.get(conf, ""))
    t.append(f"  {d.role}", style="dim")
    if d.explained_by:
        t.append(f" of {d.explained_by}", style="dim")
    t.append(f"\n{d.title}\n")


def _evidence_row(t: Text, e: Evidence, line_text: Callable[[int], str | None] | None) -> None:
    """One evidence line, after its context: the frames the report kept, else the
    capture line just before it when the log pane still has it."""
    context = e.context[-2:]
    if e.line and not context and line_text is not None:
        before = line_text(e.line - 1)
        if before is not None:
            t.append(f"  {e.line - 1:>6}  {before[:160]}\n", style="dim")
    for c in context:
        t.append(f"          {c[:160]}\n", style="dim")
    where = f"{e.line:>6}" if e.line else (" fact " if e.fact else "   -  ")
    t.append(f"> {where}  {e.text[:240]}\n")


def _details_tail(t: Text, d: Diagnosis, ruled: tuple[RuledOut, ...]) -> None:
    """What the diagnosis explains, its checks and fixes, what speaks against it, and
    what the report ruled out."""
    if d.explains:
        t.append("explains: ", style="bold")
        t.append(", ".join(d.explains) + "\n", style="dim")
    if d.checks:
        t.append("checks\n", style="bold underline")
        for c in d.checks:
            t.append(f"  $ {c}\n", style="green")
    if d.remedies:
        t.append("fixes\n", style="bold underline")
        for r in d.remedies:
            t.append(f"  - {r}\n")
    if d.counter_evidence:
        t.append("against\n", style="bold underline")
        for e in d.counter_evidence:
            t.append(f"  - {e.text[:240]}\n", style="yellow")
    if ruled:
        t.append("ruled out\n", style="bold underline")
        for x in ruled:
            t.append(f"  - {x.signature}: {x.because}\n", style="dim")


class DetailsPanel(Static):
    """The selected diagnosis in full: evidence, checks, fixes, ruled out."""


class DiagnosesPanel(Static):
    """The live diagnoses, best first."""


def gpu_text(sample: GpuSample | None) -> Text:
    """Per-GPU memory and utilization; N/A (with the reason) without NVML."""
    t = Text()
    t.append("GPU   mem used/total      util\n", style="bold")
    if sample is None:
        t.append("(sampling…)", style="dim")
        return t
    if sample.unknown is not None or not sample.devices:
        t.append(f"N/A  {sample.unknown or 'no GPUs found'}", style="dim")
        return t
    for g in sample.devices:
        mem = (
            f"{g.memory_used_mib / 1024:5.1f}/{g.memory_total_mib / 1024:.0f}G"
            if g.memory_used_mib is not None and g.memory_total_mib is not None
            else "N/A"
        )
        util = f"{g.utilization_pct:3d}%" if g.utilization_pct is not None else " N/A"
        t.append(f"{g.index:<4d}  {mem:<18s}  {util}\n")
    t.rstrip()
    return t


class GpuPanel(Static):
    """GPU memory and utilization from NVML."""


def run_text(run: RunState) -> Text:
    """Step, loss and throughput now."""
    parts = []
    parts.append(f"step {run.step}" if run.step is not None else "step -")
    parts.append(f"loss {run.loss:.4g}" if run.loss is not None else "loss -")
    parts.append(f"tok/s {run.toks:,.0f}" if run.toks is not None else "tok/s -")
    parts.append(f"{run.lines} lines")
    return Text("  ".join(parts))


BARS = "▁▂▃▄▅▆▇█"


def spark(values: Sequence[float], width: int) -> str:
    """The last `width` values as bars on an honest scale: from 0 to the largest value,
    so a ±2.5% wobble stays a flat row and a halving is half the height (a min-to-max
    scale would draw both as full swings). Values that are not positive draw as blanks."""
    vals = list(values)[-width:] if width > 0 else []
    top = max((v for v in vals if v > 0), default=0.0)
    if top <= 0:
        return ""
    out = []
    for v in vals:
        if v <= 0:
            out.append(" ")
        else:
            out.append(BARS[min(len(BARS) - 1, max(0, round(v / top * len(BARS)) - 1))])
    return "".join(out)


def spark_text(label: str, values: Sequence[float], width: int, unit: str = "") -> Text:
    """Two rows: `label now (0–max)`, then the bars; the scale is stated because it
    starts at 0 (see spark)."""
    vals = list(values)
    t = Text()
    t.append(f"{label} ", style="bold")
    if not vals:
        t.append("-", style="dim")
        return t
    t.append(f"{_num(vals[-1])}{unit} ")
    t.append(f"max {_num(max(vals))}\n", style="dim")  # the bars' top; their bottom is 0
    t.append(spark(vals, width))
    return t


def _num(v: float) -> str:
    """Three significant digits, k and M for the large throughputs."""
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:.3g}"


class RunPanel(Horizontal):
    """Numbers and sparklines of the run: loss, step time and tok/s over the last steps."""

    SPARK = 24  # bars per sparkline

    def compose(self) -> ComposeResult:
        yield Static(id="run-stats")
        yield Static(id="loss-spark", classes="spark")
        yield Static(id="step-spark", classes="spark")
        yield Static(id="toks-spark", classes="spark")

    def show(self, run: RunState) -> None:
        """Redraw from the run state (a widget is updated only when its text changes)."""
        self._set("#run-stats", lambda w: run_text(run))
        self._set("#loss-spark", lambda w: spark_text("loss", copy_series(run.losses), w))
        self._set("#step-spark", lambda w: spark_text("step s", copy_series(run.step_times), w))
        self._set("#toks-spark", lambda w: spark_text("tok/s", copy_series(run.toks_series), w))

    def _set(self, sel: str, text: Callable[[int], Text]) -> None:
        widget = self.query_one(sel, Static)
        # fixed sizes (app.tcss): a new step redraws these cells only, no layout
        set_if_changed(widget, text(widget.size.width or self.SPARK), layout=False)


def copy_series(series: deque[float]) -> list[float]:
    """A copy of a series the poll thread may be appending to right now."""
    for _ in range(5):
        try:
            return list(series)
        except RuntimeError:  # "deque mutated during iteration": try again
            continue
    return []


def set_if_changed(widget: Static, text: Text, *, layout: bool = True) -> None:
    """Update a Static only when its content differs: an unchanged update still costs a
    repaint, and with `layout` a layout of the whole screen, which is most of a busy
    screen's CPU. `layout=False` for widgets whose size never depends on their text."""
    key = (text.plain, tuple((str(s.style), s.start, s.end) for s in text.spans))
    if getattr(widget, "_triage_shown", None) == key:
        return
    widget._triage_shown = key  # type: ignore[attr-defined]
    widget.update(text, layout=layout)


class AlertsPanel(Static):
    """The last few alerts: a diagnosis appeared, the pane died, output stalled."""

    def __init__(self, keep: int = 6, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alerts: deque[tuple[str, str]] = deque(maxlen=keep)

    def add(self, text: str, style: str = "bold yellow") -> None:
        """Add an alert and redraw."""
        self.alerts.append((text, style))
        t = Text()
        t.append("alerts\n", style="bold")
        for msg, st in self.alerts:
            t.append(f"! {msg}\n", style=st)
        t.rstrip()
        self.update(t)

    def on_mount(self) -> None:
        self.update(Text.assemble(("alerts\n", "bold"), ("(none)", "dim")))
