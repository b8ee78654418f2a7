"""progress: how far the run got, read line by line: the phase it is in, its steps,
loss, tokens per second and gradient norm, and whether it stalled.

One reader serves the report (`Structure.metrics`, `end_state.last_phase`, the stall
event) and the live screen (`Progress`), so the two agree by construction.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import deque
from dataclasses import dataclass
from typing import Any

import triage.structure.tables as T
from triage.model import Event, Line
from triage.native import native, written_from
from triage.structure.series import SeriesReader
from triage.structure.timeline import Timeline

STALL_FACTOR = 20  # silence of this many usual step intervals is a stall...
STALL_MIN_S = 300  # ...and at least five minutes of it
PROGRESS_KEPT = 16  # loss lines remembered per (source, rank), to tell a run that went on
MAX_PHASES = 512  # phase changes kept; past it the middle ones are dropped
_YEAR_S = 366 * 86400  # a gap longer than this compares a year-less clock with a dated one
BAR_REPEATS = 3  # a progress bar redrawn this many times at one count, its clock running on...
# tqdm's count and elapsed clock, "11/40 [14:27:51<38:08:09, 4734.11s/it]" (a day count as
# tqdm writes it past 24 hours: "1 day, 2:03:04")
_BAR_RE = re.compile(r"(\d+)/(\d+) \[(?:(\d+) days?, )?(?:(\d+):)?(\d{1,2}):(\d{2})<")
_native_bar = written_from("bar", BAR_PATTERNS=(_BAR_RE.pattern,))


@dataclass(frozen=True)
class Progress:
    """Where the run is now, as the report would say it: `phase` is what
    `end_state.last_phase` would be, the numbers are the latest values `metrics` gives
    (`grad_norm` and `step_time` are the latest read; None when the log has none)."""

    phase: str | None
    step: int | None
    loss: float | None
    toks: float | None
    grad_norm: float | None
    step_time: float | None


def _first_group(m: re.Match[str]) -> str:
    """The phase whose alternative matched (table order wins on ties)."""
    for name, value in m.groupdict().items():
        if value is not None:
            return name.replace("_", "-")
    return str(m.lastgroup).replace("_", "-")


class _PhaseFinder:
    """The phase marker of a line, as `PHASES_ANY.search` reads it, for the cost of one
    native literal scan on the many lines that hold no marker's literal
    (`PHASE_MARKERS`). Otherwise only the markers whose literals are there are
    searched: the leftmost match wins, the first phase in table order on a tie, which
    is what the alternation's leftmost match says."""

    def __init__(self) -> None:
        markers: dict[str, list[tuple[int, re.Pattern[str]]]] = {}
        for order, (_name, rows) in enumerate(T.PHASE_MARKERS):
            for lits, rx in rows:
                for lit in lits:
                    markers.setdefault(lit, []).append((order, re.compile(rx)))
        self._literals = list(markers)
        self._markers = [markers[lit] for lit in self._literals]
        self._names = [name for name, _rows in T.PHASE_MARKERS]
        self._ac = _automaton(self._literals)
        # the whole search in one native call (`native.phase`, tests/test_native.py),
        # where the module was written from these markers
        patterns = tuple(rx for _name, rows in T.PHASE_MARKERS for _lits, rx in rows)
        self._native = written_from("phase", PHASE_NAMES=tuple(self._names), PHASE_PATTERNS=patterns)

    def __call__(self, text: str) -> str | None:
        """The phase `text` marks, or None."""
        if self._native is not None:
            got = self._native(text)
            return None if got is None else self._names[got]
        if self._ac is None:
            return _search_any(text)
        found = self._ac.find_matches_as_indexes(text, overlapping=True)
        if not found:
            return None
        if len(found) == 1:  # the common case: one literal ("step"), one marker or two
            markers = self._markers[found[0][0]]
            if len(markers) == 1:
                order, rx = markers[0]
                return self._names[order] if rx.search(text) is not None else None
        else:
            markers = [x for i in {i for i, _s, _e in found} for x in self._markers[i]]
        best: tuple[int, int] | None = None  # (start, phase order) of the leftmost match
        for order, rx in markers:
            m = rx.search(text)
            if m is not None and (best is None or (m.start(), order) < best):
                best = (m.start(), order)
        return None if best is None else self._names[best[1]]


