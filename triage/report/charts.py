"""The pictures of the HTML view, drawn by matplotlib as inline SVG.

Why matplotlib, and SVG: the page must open anywhere with no network and stay small
enough to attach to an issue (under 2 MB for a big multi-rank log). A JavaScript
charting library would have to be inlined into every page: plotly.js alone is over
3 MB, Bokeh's runtime about 1 MB, and each draws in the browser at load time. matplotlib
draws once, here, into plain vector markup: no script in the page at all (nothing to
fail, nothing to fetch), a few tens of kilobytes per chart since our series are thinned
to a bounded size in the structure stage, crisp at any zoom, printable, and with
`svg.fonttype = none` its labels stay real text that can be selected and searched. It
is the best-kept plotting library in Python, installs from wheels everywhere, and its
look is set here once (a small, quiet style). It is an optional extra
(`pip install 'triage[html]'`): the core never imports it.

Every function returns an SVG string (or "" when there is nothing to draw). Each drawn
series carries an SVG id `series-N`, so a test can count what a chart shows.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

from triage.model import GpuReading, RankSpan, Series

# One palette for phases across every chart; the rest falls back to grey.
PHASE_COLORS = {
    "distributed-init": "#8fb3d9",
    "checkpoint-loading": "#c9a0dc",
    "model-loading": "#a7c4a0",
    "data-loading": "#e3c58d",
    "compiling": "#d9a38f",
    "checkpoint-saving": "#b5b5e0",
    "evaluation": "#9fd3d0",
    "training": "#5b8ec9",
}
START_COLOR = "#d4d4d4"  # before any phase was named
RANK_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
FAIL_COLOR = "#c62828"
AFTER_COLOR = "#ef8f00"
METRIC_TITLES = {
    "loss": "Loss",
    "grad_norm": "Gradient norm",
    "tok_s": "Throughput (tokens/s)",
    "step_time_s": "Step time (s)",
}
METRIC_ORDER = ("loss", "grad_norm", "tok_s", "step_time_s")

STYLE: dict[str, Any] = {
    "svg.fonttype": "none",  # text stays text: selectable, searchable, and smaller
    "svg.hashsalt": "triage",  # stable ids: the same report gives the same page
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],  # ships with matplotlib: the same metrics everywhere
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.edgecolor": "#888888",
    "axes.grid": True,
    "grid.color": "#e6e6e6",
    "grid.linewidth": 0.6,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "legend.frameon": False,
    "legend.fontsize": 8,
    "path.simplify": True,
}


def _figure(width: float, height: float) -> Any:
    # the Figure class itself, not pyplot: no global figure registry, no GUI backend
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=96, layout="constrained")


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    # the XML prolog and DOCTYPE are for standalone files; inline SVG starts at <svg
    return text[text.index("<svg") :]


def available() -> bool:
    """Whether the plotting library is installed (the `html` extra)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _style() -> Any:
    import matplotlib

    return matplotlib.rc_context(STYLE)  # type: ignore[arg-type]  # keys typed as Literal names


def _rank_label(s: RankSpan, many_sources: bool, ranked: bool) -> str:
    """ "rank 3"; the unranked lines of a multi-rank log are the launcher's; a log with no
    ranks at all is named by its file (or just "log")."""
    if s.rank is not None:
        return f"rank {s.rank}"
    if ranked:
        return "launcher"
    return s.source.rsplit("/", 1)[-1] if many_sources else "log"


def _rect(x0: float, x1: float, y0: float, y1: float) -> list[tuple[float, float]]:
    return [(x0, y0), (x0, y1), (x1, y1), (x1, y0)]


class _XAxis:
    """Where a line of a rank's output sits on the timeline's x axis: the time since the
    first line when every span has timestamps, else the line number (in one interleaved
    file the order of lines is the order of events)."""

    def __init__(self, spans: Sequence[RankSpan]) -> None:
        self.timed = all(s.first_ts is not None and s.last_ts is not None for s in spans)
        self.t0 = min(s.first_ts or 0.0 for s in spans) if self.timed else 0.0

    def __call__(self, line: int, ts: float | None) -> float:
        return (ts - self.t0) if self.timed and ts is not None else float(line)


