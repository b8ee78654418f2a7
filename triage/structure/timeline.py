"""Per-rank spans and metric series, read in the same pass as the rest of the structure.

Both are bounded whatever the log's size: a span is a handful of fields per (source,
rank) (at most MAX_SPANS of them), and a series keeps between SERIES_POINTS and twice
as many points over the whole run by halving its sampling stride as it grows, so the
curve of a 512 MiB log costs what the curve of a short one does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from triage.model import Evidence, ExceptionInfo, Finding, Line, RankSpan, Series

MAX_SPANS = 2048  # (source, rank) pairs tracked; a 500-rank folder needs 500
MAX_PHASES = 64  # phase changes kept per span
SERIES_POINTS = 512  # a series keeps SERIES_POINTS..2*SERIES_POINTS points
SERIES_RANKS = 8  # ranks drawn per metric: a curve of 500 ranks is a smear, 8 show spread
NONFINITE_KEPT = 256  # x of NaN/inf values kept per series

Key = tuple[str, int | None]


class SpanState:
    """What is known of one (source, rank) while lines stream by."""

    __slots__ = ("error", "error_step", "first", "last", "last_step", "phase", "phases", "step_ts")

    def __init__(self, first: Line) -> None:
        self.first = first
        self.last = first
        self.phase: str | None = None
        self.phases: list[tuple[str, int, float | None]] = []
        self.last_step: int | None = None
        self.error: ExceptionInfo | None = None
        self.error_step: int | None = None
        self.step_ts: tuple[int, float] | None = None  # (step, ts) of its last timed step


class Thinned:
    """A series thinned as it grows, its extremes kept: the finite values fall in
    buckets of `stride` consecutive values, and each bucket keeps its lowest and its
    highest value, so a loss spike or a stall's step time is never thinned away; when
    the buckets reach BUCKETS each pair merges and the stride doubles. The first and
    last values are always kept; non-finite values are kept apart."""

    __slots__ = ("buckets", "count", "finite", "first", "last", "nonfinite", "open", "stride", "x")

    BUCKETS = SERIES_POINTS - 2  # two points a bucket, the first and last values: <= 2 * SERIES_POINTS

    def __init__(self, x: str) -> None:
        self.x = x
        # a bucket: [low, high, values in it], each extreme as (index, x, y)
        self.buckets: list[list[Any]] = []
        self.open: list[Any] | None = None
        self.stride = 1
        self.finite = 0
        self.count = 0
        self.first: tuple[int, float, float] | None = None
        self.last: tuple[int, float, float] | None = None
        self.nonfinite: list[float] = []

    def add(self, x: float, y: float) -> None:
        self.count += 1
        if not math.isfinite(y):
            if len(self.nonfinite) < NONFINITE_KEPT:
                self.nonfinite.append(x)
            return
        n = self.finite
        point = (n, x, y)
        self.finite = n + 1
        self.last = point
        if not n:
            self.first = point
        b = self.open
        if b is None:
            b = self.open = [point, point, 1]
        else:
            if y < b[0][2]:
                b[0] = point
            elif y > b[1][2]:  # not both: the low is never above the high
                b[1] = point
            b[2] += 1
        if b[2] >= self.stride:
            self.buckets.append(b)
            self.open = None
            if len(self.buckets) >= self.BUCKETS:
                self._merge()

    def _merge(self) -> None:
        """Each pair of buckets becomes one, with the pair's extremes (the earlier on a tie)."""
        old, self.buckets = self.buckets, []
        for a, b in zip(old[::2], old[1::2], strict=False):
            low = a[0] if a[0][2] <= b[0][2] else b[0]
            high = a[1] if a[1][2] >= b[1][2] else b[1]
            self.buckets.append([low, high, a[2] + b[2]])
        if len(old) % 2:
            self.buckets.append(old[-1])
        self.stride *= 2

    def series(self, name: str, rank: int | None) -> Series:
        kept: dict[int, tuple[float, float]] = {}
        for p in (self.first, *(e for b in (*self.buckets, self.open) if b for e in b[:2]), self.last):
            if p is not None:
                kept[p[0]] = (p[1], p[2])
        pts = [kept[i] for i in sorted(kept)]  # in the order the values came
        return Series(
            name=name,
            rank=rank,
            x=self.x,
            points=tuple(pts),
            nonfinite=tuple(self.nonfinite),
            count=self.count,
        )


