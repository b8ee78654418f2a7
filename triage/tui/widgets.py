"""Small widgets of the watch screen. Each turns plain data (dicts from the JSON view,
the session's RunState, a GpuSample) into text; none of them reads files or tmux."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import RichLog, Sparkline, Static

from triage.watch.gpu import GpuSample
from triage.watch.session import RunState

CONF_STYLE = {"confirmed": "bold red", "likely": "bold yellow", "possible": "cyan"}


def fmt_duration(seconds: float) -> str:
    """00:04:12 (hours grow past 99 if they must)."""
    s = max(0, int(seconds))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def status_text(target: str, pane: str | None, run: RunState, now: float,
                clock_text: bool = True) -> Text:
    """The top line: what is watched, for how long, how fresh, where the run is."""
    parts = [target]
    if pane:
        parts.append(f"pane {pane}")
    if clock_text:
        parts.append(f"running {fmt_duration(now - run.started)}")
        if run.last_output is not None:
            parts.append(f"last output {max(0, int(now - run.last_output))} s ago")
    if run.phase:
        parts.append(f"phase: {run.phase}")
    if run.step is not None:
        parts.append(f"step {run.step}")
    t = Text(" · ".join(parts))
    if run.ended is not None:
        e = run.ended
        how = f"exit {e.exit_status}" if e.exit_status is not None else e.reason
        if e.signal:
            how += f" ({e.signal})"
        t.append(f" · ended: {how}", style="bold red" if e.exit_status else "bold")
    return t


class StatusBar(Static):
    """The watched target, run time, freshness of the output, phase and step."""


class LogPane(RichLog):
    """The log's tail; lines that a rule matched are highlighted. Remembers which
    capture line each row shows, so evidence and search hits can be scrolled to."""

    def __init__(self, max_lines: int = 2000, **kwargs: Any) -> None:
        super().__init__(max_lines=max_lines, wrap=False, highlight=False, markup=False,
                         auto_scroll=True, **kwargs)
        self.rows: deque[tuple[int | None, str]] = deque(maxlen=max_lines)

    def add_line(self, lineno: int, text: str, matched: bool) -> None:
        """Append one line of the capture."""
        style = "bold red" if matched else ""
        self.rows.append((lineno, text))
        self.write(Text(text, style=style, no_wrap=True, end=""))

    def add_gap(self, skipped: int) -> None:
        """Mark lines that arrived too fast to show (they are in the capture file)."""
        self.rows.append((None, ""))
        self.write(Text(f"… {skipped} lines not shown (see the capture file)", style="dim italic"))

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
        self.scroll_to(y=max(0, row - self.size.height // 2), animate=False)
        return True

    def follow(self) -> None:
        """Follow the end of the log again."""
        self.auto_scroll = True
        self.scroll_end(animate=False)

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


def diagnoses_text(diags: Sequence[dict[str, Any]], selected: int | None = None) -> Text:
    """Root cause first (the session keeps the report's order), with confidence."""
    t = Text()
    t.append("diagnoses\n", style="bold")
    if not diags:
        t.append("(none yet)", style="dim")
        return t
    for i, d in enumerate(diags):
        conf = str(d.get("confidence", ""))
        mark = "▶ " if i == selected else "  "
        t.append(f"{mark}{i + 1} ", style="bold")
        t.append(str(d.get("signature", "")), style="bold")
        t.append(f"  {conf}", style=CONF_STYLE.get(conf, ""))
        role = d.get("role")
        if role and role != "root-cause":
            t.append(f"  ({role})", style="dim")
        t.append("\n")
        title = str(d.get("title", ""))
        t.append(f"    {title[:200]}\n", style="")
        ev = next((e for e in d.get("evidence", []) if e.get("line")), None)
        if ev is not None:
            t.append(f"    line {ev['line']}: {str(ev.get('text', ''))[:120]}\n", style="dim")
    t.rstrip()
    return t


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
        mem = (f"{g.memory_used_mib / 1024:5.1f}/{g.memory_total_mib / 1024:.0f}G"
               if g.memory_used_mib is not None and g.memory_total_mib is not None else "N/A")
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


class RunPanel(Horizontal):
    """Numbers and sparklines of the run: loss and tok/s over the last steps."""

    def compose(self) -> ComposeResult:
        yield Static(id="run-stats")
        yield Static("loss", classes="spark-label")
        yield Sparkline([], id="loss-spark")
        yield Static("tok/s", classes="spark-label")
        yield Sparkline([], id="toks-spark")

    def show(self, run: RunState) -> None:
        """Redraw from the run state."""
        self.query_one("#run-stats", Static).update(run_text(run))
        self.query_one("#loss-spark", Sparkline).data = list(run.losses)
        self.query_one("#toks-spark", Sparkline).data = list(run.toks_series)


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
