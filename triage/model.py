"""Plain data passed between the stages: ingest -> structure -> match -> reason -> report.

Everything here is a frozen dataclass (or a small enum) with no behaviour beyond
derived properties, so every stage can be tested on its own and every view (console,
JSON, SARIF, TUI) renders the same `Report`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any

from triage.native import native


class Confidence(IntEnum):
    """How sure a diagnosis is. Ordered: a higher value is surer."""

    POSSIBLE = 1
    LIKELY = 2
    CONFIRMED = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Confidence:
        return cls[text.strip().upper()]


@dataclass(frozen=True, slots=True)
class Line:
    """One logical log line after normalisation.

    `lineno` is the 1-based physical line in `source`; `seq` is the global order in
    which lines were read (across sources); `rank` is the demultiplexed rank or None;
    `ts` is a parsed timestamp (seconds, any epoch consistent within a run) or None.
    """

    source: str
    lineno: int
    text: str
    rank: int | None = None
    seq: int = 0
    ts: float | None = None
    raw: str = ""


def _line_builder() -> Callable[[str, int, str, int | None, int, float | None], Line]:
    """`Line(source, lineno, text, rank, seq, ts)` at a third of the cost: a frozen
    dataclass's `__init__` sets each field through `object.__setattr__`, which the
    hottest object of triage (one per line read) cannot afford; the slots' own setters
    build the same frozen object."""
    new = object.__new__
    s_source, s_lineno, s_text, s_rank, s_seq, s_ts, s_raw = (
        getattr(Line, f).__set__ for f in ("source", "lineno", "text", "rank", "seq", "ts", "raw")
    )

    def new_line(source: str, lineno: int, text: str, rank: int | None, seq: int, ts: float | None) -> Line:
        line = new(Line)
        s_source(line, source)
        s_lineno(line, lineno)
        s_text(line, text)
        s_rank(line, rank)
        s_seq(line, seq)
        s_ts(line, ts)
        s_raw(line, "")
        return line

    return new_line


def _native_builder() -> Callable[[str, int, str, int | None, int, float | None], Line] | None:
    """`new_line` by the native module (`native.line`: the same slots set, in C), where
    it is built."""
    if native is None:
        return None
    native.line_type(Line)
    return native.line  # type: ignore[no-any-return]


new_line = _native_builder() or _line_builder()


@dataclass(frozen=True, slots=True)
class ExceptionInfo:
    """A Python exception as printed in a traceback (or a bare `Type: message` line)."""

    type: str
    message: str
    line: Line
    frames: tuple[str, ...] = ()  # the innermost ones (a traceback's last eight)
    chain_index: int = 0  # 0 = first printed in its chain (the root of a chain)
    chained_as: str | None = None  # "during-handling" | "direct-cause" | None
    has_traceback: bool = False
    # printed by Python's unraisable hook (`Exception ignored in: ...`): raised in a finalizer,
    # a `__del__`, an atexit callback, and swallowed there, so it did not end the run
    ignored: bool = False
    # the outermost frame when `frames` no longer holds it: where the traceback starts (a
    # DataLoader worker's loop, a launcher's entry point) is a fact rules read, however deep
    # the stack under it
    first_frame: str | None = None

    @property
    def all_kept_frames(self) -> tuple[str, ...]:
        """The outermost frame (when dropped from `frames`) and the innermost ones."""
        return self.frames if self.first_frame is None else (self.first_frame, *self.frames)

    @property
    def short_type(self) -> str:
        return self.type.rsplit(".", 1)[-1]


@dataclass(frozen=True, slots=True)
class Event:
    """A structured fact read from the log: a torchrun failure report, a phase change,
    a C++ exception trace, a metric sample. `data` holds the event's fields."""

    kind: str
    line: Line
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EndState:
    """How the log ends. `kind` is one of: clean-exit, traceback, error, cut-mid-line,
    no-terminal-event, empty."""

    kind: str
    last_phase: str | None = None
    line: int | None = None
    source: str | None = None
    last_text: str = ""

    @property
    def truncated(self) -> bool:
        return self.kind in ("cut-mid-line", "no-terminal-event")


@dataclass(frozen=True, slots=True)
class SourceInfo:
    path: str
    lines: int
    ranks: tuple[int, ...] = ()
    truncated: bool = False
    ends_without_newline: bool = False


@dataclass(frozen=True, slots=True)
class Evidence:
    """A line of the log, or a fact from the evidence snapshot, that supports a claim."""

    text: str
    source: str | None = None
    line: int | None = None
    rank: int | None = None
    fact: str | None = None
    context: tuple[str, ...] = ()

    @classmethod
    def from_line(cls, line: Line, context: tuple[str, ...] = ()) -> Evidence:
        return cls(text=line.text, source=line.source, line=line.lineno, rank=line.rank, context=context)

    @classmethod
    def from_exception(cls, exc: ExceptionInfo, context: tuple[str, ...] = ()) -> Evidence:
        """The exception's line; when its message opens on the next line (`RuntimeError: `
        and then the text, as multiprocessing and some libraries print it), the message's
        first line is cited with it, so the evidence says what failed."""
        ev = cls.from_line(exc.line, context)
        head = exc.line.text.rstrip()
        if head.endswith(":") and head.endswith(exc.short_type + ":"):
            first = exc.message.split("\n", 1)[0].strip()
            if first:
                ev = replace(ev, text=f"{head} {first}")
        return ev


