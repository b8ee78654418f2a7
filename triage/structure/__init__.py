"""structure: tracebacks, C++ traces, torchrun failure reports, phases, metrics and
the end state, read from a stream of `Line`s (one pass, bounded state)."""

from __future__ import annotations

import contextlib
import itertools
import math
import re
import signal as _signal
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from triage.model import EndState, Event, ExceptionInfo, Line, SourceInfo
from triage.structure import tables as T
from triage.structure.series import SeriesReader
from triage.structure.timeline import Timeline

MAX_EXCEPTIONS = 2000
MAX_MSG_LINES = 40
TAIL_LINES = 40
STALL_FACTOR = 20  # silence of this many usual step intervals is a stall...
STALL_MIN_S = 300  # ...and at least five minutes of it
_DIGITS = re.compile(r"\d+")
PROGRESS_KEPT = 16  # loss lines remembered per (source, rank), to tell a run that went on


@dataclass
class _TB:
    """A traceback being read on one stream (source, rank)."""

    start: Line
    frames: list[str] = field(default_factory=list)
    exc: ExceptionInfo | None = None
    msg_lines: list[str] = field(default_factory=list)
    chain_index: int = 0
    chained_as: str | None = None
    indent: int = 0  # of the "Traceback (most recent call last):" line


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


@dataclass
class _Stream:
    tb: _TB | None = None
    pending_chain: str | None = None
    chain_index: int = 0
    last_exc_seq: int = 0


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