class Timeline:
    """Collects spans and series; the structurer calls it from its own hooks."""

    def __init__(self) -> None:
        self.spans: dict[Key, SpanState] = {}
        self.series: dict[tuple[str, int | None], Thinned] = {}
        self._ranks_per_metric: dict[str, set[int | None]] = {}
        self._samples: dict[tuple[str, int | None], int] = {}

    def line(self, line: Line) -> SpanState | None:
        """A non-blank line: it extends its span (or starts one)."""
        key = (line.source, line.rank)
        sp = self.spans.get(key)
        if sp is None:
            if len(self.spans) >= MAX_SPANS:
                return None
            sp = self.spans[key] = SpanState(line)
        sp.last = line
        return sp

    def phase(self, line: Line, phase: str) -> None:
        sp = self.spans.get((line.source, line.rank))
        if sp is not None and sp.phase != phase:
            sp.phase = phase
            if len(sp.phases) < MAX_PHASES:
                sp.phases.append((phase, line.lineno, line.ts))

    def step(self, line: Line, step: int) -> None:
        """A step line (one with a loss): the span's last step, and its step time when
        the line is timestamped."""
        sp = self.spans.get((line.source, line.rank))
        if sp is None:
            return
        sp.last_step = step
        if line.ts is None:
            return
        prev = sp.step_ts
        if prev is not None and step > prev[0] and line.ts >= prev[1]:
            self.metric("step_time_s", line, (line.ts - prev[1]) / (step - prev[0]), step)
        if prev is None or step != prev[0]:
            sp.step_ts = (step, line.ts)

    def metric(self, name: str, line: Line, value: float, step: int | None) -> None:
        """One value of a metric on a rank; x is the step, else the n-th value."""
        key = (name, line.rank)
        t = self.series.get(key)
        if t is None:
            ranks = self._ranks_per_metric.setdefault(name, set())
            if len(ranks) >= SERIES_RANKS:
                return
            ranks.add(line.rank)
            t = self.series[key] = Thinned("step" if step is not None else "sample")
        if step is None or t.x == "sample":
            n = self._samples[key] = self._samples.get(key, 0) + 1
            t.add(float(n), value)
        else:
            t.add(float(step), value)

    def error(self, exc: ExceptionInfo) -> None:
        sp = self.spans.get((exc.line.source, exc.line.rank))
        if sp is not None and sp.error is None:
            sp.error = exc
            sp.error_step = sp.last_step

    def with_errors(self, errors: Iterable[ExceptionInfo]) -> Timeline:
        """This timeline as if `errors` were read now (the exceptions of tracebacks still
        open at a report): a shallow view, only the spans they touch are copied, so the
        timeline itself is left as it is."""
        view: Timeline | None = None
        for exc in errors:
            key = (exc.line.source, exc.line.rank)
            sp = (view or self).spans.get(key)
            if sp is None or sp.error is not None:
                continue
            if view is None:
                view = Timeline()
                view.spans = dict(self.spans)
                view.series = self.series
                view._ranks_per_metric = self._ranks_per_metric
                view._samples = self._samples
            copy = view.spans[key] = SpanState(sp.first)
            for name in SpanState.__slots__:
                setattr(copy, name, getattr(sp, name))
            copy.error, copy.error_step = exc, sp.last_step
        return view or self

    def finish(self, findings: Iterable[Finding] = ()) -> tuple[list[RankSpan], list[Series]]:
        """The spans in (source, rank) order and the series by metric then rank. A rank
        with no exception takes its first error-level finding (a watchdog's timeout line
        is the error of a rank that raised nothing)."""
        first_finding: dict[Key, Finding] = {}
        for f in findings:
            key = (f.evidence.source or "", f.evidence.rank)
            if f.evidence.line is not None and math.isfinite(f.order) and key in self.spans:
                cur = first_finding.get(key)
                if cur is None or f.order < cur.order:
                    first_finding[key] = f
        spans = [self._span(key, sp, first_finding.get(key)) for key, sp in self.spans.items()]
        spans.sort(key=lambda s: (s.rank is None, s.rank if s.rank is not None else 0, s.source))
        series = [t.series(name, rank) for (name, rank), t in self.series.items()]
        series.sort(key=lambda s: (s.name, s.rank is None, s.rank or 0))
        return spans, series

    @staticmethod
    def _span(key: Key, sp: SpanState, finding: Finding | None) -> RankSpan:
        err: Evidence | None = None
        err_ts: float | None = None
        err_step: int | None = None
        if sp.error is not None:
            e = sp.error
            msg = e.message.split("\n", 1)[0]
            err = Evidence(
                text=f"{e.type}: {msg}" if msg else e.type,
                source=e.line.source,
                line=e.line.lineno,
                rank=e.line.rank,
            )
            err_ts, err_step = e.line.ts, sp.error_step
            order = float(e.line.seq)
        else:
            order = math.inf
        if finding is not None and finding.order < order:
            err, err_ts, err_step = finding.evidence, finding.ts, None
        return RankSpan(
            source=key[0],
            rank=key[1],
            first_line=sp.first.lineno,
            last_line=sp.last.lineno,
            first_ts=sp.first.ts,
            last_ts=sp.last.ts,
            last_text=sp.last.text[-200:],
            last_step=sp.last_step,
            phases=tuple(sp.phases),
            first_error=err,
            first_error_ts=err_ts,
            error_step=err_step,
        )