def _automaton(literals: list[str]) -> Any:
    """An ahocorasick_rs automaton over `literals`, or None without the package."""
    try:
        import ahocorasick_rs
    except ImportError:
        return None
    return ahocorasick_rs.AhoCorasick(literals)


def _search_any(text: str) -> str | None:
    """The phase of the leftmost phase marker of `text` (table order wins on ties)."""
    m = T.PHASES_ANY.search(text)
    if m is None or m.lastgroup is None:
        return None
    return _first_group(m)


phase_of = _PhaseFinder()


def _from(rx: re.Pattern[str], text: str, low: str | None, word: str, back: int = 0) -> re.Match[str] | None:
    """`rx.search(text)` for a caseless regex whose matches start at most `back`
    characters before an occurrence of `word` (in any case): on an ASCII line (`low`, its
    lower-cased copy, same offsets) searched from the first occurrence only, skipped
    when there is none; a line with other characters is searched whole."""
    if low is None:
        return rx.search(text)
    i = low.find(word)
    return None if i < 0 else rx.search(text, max(0, i - back))


def _step_of(text: str, low: str | None) -> re.Match[str] | None:
    """`STEP_RE.search(text)`: a match starts at "step", "iter" or "global_step"."""
    if low is None:
        return T.STEP_RE.search(text)
    i, j = low.find("step"), low.find("iter")
    if i < 0 and j < 0:
        return None
    first = min(i - 7 if i >= 0 else j, j if j >= 0 else i - 7)  # 7: len("global_")
    return T.STEP_RE.search(text, max(0, first))


def _bar_of(text: str) -> tuple[str, int, int, float] | None:
    """A tqdm bar's (description, count, total, elapsed seconds), or None: read by the
    native module where it is built (`native.bar`, tests/test_native.py), else by
    `bar_of`; the module leaves a line with a huge number or another script's digits
    to `bar_of` (False)."""
    if _native_bar is not None:
        got = _native_bar(text)
        if got is not False:
            return got  # type: ignore[no-any-return]
    return bar_of(text)


def bar_of(text: str) -> tuple[str, int, int, float] | None:
    """`_bar_of` in Python: _BAR_RE's first match."""
    m = _BAR_RE.search(text)
    if m is None:
        return None
    days, hours, minutes, seconds = m.group(3, 4, 5, 6)
    elapsed = int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)
    desc = text[: m.start()].split("%|")[0].rstrip(" 0123456789")
    return desc, int(m.group(1)), int(m.group(2)), float(elapsed)


def _lower(text: str) -> str | None:
    """The lower-cased copy of an ASCII line (same offsets), or None for any other."""
    return text.lower() if text.isascii() else None


def _float(text: str) -> float | None:
    """A metric's value, or None where the digits read are not a number ("1.2.3")."""
    try:
        return float(text)
    except ValueError:
        return None


def step_loss(text: str) -> tuple[int | None, float | None]:
    """The step number and the loss one line reports (None for what it lacks), read
    as the progress reader reads them (`ProgressReader._metrics`, with the same
    helpers): the one step/loss parser of triage."""
    low = _lower(text)
    m_step = _step_of(text, low) if ("step" in text or "iter" in text) else None
    ml = _from(T.LOSS_RE, text, low, "loss", 1) if "loss" in text else None
    loss = _float(ml.group(1)) if ml else None
    return (int(m_step.group(1)) if m_step else None), loss


def _read(
    text: str, steps: bool, losses: bool, toks: bool, norms: bool
) -> tuple[int | None, float | None, float | None, float | None]:
    """(step, loss, grad norm, tok/s) of a line, each read only behind its guard."""
    low = _lower(text)
    m_step = _step_of(text, low) if steps else None
    m_loss = _from(T.LOSS_RE, text, low, "loss", 1) if losses else None
    mt = _from(T.TOKS_RE, text, low, "tok") if toks else None
    mg = _from(T.GRAD_NORM_RE, text, low, "grad") if norms else None
    return (
        int(m_step.group(1)) if m_step else None,
        _float(m_loss.group(1)) if m_loss else None,
        _float(mg.group(1)) if mg else None,
        _float(mt.group(1)) if mt else None,
    )


# (step, loss, grad norm, tok/s) of an ASCII line in one native call, None for another
_native_metrics = None if native is None else native.metrics