def timeline(spans: Sequence[RankSpan], *, first_failed: tuple[str, int | None] | None) -> str:
    """Per rank, its output from first to last line as a bar coloured by phase, its
    first error marked (the rank that failed first in red, the ones after in orange)
    and, for up to 40 ranks, its last step written at the end of its bar.

    x is the time when every span has timestamps, else the line number (in one
    interleaved file the order of lines is the order of events)."""
    if not spans:
        return ""
    x_of = _XAxis(spans)
    n = len(spans)
    height = min(0.26 * n + 1.3, 14.0)
    with _style():
        fig = _figure(9.5, height)
        ax = fig.add_subplot()
        _phase_bars(ax, spans, x_of)
        ax.autoscale_view()
        _error_marks(ax, spans, x_of, first_failed)
        if n <= 40:
            _row_labels(ax, spans, x_of)
        _timeline_axes(ax, n, x_of.timed)
        if ax.get_legend_handles_labels()[0]:
            fig.legend(loc="outside lower center", ncol=6, fontsize=7)
        return _svg(fig)


def _phase_bars(ax: Any, spans: Sequence[RankSpan], x_of: _XAxis) -> None:
    """Each rank's bar, cut by phase: one collection per phase (and one of row outlines),
    so a 500-rank timeline is a dozen SVG groups, not thousands of artists, and draws in
    a fraction of a second."""
    from matplotlib.collections import PolyCollection

    n = len(spans)
    bar_h = 0.7 if n <= 64 else 0.95
    bars: dict[str, list[list[tuple[float, float]]]] = {}
    outlines: list[list[tuple[float, float]]] = []
    for row, s in enumerate(spans):
        start = x_of(s.first_line, s.first_ts)
        end = x_of(s.last_line, s.last_ts)
        if end <= start:
            end = start + 0.5  # a rank that printed one line is still a visible mark
        cuts = [("start", start)]
        cuts += [(phase, max(x_of(line, ts), start)) for phase, line, ts in s.phases]
        lo, hi = row - bar_h / 2, row + bar_h / 2
        for i, (phase, begin) in enumerate(cuts):
            stop = min(cuts[i + 1][1], end) if i + 1 < len(cuts) else end
            if stop > begin:
                bars.setdefault(phase, []).append(_rect(begin, stop, lo, hi))
        outlines.append(_rect(start, end, lo, hi))
    for phase, rects in sorted(bars.items(), key=lambda kv: kv[0] != "start"):
        color = PHASE_COLORS.get(phase, START_COLOR)
        ax.add_collection(
            PolyCollection(rects, facecolors=color, edgecolors="none", label=phase, gid=f"phase-{phase}")
        )
    width = 0.4 if n <= 64 else 0.1
    ax.add_collection(
        PolyCollection(outlines, facecolors="none", edgecolors="#9a9a9a", linewidths=width, gid="rows")
    )


def _error_marks(
    ax: Any, spans: Sequence[RankSpan], x_of: _XAxis, first_failed: tuple[str, int | None] | None
) -> None:
    """Each rank's first error: a red X on the stream that failed first, an orange x on
    the ones whose errors came after."""
    first: tuple[list[float], list[int]] = ([], [])
    after: tuple[list[float], list[int]] = ([], [])
    for row, s in enumerate(spans):
        if s.first_error is None or s.first_error.line is None:
            continue
        marks = first if first_failed is not None and (s.source, s.rank) == first_failed else after
        marks[0].append(x_of(s.first_error.line, s.first_error_ts))
        marks[1].append(row)
    size = 70 if len(spans) <= 64 else 20
    if first[0]:
        ax.scatter(
            *first,
            marker="X",
            s=size * 1.6,
            color=FAIL_COLOR,
            zorder=5,
            label="failed first",
            gid="marker-first",
        )
    if after[0]:
        ax.scatter(
            *after,
            marker="x",
            s=size,
            color=AFTER_COLOR,
            zorder=5,
            linewidths=1.6,
            label="error after",
            gid="marker-after",
        )


def _row_labels(ax: Any, spans: Sequence[RankSpan], x_of: _XAxis) -> None:
    """For a timeline of few rows: each rank's last step at the end of its bar, and the
    rows named ("rank 3", "launcher", the file)."""
    for row, s in enumerate(spans):
        if s.last_step is not None:
            ax.annotate(
                f"step {s.last_step}",
                (x_of(s.last_line, s.last_ts), row),
                xytext=(4, 0),
                textcoords="offset points",
                va="center",
                fontsize=7,
                color="#555555",
            )
    many_sources = len({s.source for s in spans}) > 1
    ranked = any(s.rank is not None for s in spans)
    ax.set_yticks(range(len(spans)), [_rank_label(s, many_sources, ranked) for s in spans])


def _timeline_axes(ax: Any, n: int, timed: bool) -> None:
    """Rows top to bottom in report order, the x axis named (time or whole line numbers)
    and the title."""
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlabel("seconds since the first line" if timed else "log line")
    if not timed:
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # line numbers are whole
    ax.set_title(f"Rank timeline ({n} {'stream' if n == 1 else 'streams'})")
    ax.grid(axis="y", visible=False)
    ax.margins(x=0.08)


