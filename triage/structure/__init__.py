"""structure: tracebacks, C++ traces, torchrun failure reports, phases, metrics and
the end state, read from a stream of `Line`s (one pass, bounded state).

Each kind of record has its own small reader with its own state (tracebacks.py,
launcher.py, cpp.py, progress.py, end.py); `Structurer` feeds every line to all of
them and puts their results together. `finish` is pure: it reads the readers out
without changing them, so it may be called at any time and lines fed on after it.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from typing import Any

from triage.ingest.literals import LinesWith
from triage.model import EndState, Event, ExceptionInfo, Line, SourceInfo
from triage.structure import cpp, launcher, tracebacks
from triage.structure.cpp import CppReader
from triage.structure.end import TAIL_LINES, EndReader
from triage.structure.launcher import LauncherReader
from triage.structure.progress import PROGRESS_KEPT, STALL_FACTOR, STALL_MIN_S, Progress, ProgressReader
from triage.structure.timeline import Timeline
from triage.structure.tracebacks import (
    MAX_EXCEPTIONS,
    MAX_MSG_LINES,
    QuotedSource,
    TracebackReader,
    chain_root,
    root_exception,
)

__all__ = [
    "MAX_EXCEPTIONS",
    "MAX_MSG_LINES",
    "PROGRESS_KEPT",
    "STALL_FACTOR",
    "STALL_MIN_S",
    "TAIL_LINES",
    "Progress",
    "Structure",
    "Structurer",
    "chain_root",
    "root_exception",
]


@dataclass
class Structure:
    """What the structure stage produced; the engine reads it."""

    exceptions: list[ExceptionInfo] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    phases: list[tuple[str, Line]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    end_state: EndState = field(default_factory=lambda: EndState("empty"))
    tail: list[Line] = field(default_factory=list)
    last_by_rank: dict[int, Line] = field(default_factory=dict)  # each rank's last output
    last_step_by_rank: dict[int, int] = field(default_factory=dict)
    # seqs of errors a launcher's report lists under "Failures:" (not its root cause)
    secondary_errors: set[int] = field(default_factory=set)
    # per (source, rank): the read order (seq) of its last lines of training progress
    progress: dict[tuple[str, int | None], list[int]] = field(default_factory=dict)
    # per-rank spans and metric series for pictures; the engine finishes them (findings)
    timeline: Timeline = field(default_factory=Timeline)

    @property
    def last_phase(self) -> str | None:
        return self.phases[-1][0] if self.phases else None


# what any line reader but progress acts on (each reader's module says its own)
LINE_TRIGGERS = (*tracebacks.TRIGGERS, *launcher.TRIGGERS, *cpp.TRIGGERS)
_TRIGGERS = LinesWith(LINE_TRIGGERS, which=False)


class Structurer:
    """Feed lines in order with `feed`; `finish` (any time, as often as wanted) gives
    the `Structure` of what was fed so far.

    A batch of lines may be fed faster: `triggered` says which of them hold a line
    reader's trigger, and `feed_batch` gives the others its quiet lane, which does only
    what every reader does with such a line, so the result is the same as `feed`'s."""

    def __init__(self) -> None:
        self.timeline = Timeline()
        self._events: list[Event] = []  # events of the line readers, in line order
        self.end = EndReader()
        self.launcher = LauncherReader(self._events)
        self.tracebacks = TracebackReader(self.timeline, lambda: self.launcher.in_failures)
        self.quotes = QuotedSource()
        self.quoted = False  # the line fed last is source code an IPython traceback quotes
        self.cpp = CppReader(self._events)
        self.progress = ProgressReader(self.timeline)
        self._open: set[tuple[str, int | None]] = set()  # streams a record is open on

    def feed(self, line: Line, *, progress: bool = True) -> None:
        """Read one line with every reader (the order keeps events in line order);
        `progress` False when `feed_progress` has read the line already."""
        if self.end.feed(line):
            self.timeline.line(line)
        self.quoted = self.quotes.feed(line)
        self.tracebacks.feed(line)
        self.launcher.feed(line)
        self.cpp.feed(line)
        if progress:
            self.progress.feed(line)
        # only this line's stream can have opened or closed a record
        key = (line.source, line.rank)
        if self.tracebacks.open_on(key) or self.quotes.open_on(key):
            self._open.add(key)
        else:
            self._open.discard(key)

    @staticmethod
    def triggered(texts: Sequence[str]) -> set[int] | None:
        """The indexes of the lines of a batch a line reader may act on (None: any)."""
        return set(_TRIGGERS.of(texts)) if _TRIGGERS.available else None

    def feed_batch(
        self, lines: Sequence[Line], hot: Container[int], want: Container[int]
    ) -> dict[int, tuple[str | None, bool]]:
        """`feed` each line of a batch whose `triggered` lines are `hot`, with the same
        result: the others, while no record is open that they may belong to (no
        traceback, quote or launcher report open on their stream), take the quiet lane,
        where the line readers only note them (the tail, the stream, its last text) and
        progress reads them. Returns the phase and `quoted` after each line whose index
        is in `want`."""
        out: dict[int, tuple[str | None, bool]] = {}
        end, timeline, cpp, tracebacks, progress = (
            self.end,
            self.timeline,
            self.cpp,
            self.tracebacks,
            self.progress,
        )
        launcher = self.launcher
        for i, line in enumerate(lines):
            if i in hot or launcher.busy or (self._open and (line.source, line.rank) in self._open):
                self.feed(line)
            else:  # the quiet lane: this loop runs once a line of every log
                if end.feed(line):
                    timeline.line(line)
                    cpp.note(line)
                self.quoted = False
                tracebacks.seen(line)
                progress.feed(line)
            if i in want:
                out[i] = (progress.phase, self.quoted)
        return out

    def feed_progress(self, line: Line) -> None:
        """Read one line for progress only (phase, steps, metrics): the live path's
        lines that no rule or structure marker can need."""
        self.progress.feed(line)

    @property
    def phase(self) -> str | None:
        """The phase the log is in at the line fed last."""
        return self.progress.phase

    def now(self) -> Progress:
        """Where the run is: what the report's last phase and metrics would say."""
        return self.progress.now()

    def gap(self, source: str) -> None:
        """Lines of `source` were skipped (fast path): no traceback or report spans it."""
        self.tracebacks.gap(source)
        self.launcher.gap()
        self._open = {k for k in self._open if self.tracebacks.open_on(k) or self.quotes.open_on(k)}

    def finish(self, sources: list[SourceInfo]) -> Structure:
        """The structure of what was fed, as if the log ended here; the readers are
        left as they are."""
        pending = self.tracebacks.pending()
        exceptions, secondary = self.tracebacks.finish()
        events = [*self._events, *self.launcher.pending(), *self.progress.events()]
        p = self.progress
        st = Structure(
            exceptions=exceptions,
            events=events,
            phases=list(p.phases),
            metrics=p.metrics(),
            end_state=self.end.end_state(sources, exceptions, p.phase, p.last_step_seq),
            last_by_rank=dict(self.end.last_by_rank),
            last_step_by_rank=dict(p.last_step_by_rank),
            secondary_errors=secondary,
            progress=p.progress(),
            timeline=self.timeline.with_errors(pending),
        )
        return st