class ProgressReader:
    """Phases and training metrics of every line fed, in bounded state."""

    def __init__(self, timeline: Timeline) -> None:
        self._timeline = timeline
        self.phases: list[tuple[str, Line]] = []
        self.phase: str | None = None  # the phase the log is in at the line fed last
        self.last_step_by_rank: dict[int, int] = {}
        self.last_step_seq = 0  # read order of the last line of training progress
        self.grad_norm: float | None = None
        self._last_ts: tuple[float, Line] | None = None
        self._repeat: tuple[int, float, float, int, Line] | None = None
        # the latest bar's (key, count, first elapsed, last elapsed, redraws, line)
        self._bar: tuple[tuple[Any, ...], int, float, float, int, Line] | None = None
        self._losses: deque[tuple[int | None, float]] = deque(maxlen=4096)
        self._progress: dict[tuple[str, int | None], deque[int]] = {}
        self._series = SeriesReader()
        self._m: dict[str, Any] = {
            "steps": 0,
            "nonfinite_loss": 0,
            "last_step": None,
            "loss_first": None,
            "loss_last": None,
            "toks_last": None,
            "step_times": deque(maxlen=256),
        }

    # -- feeding -------------------------------------------------------------------
    def feed(self, line: Line) -> None:
        """Read one line: its phase marker, step, loss, tok/s, grad norm, table row."""
        text = line.text
        if line.ts is not None:
            self._last_ts = (line.ts, line)
        phase = phase_of(text)
        if phase is not None:
            self._phase(line, phase)
        self._metrics(line, text)
        if "<" in text and " [" in text:
            self._bar_line(line, text)
        row_loss = self._series.feed(line)
        if row_loss is not None:
            self._loss(line, row_loss)

    def _phase(self, line: Line, phase: str) -> None:
        """A phase marker on the line."""
        self._timeline.phase(line, phase)
        if phase != self.phase:
            self.phases.append((phase, line))
            if len(self.phases) > MAX_PHASES:
                del self.phases[1 : MAX_PHASES // 2 + 1]
            self.phase = phase

    def _metrics(self, line: Line, text: str) -> None:
        steps = "step" in text or "iter" in text
        losses = "loss" in text
        toks = "/s" in text or "per_s" in text
        norms = "norm" in text
        if not (steps or losses or toks or norms):
            return  # most lines of a log: nothing to read
        read = _native_metrics(text) if _native_metrics is not None else None
        if read is None:
            step, loss, grad, tok_s = _read(text, steps, losses, toks, norms)
        else:  # the same values, read natively (tests/test_native.py), behind the same guards
            step, loss, grad, tok_s = read
            step = step if steps else None
            loss = loss if losses else None
            grad = grad if norms else None
            tok_s = tok_s if toks else None
        if step is not None and line.ts is not None:
            self._same_step(step, line)
        if step is not None and losses:
            self._step(line, step)  # a step line: one with a loss (a header says "loss")
        if loss is not None:
            self._timeline.metric("loss", line, loss, step)
            self._loss(line, loss)
        if tok_s is not None:
            self._m["toks_last"] = tok_s
            self._timeline.metric("tok_s", line, tok_s, step)
        if grad is not None:
            self.grad_norm = grad
            self._timeline.metric("grad_norm", line, grad, step)

    def _step(self, line: Line, step: int) -> None:
        """A step line with a loss on it: one more step of training."""
        self._m["steps"] += 1
        self._m["last_step"] = step
        if line.rank is not None:
            self.last_step_by_rank[line.rank] = step
        self._timeline.step(line, step)
        self.last_step_seq = line.seq
        if line.ts is not None:
            self._m["step_times"].append(line.ts)

    def _loss(self, line: Line, v: float) -> None:
        """A loss value (from `loss=` or a table row, series.py)."""
        if self._m["loss_first"] is None:
            self._m["loss_first"] = v
        self._m["loss_last"] = v
        self._losses.append((self._m["last_step"], v))
        key = (line.source, line.rank)
        prog = self._progress.get(key)
        if prog is None:
            prog = self._progress[key] = deque(maxlen=PROGRESS_KEPT)
        prog.append(line.seq)
        if not math.isfinite(v):
            self._m["nonfinite_loss"] += 1
            self._m.setdefault("first_nonfinite_line", line.lineno)
        self.last_step_seq = line.seq

    def _same_step(self, step: int, line: Line) -> None:
        """A step number repeated by timestamped lines (heartbeats, a frozen bar): how
        long the run has been at the same step."""
        cur = self._repeat
        if cur is None or cur[0] != step:
            self._repeat = (step, line.ts or 0.0, line.ts or 0.0, 1, line)
        else:
            self._repeat = (step, cur[1], line.ts or cur[2], cur[3] + 1, line)

    def _bar_line(self, line: Line, text: str) -> None:
        """A progress bar drawn on its own line: how long it has shown the same count
        while its own clock ran on (a frozen bar in a log without timestamps)."""
        bar = _bar_of(text)
        if bar is None:
            return
        desc, n, total, elapsed = bar
        key = (line.source, line.rank, desc, total)
        cur = self._bar
        if cur is None or cur[0] != key or cur[1] != n or elapsed < cur[3]:
            self._bar = (key, n, elapsed, elapsed, 1, line)
        else:
            self._bar = (key, n, cur[2], elapsed, cur[4] + 1, line)

    # -- reading out (pure) --------------------------------------------------------
    def now(self) -> Progress:
        """The latest phase and values: cheap, no copy of the state."""
        times = self._m["step_times"]
        step_time = times[-1] - times[-2] if len(times) >= 2 and times[-1] >= times[-2] else None
        return Progress(
            phase=self.phase,
            step=self._m["last_step"],
            loss=self._m["loss_last"],
            toks=self._m["toks_last"],
            grad_norm=self.grad_norm,
            step_time=step_time,
        )

    def metrics(self) -> dict[str, Any]:
        """The metrics of the report (a fresh dict: the reader is left as it is)."""
        m = dict(self._m)
        m["step_times"] = list(m["step_times"])
        m["losses"] = list(self._losses)[-512:]
        return m

    def progress(self) -> dict[tuple[str, int | None], list[int]]:
        """Per (source, rank): the read order (seq) of its last lines of progress."""
        return {k: list(v) for k, v in self._progress.items()}

    def events(self) -> list[Event]:
        """What the series and the clock say: table and loss-scale events, a stall."""
        out = list(self._series.events)
        stall = self._stall()
        if stall is not None:
            out.append(stall)
        return out

    def _stall(self) -> Event | None:
        """Progress stopped: the last timestamped line is far later than the last step,
        measured in the run's own step interval (needs timestamps on the lines)."""
        rep = self._repeat
        if rep is not None and rep[3] >= 3 and STALL_MIN_S <= rep[2] - rep[1] < _YEAR_S:
            step, first, last, count, line = rep
            data = {
                "silent_s": round(last - first, 1),
                "step_interval_s": None,
                "factor": None,
                "last_step": step,
                "repeats": count,
            }
            return Event("stall", line, data)
        bar = self._bar_stall()
        if bar is not None:
            return bar
        step_times = list(self._m["step_times"])
        if len(step_times) < 5 or self._last_ts is None:
            return None
        gaps = sorted(b - a for a, b in itertools.pairwise(step_times) if b >= a)
        if not gaps:
            return None
        median = max(gaps[len(gaps) // 2], 1e-3)
        silent = self._last_ts[0] - step_times[-1]
        if silent > _YEAR_S or silent < max(STALL_FACTOR * median, STALL_MIN_S):
            return None
        data = {
            "silent_s": round(silent, 1),
            "step_interval_s": round(median, 3),
            "factor": round(silent / median, 1),
            "last_step": self._m.get("last_step"),
        }
        return Event("stall", self._last_ts[1], data)

    def _bar_stall(self) -> Event | None:
        """The last bar was redrawn BAR_REPEATS times at one count (past the first item)
        while its elapsed clock grew by STALL_FACTOR of its own time per item, and at
        least STALL_MIN_S: no item finished for that long."""
        bar = self._bar
        if bar is None or bar[4] < BAR_REPEATS or bar[1] < 1:
            return None
        _key, n, first, last, count, line = bar
        per_item = max(first / n, 1e-3)
        silent = last - first
        if silent < max(STALL_FACTOR * per_item, STALL_MIN_S):
            return None
        data = {
            "silent_s": round(silent, 1),
            "step_interval_s": round(per_item, 3),
            "factor": round(silent / per_item, 1),
            "last_step": n,
            "repeats": count,
        }
        return Event("stall", line, data)