@dataclass(frozen=True, slots=True)
class Finding:
    """One rule clause that matched: the raw material of a diagnosis."""

    rule_id: str
    confidence: Confidence
    evidence: Evidence
    order: float  # global read order (seq); inf for inferences from the end state
    clause: str = ""
    ts: float | None = None  # the line's timestamp, when it had one
    kind: str = "line"  # the clause kind that produced it: line, exception, event, end, fact
    groups: tuple[tuple[str, str], ...] = ()  # the regex's named groups, for {match:NAME}


@dataclass(frozen=True, slots=True)
class Diagnosis:
    signature: str
    rule: str
    title: str
    confidence: Confidence
    score: float
    role: str  # root-cause | consequence | contributing
    summary: str = ""
    evidence: tuple[Evidence, ...] = ()
    counter_evidence: tuple[Evidence, ...] = ()
    explains: tuple[str, ...] = ()
    explained_by: str | None = None
    checks: tuple[str, ...] = ()
    remedies: tuple[str, ...] = ()
    docs: tuple[str, ...] = ()
    first_seen: float = 0.0
    category: str = ""
    ranks: tuple[int, ...] = ()  # every rank it was seen on (evidence is capped)
    occurrences: int = 0
    # A fallback rule (truncated-unknown) states how the log ends, not a cause: views show
    # it apart from the causes and --fail-on never counts it.
    fallback: bool = False


@dataclass(frozen=True, slots=True)
class RuledOut:
    signature: str
    because: str


@dataclass(frozen=True, slots=True)
class RankSpan:
    """One rank's stretch of one source, for the rank timeline: where its output begins
    and ends, the phases it went through, its last step and its first error.

    `rank` is None for the lines of a source that carry no rank (the launcher's own
    output). `phases` are (phase, line, ts) where each phase began, in order (capped)."""

    source: str
    rank: int | None
    first_line: int
    last_line: int
    first_ts: float | None = None
    last_ts: float | None = None
    last_text: str = ""
    last_step: int | None = None
    phases: tuple[tuple[str, int, float | None], ...] = ()
    first_error: Evidence | None = None
    first_error_ts: float | None = None
    error_step: int | None = None  # the last step it logged before its first error


@dataclass(frozen=True, slots=True)
class Series:
    """One metric of one rank over the run (loss, grad_norm, tok_s, step_time_s).

    `points` are (x, y) over the whole run, evenly thinned to a bounded count (first
    and last kept); `x` says what x is: "step", or "sample" (the n-th value) when the
    lines carry no step. `nonfinite` are the x of NaN/inf values (never thinned away,
    capped); `count` is how many values the log had."""

    name: str
    rank: int | None
    x: str
    points: tuple[tuple[float, float], ...]
    nonfinite: tuple[float, ...] = ()
    count: int = 0


@dataclass(frozen=True, slots=True)
class GpuReading:
    """One device of the evidence snapshot: memory and utilization when it was taken."""

    index: int
    name: str = ""
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None
    utilization_pct: float | None = None


@dataclass(frozen=True, slots=True)
class Report:
    sources: tuple[SourceInfo, ...]
    end_state: EndState
    diagnoses: tuple[Diagnosis, ...]
    ruled_out: tuple[RuledOut, ...] = ()
    notes: tuple[str, ...] = ()
    ranks: tuple[int, ...] = ()
    metrics: dict[str, Any] = field(default_factory=dict)
    evidence_summary: dict[str, str] = field(default_factory=dict)
    # The exception the log ends with (and the root of its chain), recognised or not.
    last_error: Evidence | None = None
    root_error: Evidence | None = None
    # Every frame printed for that root error (root_error.context keeps the last two): the
    # history's fingerprint looks for the innermost frame of the user's own code in them.
    error_frames: tuple[str, ...] = ()
    # What the crash history adds (triage.history): the run, the fingerprint, recurrences.
    # Empty without a history store (--no-history).
    history: dict[str, Any] = field(default_factory=dict)
    # Data for pictures (the HTML view): per-rank spans, metric series, GPU readings.
    timeline: tuple[RankSpan, ...] = ()
    series: tuple[Series, ...] = ()
    gpus: tuple[GpuReading, ...] = ()

    @property
    def top(self) -> Diagnosis | None:
        return self.diagnoses[0] if self.diagnoses else None


@dataclass(frozen=True, slots=True)
class Unknown:
    """A fact that could not be read, and why. Proves nothing either way."""

    reason: str = "unknown"

    def __str__(self) -> str:
        return f"unknown ({self.reason})"