def curves(series: Sequence[Series], name: str, *, fail_x: float | None, fail_label: str = "") -> str:
    """One metric over the run, one line per rank, with the first failure as a vertical
    line and every non-finite value as a red triangle along the top edge."""
    drawn = [s for s in series if s.name == name and (s.points or s.nonfinite)]
    if not drawn:
        return ""
    with _style():
        fig = _figure(9.5, 2.8)
        ax = fig.add_subplot()
        for i, s in enumerate(drawn):
            xs = [p[0] for p in s.points]
            ys = [p[1] for p in s.points]
            ax.plot(
                xs,
                ys,
                color=RANK_COLORS[i % len(RANK_COLORS)],
                linewidth=1.2,
                marker="o" if len(xs) <= 12 else None,
                markersize=3,
                label="log" if s.rank is None else f"rank {s.rank}",
                gid=f"series-{i}",
            )
        bad = _failure_marks(ax, drawn, fail_x, fail_label)
        _curve_axes(ax, drawn, name)
        if len(drawn) > 1 or bad or fail_x is not None:
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
        return _svg(fig)


def _failure_marks(ax: Any, drawn: list[Series], fail_x: float | None, fail_label: str) -> list[float]:
    """Every non-finite value as a red triangle along the top edge, and the first failure
    as a dashed line (on a step axis only). Returns the non-finite x values."""
    from matplotlib.transforms import blended_transform_factory

    top = blended_transform_factory(ax.transData, ax.transAxes)
    bad = sorted({x for s in drawn for x in s.nonfinite})
    if bad:
        ax.scatter(
            bad,
            [0.97] * len(bad),
            transform=top,
            marker="v",
            s=28,
            color=FAIL_COLOR,
            zorder=6,
            clip_on=False,
            label=f"NaN/inf ({len(bad)})",
            gid="marker-nonfinite",
        )
    if fail_x is not None and drawn[0].x == "step":
        label = fail_label or "failure"
        ax.axvline(fail_x, color=FAIL_COLOR, linestyle="--", linewidth=1.1, gid="marker-failure", label=label)
    return bad


def _curve_axes(ax: Any, drawn: list[Series], name: str) -> None:
    """A log scale for a loss or gradient norm that spans over 50x (an explosion would
    flatten the rest of the curve), the title with the value count, whole-number x."""
    positive = [p[1] for s in drawn for p in s.points if p[1] > 0]
    lows = [p[1] for s in drawn for p in s.points]
    if (
        name in ("loss", "grad_norm")
        and positive
        and len(positive) == len(lows)
        and max(positive) / min(positive) > 50
    ):
        ax.set_yscale("log")
    total = sum(s.count for s in drawn)
    ax.set_title(f"{METRIC_TITLES.get(name, name)}  ({total} values)")
    ax.set_xlabel(drawn[0].x)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers


def gpus(readings: Sequence[GpuReading]) -> str:
    """Memory used of total and utilization per device, from the evidence snapshot."""
    if not readings:
        return ""
    n = len(readings)
    labels = [f"GPU {g.index}" for g in readings]
    with _style():
        fig = _figure(9.5, min(0.3 * n + 1.2, 8.0))
        mem, util = fig.subplots(1, 2, sharey=True)
        used = [(g.memory_used_mib or 0.0) / 1024 for g in readings]
        total = [(g.memory_total_mib or 0.0) / 1024 for g in readings]
        rows = list(range(n))
        if any(total):
            mem.barh(rows, total, color="#e3e3e3", height=0.7, label="total", gid="series-total")
        mem.barh(rows, used, color="#5b8ec9", height=0.7, label="used", gid="series-0")
        for r, (u, t) in enumerate(zip(used, total, strict=True)):
            if t:
                mem.annotate(
                    f"{u:.1f} / {t:.0f} GiB",
                    (max(u, t), r),
                    xytext=(3, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=7,
                )
        mem.set_title("GPU memory (GiB)")
        mem.set_yticks(rows, labels)
        mem.set_ylim(n - 0.5, -0.5)
        mem.margins(x=0.25)
        pct = [g.utilization_pct if g.utilization_pct is not None else math.nan for g in readings]
        util.barh(
            rows, [0.0 if math.isnan(p) else p for p in pct], color="#2ca02c", height=0.7, gid="series-1"
        )
        util.set_xlim(0, 100)
        util.set_title("Utilization (%)")
        for ax in (mem, util):
            ax.grid(axis="y", visible=False)
        return _svg(fig)