class Structurer:
    """Feed lines in order with `feed`, then call `finish` once."""

    def __init__(self) -> None:
        self.out = Structure()
        self._streams: dict[tuple[str, int | None], _Stream] = {}
        self._by_source: dict[str, list[_Stream]] = {}  # the same streams, by source
        self._tails: dict[str, deque[Line]] = {}
        self._torchrun: dict[str, Any] | None = None
        self._torchrun_entry: dict[str, Any] | None = None
        self._pending_cpp_msg: dict[tuple[str, int | None], Line] = {}
        self._terminate: tuple[Line, str] | None = None
        self._last_step_seq = 0
        self._last_ts: tuple[float, Line] | None = None
        self._repeat: tuple[int, float, float, int, Line] | None = None
        self._last_phase: str | None = None
        self._losses: deque[tuple[int | None, float]] = deque(maxlen=4096)
        self._progress: dict[tuple[str, int | None], deque[int]] = {}
        self._series = SeriesReader()
        self._timeline = self.out.timeline
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
        text = line.text
        if line.ts is not None:
            self._last_ts = (line.ts, line)
        tail = self._tails.setdefault(line.source, deque(maxlen=TAIL_LINES))
        if text.strip():
            tail.append(line)
            self._timeline.line(line)
            if line.rank is not None:
                self.out.last_by_rank[line.rank] = line
        self._traceback(line, text)
        self._torchrun_report(line, text)
        self._cpp(line, text)
        self._phase(line, text)
        self._metrics(line, text)
        row_loss = self._series.feed(line)
        if row_loss is not None:
            self._table_loss(line, row_loss)

    @property
    def phase(self) -> str | None:
        """The phase the log is in at the line fed last."""
        return self._last_phase

    def gap(self, source: str) -> None:
        """Lines of `source` were skipped (fast path): no traceback or report spans it."""
        # the streams of this source only: a folder of 500 rank logs has 500 sources, and
        # a gap in each (the fast path) must not walk all the others' streams
        for s in self._by_source.get(source, ()):
            self._close_tb(s)
            s.pending_chain = None
        self._torchrun = None
        self._torchrun_entry = None

    def _stream(self, line: Line) -> _Stream:
        key = (line.source, line.rank)
        s = self._streams.get(key)
        if s is None:
            s = self._streams[key] = _Stream()
            self._by_source.setdefault(line.source, []).append(s)
        return s

    def _traceback(self, line: Line, text: str) -> None:
        s = self._stream(line)
        stripped = text.strip()
        head = T.REPORT_TRACEBACK_RE.match(stripped)
        if stripped.startswith((T.TRACEBACK_START, "Original Traceback (most recent call last):")) or head:
            self._close_tb(s)
            chained = s.pending_chain
            s.chain_index = s.chain_index + 1 if chained else 0
            s.tb = _TB(start=line, chain_index=s.chain_index, chained_as=chained, indent=_indent(text))
            s.pending_chain = None
            return
        if stripped in T.CHAIN_MARKERS:
            self._close_tb(s)
            s.pending_chain = T.CHAIN_MARKERS[stripped]
            return
        tb = s.tb
        if (
            tb is None
            and s.pending_chain is None
            and stripped.startswith('File "')
            and T.FRAME_RE.match(stripped)
        ):
            # a pasted excerpt that starts mid-traceback: its frames still say where the
            # error below them was raised
            s.chain_index = 0
            tb = s.tb = _TB(start=line)
        if tb is None:
            if s.pending_chain is None:
                self._bare_exception(line, text)
            return
        if tb.exc is None:
            if not stripped:
                return
            # frames and source lines are indented deeper than the traceback's header (a
            # traceback inside torchrun's report, or an indented paste, is indented itself)
            if _indent(text) > tb.indent or stripped.startswith(('File "', "^", "~")):
                if stripped.startswith('File "'):
                    tb.frames.append(stripped)
                return
            m = T.EXC_LINE_RE.match(stripped)
            if m and " " not in m.group("type"):
                tb.exc = ExceptionInfo(
                    m.group("type"),
                    (m.group("msg") or "").strip(),
                    line,
                    chain_index=tb.chain_index,
                    chained_as=tb.chained_as,
                    has_traceback=True,
                    frames=tuple(tb.frames[-8:]),
                )
                return
            # something else interrupted the traceback (interleaved output)
            return
        # message continuation lines until a blank line or a new record
        if not stripped or len(tb.msg_lines) >= MAX_MSG_LINES:
            self._close_tb(s)
            return
        tb.msg_lines.append(stripped)

    def _close_tb(self, s: _Stream) -> None:
        tb = s.tb
        s.tb = None
        if tb is None or tb.exc is None:
            return
        exc = tb.exc
        if tb.msg_lines:
            msg = (exc.message + "\n" + "\n".join(tb.msg_lines)).strip()
            exc = ExceptionInfo(exc.type, msg, exc.line, exc.frames, exc.chain_index, exc.chained_as, True)
        self._add_exception(exc)
        s.last_exc_seq = exc.line.seq

    def _bare_exception(self, line: Line, text: str) -> None:
        if "Error" not in text and "Exception" not in text and "Interrupt" not in text:
            return
        m = T.BARE_EXC_RE.search(text)
        if m:
            self._add_exception(ExceptionInfo(m.group("type"), (m.group("msg") or "").strip(), line))

    def _add_exception(self, exc: ExceptionInfo) -> None:
        self._timeline.error(exc)
        if len(self.out.exceptions) < MAX_EXCEPTIONS:
            self.out.exceptions.append(exc)
            tr = self._torchrun
            if tr is not None and tr["section"] == "other":
                self.out.secondary_errors.add(exc.line.seq)

    def _torchrun_report(self, line: Line, text: str) -> None:
        if "local_rank:" in text and "exitcode" in text:
            m = T.CHILD_EXIT_RE.search(text)
            if m:
                code = int(m.group("code"))
                self.out.events.append(
                    Event(
                        "child-exit",
                        line,
                        {
                            "exitcode": code,
                            "local_rank": int(m.group("lr")),
                            "pid": int(m.group("pid")),
                            "signal": _signame(code),
                        },
                    )
                )
        stripped = text.strip()
        if stripped.startswith("Root Cause (first observed failure)"):
            self._torchrun = {"line": line, "section": "root", "entries": []}
            return
        if stripped == "Failures:":
            self._torchrun = {"line": line, "section": "other", "entries": []}
            return
        tr = self._torchrun
        if tr is None:
            return
        if stripped.startswith("[") and stripped.endswith("]:"):
            self._torchrun_entry = {"section": tr["section"]}
            tr["entries"].append(self._torchrun_entry)
            return
        m2 = T.TORCHRUN_FIELD_RE.match(text)
        if m2 and self._torchrun_entry is not None:
            self._torchrun_entry[m2.group("key")] = m2.group("val").strip()
            return
        if stripped.startswith(("====", "----")) or not stripped:
            if tr["section"] == "root" and tr["entries"]:
                self._emit_torchrun(tr)
                self._torchrun = None
            elif stripped.startswith("===="):
                self._torchrun = None
            self._torchrun_entry = None

    def _emit_torchrun(self, tr: dict[str, Any]) -> None:
        e = tr["entries"][0]
        data: dict[str, Any] = {
            "root_rank": None,
            "exitcode": None,
            "signal": None,
            "error_file": e.get("error_file"),
            "traceback": e.get("traceback"),
            "host": e.get("host"),
        }
        rank = e.get("rank", "")
        root = _int(rank.split(" ")[0])
        if root is not None:
            data["root_rank"] = root
        code = e.get("exitcode", "")
        head = code.split(" ")[0]
        num = _int(head)
        if num is not None:
            data["exitcode"] = num
            data["signal"] = _signame(num)
        if "(SIG" in code:
            data["signal"] = code[code.index("(SIG") + 1 :].split(")")[0]
        tbt = data["traceback"] or ""
        if "Signal " in tbt and "(SIG" in tbt:
            data["signal"] = tbt[tbt.index("(SIG") + 1 :].split(")")[0]
        self.out.events.append(Event("torchrun-failure", tr["line"], data))

    def _cpp(self, line: Line, text: str) -> None:
        if "Exception raised from" in text:
            m = T.CPP_RAISED_RE.search(text)
            if m:
                key = (line.source, line.rank)
                prev = self._pending_cpp_msg.get(key)
                self.out.events.append(
                    Event(
                        "cpp-exception",
                        line,
                        {
                            "where": m.group("where"),
                            "file": m.group("file"),
                            "line": int(m.group("line")),
                            "message": prev.text if prev else "",
                        },
                    )
                )
            return
        if "terminate called" in text:
            m2 = T.TERMINATE_RE.search(text)
            if m2:
                self._terminate = (line, m2.group("type"))
                self.out.events.append(Event("cpp-terminate", line, {"type": m2.group("type")}))
            return
        if text.strip():
            self._pending_cpp_msg[(line.source, line.rank)] = line

    def _phase(self, line: Line, text: str) -> None:
        m = T.PHASES_ANY.search(text)
        if m is None or m.lastgroup is None:
            return
        phase = _first_group(m)
        self._timeline.phase(line, phase)
        if phase != self._last_phase:
            self.out.phases.append((phase, line))
            if len(self.out.phases) > 512:
                del self.out.phases[1:257]
            self._last_phase = phase

    def _metrics(self, line: Line, text: str) -> None:
        low_has_loss = "loss" in text
        m_step = T.STEP_RE.search(text) if ("step" in text or "iter" in text) else None
        if m_step and line.ts is not None:
            self._same_step(int(m_step.group(1)), line)
        if m_step and low_has_loss:
            self._m["steps"] += 1
            self._m["last_step"] = int(m_step.group(1))
            if line.rank is not None:
                self.out.last_step_by_rank[line.rank] = int(m_step.group(1))
            self._timeline.step(line, int(m_step.group(1)))
            self._last_step_seq = line.seq
            if line.ts is not None:
                self._m["step_times"].append(line.ts)
        if low_has_loss:
            ml = T.LOSS_RE.search(text)
            if ml:
                try:
                    v = float(ml.group(1))
                except ValueError:
                    return
                if self._m["loss_first"] is None:
                    self._m["loss_first"] = v
                self._m["loss_last"] = v
                self._losses.append((self._m["last_step"], v))
                self._timeline.metric("loss", line, v, int(m_step.group(1)) if m_step else None)
                prog = self._progress.setdefault((line.source, line.rank), deque(maxlen=PROGRESS_KEPT))
                prog.append(line.seq)
                if not math.isfinite(v):
                    self._m["nonfinite_loss"] += 1
                    self._m.setdefault("first_nonfinite_line", line.lineno)
                self._last_step_seq = line.seq
        if "/s" in text or "per_s" in text:
            mt = T.TOKS_RE.search(text)
            if mt:
                with contextlib.suppress(ValueError):
                    self._m["toks_last"] = float(mt.group(1))
                    self._timeline.metric(
                        "tok_s", line, self._m["toks_last"], int(m_step.group(1)) if m_step else None
                    )
        if "norm" in text:
            mg = T.GRAD_NORM_RE.search(text)
            if mg:
                with contextlib.suppress(ValueError):
                    self._timeline.metric(
                        "grad_norm", line, float(mg.group(1)), int(m_step.group(1)) if m_step else None
                    )

    def _table_loss(self, line: Line, v: float) -> None:
        """A loss read from a table row (series.py): counted like a `loss=` value."""
        if self._m["loss_first"] is None:
            self._m["loss_first"] = v
        self._m["loss_last"] = v
        self._losses.append((self._m["last_step"], v))
        if not math.isfinite(v):
            self._m["nonfinite_loss"] += 1
            self._m.setdefault("first_nonfinite_line", line.lineno)
        self._progress.setdefault((line.source, line.rank), deque(maxlen=PROGRESS_KEPT)).append(line.seq)
        self._last_step_seq = line.seq

    def _same_step(self, step: int, line: Line) -> None:
        """A step number repeated by timestamped lines (heartbeats, a frozen bar): how
        long the run has been at the same step."""
        cur = self._repeat
        if cur is None or cur[0] != step:
            self._repeat = (step, line.ts or 0.0, line.ts or 0.0, 1, line)
        else:
            self._repeat = (step, cur[1], line.ts or cur[2], cur[3] + 1, line)

    # -- finishing -----------------------------------------------------------------
    def finish(self, sources: list[SourceInfo]) -> Structure:
        for s in self._streams.values():
            self._close_tb(s)
        tr = self._torchrun
        if tr is not None and tr["section"] == "root" and tr["entries"]:
            self._emit_torchrun(tr)
        m = dict(self._m)
        m["step_times"] = list(m["step_times"])
        m["losses"] = list(self._losses)[-512:]
        self.out.metrics = m
        self.out.progress = {k: list(v) for k, v in self._progress.items()}
        self.out.events.extend(self._series.events)
        self.out.end_state = self._end_state(sources)
        self._stall(m["step_times"])
        return self.out

    def _stall(self, step_times: list[float]) -> None:
        """Progress stopped: the last timestamped line is far later than the last step,
        measured in the run's own step interval (needs timestamps on the lines)."""
        rep = self._repeat
        if rep is not None and rep[3] >= 3 and STALL_MIN_S <= rep[2] - rep[1] < 366 * 86400:
            step, first, last, count, line = rep
            self.out.events.append(
                Event(
                    "stall",
                    line,
                    {
                        "silent_s": round(last - first, 1),
                        "step_interval_s": None,
                        "factor": None,
                        "last_step": step,
                        "repeats": count,
                    },
                )
            )
            return
        if len(step_times) < 5 or self._last_ts is None:
            return
        gaps = sorted(b - a for a, b in itertools.pairwise(step_times) if b >= a)
        if not gaps:
            return
        median = max(gaps[len(gaps) // 2], 1e-3)
        silent = self._last_ts[0] - step_times[-1]
        if silent > 366 * 86400:
            return  # a year-less clock (glog) against a dated one: not comparable
        if silent >= max(STALL_FACTOR * median, STALL_MIN_S):
            line = self._last_ts[1]
            self.out.events.append(
                Event(
                    "stall",
                    line,
                    {
                        "silent_s": round(silent, 1),
                        "step_interval_s": round(median, 3),
                        "factor": round(silent / median, 1),
                        "last_step": self._m.get("last_step"),
                    },
                )
            )

    def _end_state(self, sources: list[SourceInfo]) -> EndState:
        phase = self.out.last_phase
        if not any(s.lines for s in sources):
            return EndState("empty", phase)
        states: list[EndState] = []
        for src in sources:
            tail = list(self._tails.get(src.path, ()))
            if not tail:
                continue
            last = tail[-1]
            states.append(self._source_end(src, tail, last, phase))
        if not states:
            return EndState("empty", phase)
        order = ["traceback", "error", "cut-mid-line", "no-terminal-event", "clean-exit"]
        states.sort(key=lambda e: order.index(e.kind))
        return states[0]

    def _source_end(self, src: SourceInfo, tail: list[Line], last: Line, phase: str | None) -> EndState:
        def st(kind: str) -> EndState:
            return EndState(kind, phase, last.lineno, src.path, last.text[-200:])

        if any(T.CLEAN_EXIT_RE.search(x.text) for x in tail[-5:]):
            return st("clean-exit")
        excs = [e for e in self.out.exceptions if e.line.source == src.path]
        if excs and any(x.seq > excs[-1].line.seq and T.BAR_DONE_RE.search(x.text) for x in tail):
            return st("clean-exit")  # the work finished after the error: it was handled
        if excs and excs[-1].has_traceback and excs[-1].line.seq > self._last_step_seq:
            return st("traceback")
        if any(T.ERROR_END_RE.search(x.text) for x in tail[-8:]) or (
            excs and excs[-1].line.seq > self._last_step_seq and excs[-1].line.seq >= tail[0].seq
        ):
            return st("error")
        if src.ends_without_newline:
            return st("cut-mid-line")
        return st("no-terminal-event")


def _int(text: str) -> int | None:
    """An optionally negative integer, or None ("--9" from a damaged log is not one)."""
    body = text[1:] if text.startswith("-") else text
    return int(text) if body.isdigit() and body.isascii() else None


def _first_group(m: re.Match[str]) -> str:
    """The phase whose alternative matched (table order wins on ties)."""
    for name, value in m.groupdict().items():
        if value is not None:
            return name.replace("_", "-")
    return str(m.lastgroup).replace("_", "-")


def _signame(code: int) -> str | None:
    if code >= 0:
        # shells report 128+N for a signal
        if code > 128 and code - 128 < 65:
            code = -(code - 128)
        else:
            return None
    try:
        return _signal.Signals(-code).name
    except ValueError:
        return None


def chain_root(excs: list[ExceptionInfo], last: ExceptionInfo) -> ExceptionInfo:
    """The first exception of `last`'s chain ("During handling ...", "The above exception
    was the direct cause ..."): walk back on its own stream (source, rank) while the chain
    index counts down. `last` is the last element of `excs`."""
    root = last
    for e in reversed(excs[:-1]):
        if (e.line.source, e.line.rank) != (root.line.source, root.line.rank):
            continue
        if root.chain_index > 0 and e.chain_index == root.chain_index - 1:
            root = e
        elif root.chain_index == 0:
            break
    return root


def root_exception(
    exceptions: list[ExceptionInfo], secondary: frozenset[int] | set[int] = frozenset()
) -> ExceptionInfo | None:
    """The log's root error: the first exception of the last failure's chain (the one
    the others were raised while handling, or from), not a wrapper that only carries
    another (ChildFailedError, a re-raise in the parent), and of the ranks that raised
    the same error, the one that raised it first. Errors named without a traceback are a
    weaker record: the first of them leads (what follows is often teardown). `secondary`:
    the seqs of errors a launcher lists as other failures (torchrun's "Failures:"), which
    give way to the same error in its "Root Cause" entry."""
    traced = [e for e in exceptions if e.has_traceback]
    real = [e for e in traced or exceptions if not T.WRAPPER_TYPE_RE.search(e.type)]
    if not real:
        return None
    if not traced:
        return real[0]
    root = chain_root(real, real[-1])

    def shape(e: ExceptionInfo) -> str:  # the same error on every rank: cuda:0 vs cuda:3
        return _DIGITS.sub("#", e.message.split("\n", 1)[0])

    head = shape(root)
    same = [e for e in real if e.type == root.type and shape(e) == head]
    same = [e for e in same if e.line.seq not in secondary] or same
    timed = all(e.line.ts is not None for e in same)
    return min(same, key=lambda e: (e.line.ts, e.line.seq) if timed else (0.0, e.line.seq))
