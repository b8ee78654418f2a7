"""tracebacks: Python tracebacks (chained ones too) and exceptions named without one,
read per stream (source, rank) so interleaved ranks do not mix their frames; and which
of the exceptions is the log's root error."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import triage.structure.tables as T
from triage.model import ExceptionInfo, Line
from triage.structure.timeline import Timeline

MAX_EXCEPTIONS = 2000
MAX_MSG_LINES = 40
_DIGITS = re.compile(r"\d+")
_ORIGINAL_TB = "Original Traceback (most recent call last):"
# What the two readers here act on: a stream with no traceback open (and no frame just
# read) does nothing with a line that holds none of these (`Structurer.feed_batch`'s quiet lane)
TRIGGERS = (
    "Traceback (most recent call last)",  # Python's, torchrun's "Original ...", IPython's
    "traceback",  # torchrun's report field
    "During handling of the above exception",
    "direct cause of the following exception",
    'File "',
    "Error",
    "Exception",
    "Interrupt",
)


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
    ignored: bool = False  # headed by "Exception ignored in: ..." (see T.UNRAISABLE_RE)


@dataclass
class _Stream:
    tb: _TB | None = None
    pending_chain: str | None = None
    chain_index: int = 0
    unraisable: bool = False  # the last line was Python's "Exception ignored in: ..." header
    chain_ignored: bool = False  # the traceback last closed on this stream was a swallowed one


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


def _closed(tb: _TB | None) -> ExceptionInfo | None:
    """The exception a traceback records once it ends (its message lines joined)."""
    if tb is None or tb.exc is None:
        return None
    exc = tb.exc
    if tb.msg_lines:
        msg = (exc.message + "\n" + "\n".join(tb.msg_lines)).strip()
        exc = replace(exc, message=msg, has_traceback=True)
    return exc


class QuotedSource:
    """Tracebacks quote code: Python's puts each frame's source line under its
    ``File "...", line N, in f`` line; IPython and Jupyter quote numbered lines around
    each frame (``-> 2704     raise ImportError(``, ``   2705     "Using ... requires
    Accelerate"``). Those lines are code, not output: `feed` says whether a line is one,
    so that no rule takes a quoted message for the error itself (the exception line
    below says it)."""

    MAX_LINES = 2000  # an unclosed IPython traceback stops quoting after this many lines

    def __init__(self) -> None:
        self._open: dict[tuple[str, int | None], int] = {}  # stream -> lines since its header
        self._frame: dict[tuple[str, int | None], int] = {}  # stream -> indent of a frame line just read

    def feed(self, line: Line) -> bool:
        key = (line.source, line.rank)
        text = line.text
        if self._python_source(key, text):
            return True
        seen = self._open.get(key)
        if seen is None:
            if "Traceback (most recent call last)" in text and T.IPYTHON_TB_RE.match(text):
                self._open[key] = 0
            return False
        if seen > self.MAX_LINES or T.IPYTHON_EXCEPTION_RE.match(text):
            del self._open[key]  # the exception line ends the quoted frames
            return False
        self._open[key] = seen + 1
        return text[:1] in (" ", "-") and T.IPYTHON_SOURCE_RE.match(text) is not None

    def open_on(self, key: tuple[str, int | None]) -> bool:
        """A quote is open on the stream: its next line may be quoted code."""
        return key in self._frame or key in self._open

    def _python_source(self, key: tuple[str, int | None], text: str) -> bool:
        """The line right under a Python frame line, indented deeper: its source."""
        indent = self._frame.pop(key, None)
        stripped = text.lstrip(" ")
        if stripped.startswith('File "') and T.FRAME_RE.match(stripped):
            self._frame[key] = len(text) - len(stripped)
            return False
        return indent is not None and len(text) - len(stripped) > indent and bool(stripped)


class TracebackReader:
    """Exceptions in read order. `secondary` tells whether an exception read now is one
    a launcher lists as another failure (not its root cause)."""

    def __init__(self, timeline: Timeline, secondary: Callable[[], bool]) -> None:
        self._timeline = timeline
        self._secondary = secondary
        self.exceptions: list[ExceptionInfo] = []
        self.secondary_errors: set[int] = set()
        self._streams: dict[tuple[str, int | None], _Stream] = {}
        self._by_source: dict[str, list[_Stream]] = {}  # the same streams, by source

    def gap(self, source: str) -> None:
        """Lines of `source` were skipped: no traceback spans the gap."""
        # the streams of this source only: a folder of 500 rank logs has 500 sources, and
        # a gap in each (the fast path) must not walk all the others' streams
        for s in self._by_source.get(source, ()):
            self._close(s)
            s.pending_chain = None

    def open_on(self, key: tuple[str, int | None]) -> bool:
        """A traceback (or a chain marker's next one) is being read on the stream."""
        s = self._streams.get(key)
        return s is not None and (s.tb is not None or s.pending_chain is not None)

    def seen(self, line: Line) -> None:
        """A line without a trigger on an idle stream: only the stream is known."""
        if (line.source, line.rank) not in self._streams:
            self._stream(line)

    def _stream(self, line: Line) -> _Stream:
        key = (line.source, line.rank)
        s = self._streams.get(key)
        if s is None:
            s = self._streams[key] = _Stream()
            self._by_source.setdefault(line.source, []).append(s)
        return s

    def feed(self, line: Line) -> None:
        """Read one line of its stream's traceback (or start, chain or end one)."""
        s = self._stream(line)
        text = line.text
        stripped = text.strip()
        if T.UNRAISABLE_RE.match(stripped):
            # the traceback that follows is one Python swallowed (a finalizer, `__del__`, atexit)
            self._close(s)
            s.pending_chain = None
            s.unraisable = True
            return
        unraisable, s.unraisable = s.unraisable, False
        if self._header(s, line, stripped, unraisable):
            return
        tb = s.tb
        starts_mid = stripped.startswith('File "') and T.FRAME_RE.match(stripped) is not None
        if tb is None and s.pending_chain is None and starts_mid:
            # a pasted excerpt that starts mid-traceback: its frames still say where the
            # error below them was raised
            s.chain_index = 0
            tb = s.tb = _TB(start=line)
        if tb is None:
            if s.pending_chain is None and ("Error" in text or "Exception" in text or "Interrupt" in text):
                self._bare_exception(line, text)
            return
        if tb.exc is None:
            self._frame_or_exception(tb, line, stripped)
            return
        # message continuation lines until a blank line or a new record
        if not stripped or len(tb.msg_lines) >= MAX_MSG_LINES:
            self._close(s)
            return
        tb.msg_lines.append(stripped)

    def _header(self, s: _Stream, line: Line, stripped: str, unraisable: bool = False) -> bool:
        """A traceback's first line, or a chain marker between two: handled here."""
        if stripped.startswith((T.TRACEBACK_START, _ORIGINAL_TB)) or (
            stripped.startswith("traceback") and T.REPORT_TRACEBACK_RE.match(stripped)
        ):
            self._close(s)
            chained = s.pending_chain
            s.chain_index = s.chain_index + 1 if chained else 0
            # a link chained onto a swallowed exception ("During handling ...") is swallowed too
            ignored = unraisable or (chained is not None and s.chain_ignored)
            indent = _indent(line.text)
            s.tb = _TB(
                start=line, chain_index=s.chain_index, chained_as=chained, indent=indent, ignored=ignored
            )
            s.pending_chain = None
            return True
        if stripped in T.CHAIN_MARKERS:
            self._close(s)
            s.pending_chain = T.CHAIN_MARKERS[stripped]
            return True
        return False

    def _frame_or_exception(self, tb: _TB, line: Line, stripped: str) -> None:
        """Inside a traceback before its exception line: a frame, or the exception."""
        if not stripped:
            return
        # frames and source lines are indented deeper than the traceback's header (a
        # traceback inside torchrun's report, or an indented paste, is indented itself)
        if _indent(line.text) > tb.indent or stripped.startswith(('File "', "^", "~")):
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
                ignored=tb.ignored,
                first_frame=tb.frames[0] if len(tb.frames) > 8 else None,
            )
        # else something else interrupted the traceback (interleaved output)

    def _close(self, s: _Stream) -> None:
        if s.tb is not None:
            s.chain_ignored = s.tb.ignored
        exc = _closed(s.tb)
        s.tb = None
        if exc is not None:
            self._add(exc)

    def _bare_exception(self, line: Line, text: str) -> None:
        """An exception named on a line of its own (`feed` has seen one of the words)."""
        m = T.BARE_EXC_RE.search(text)
        if m:
            self._add(ExceptionInfo(m.group("type"), (m.group("msg") or "").strip(), line))

    def _add(self, exc: ExceptionInfo) -> None:
        self._timeline.error(exc)
        if len(self.exceptions) < MAX_EXCEPTIONS:
            self.exceptions.append(exc)
            if self._secondary():
                self.secondary_errors.add(exc.line.seq)

    def pending(self) -> list[ExceptionInfo]:
        """The exceptions of the tracebacks still open, as if the log ended here (the
        reader is left as it is: more lines may still finish them)."""
        return [e for s in self._streams.values() if (e := _closed(s.tb)) is not None]

    def finish(self) -> tuple[list[ExceptionInfo], set[int]]:
        """All exceptions and the secondary ones' seqs, open tracebacks closed (pure)."""
        excs = list(self.exceptions)
        secondary = set(self.secondary_errors)
        is_secondary = self._secondary()
        for exc in self.pending():
            if len(excs) < MAX_EXCEPTIONS:
                excs.append(exc)
                if is_secondary:
                    secondary.add(exc.line.seq)
        return excs, secondary


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


def _shape(e: ExceptionInfo) -> str:
    """The same error on every rank reads the same: cuda:0 and cuda:3 alike."""
    return _DIGITS.sub("#", e.message.split("\n", 1)[0])


def root_exception(
    exceptions: list[ExceptionInfo], secondary: frozenset[int] | set[int] = frozenset()
) -> ExceptionInfo | None:
    """The log's root error: the first exception of the last failure's chain (the one
    the others were raised while handling, or from), not a wrapper that only carries
    another (ChildFailedError, a re-raise in the parent), and of the ranks that raised
    the same error, the one that raised it first. Errors named without a traceback are a
    weaker record: the first of them leads (what follows is often teardown). `secondary`:
    the seqs of errors a launcher lists as other failures (torchrun's "Failures:"), which
    give way to the same error in its "Root Cause" entry. Exceptions Python swallowed and
    printed as `Exception ignored in: ...` are left out: they did not end the run."""
    exceptions = [e for e in exceptions if not e.ignored]  # swallowed by Python: it did not end the run
    traced = [e for e in exceptions if e.has_traceback]
    real = [e for e in traced or exceptions if not T.WRAPPER_TYPE_RE.search(e.type)]
    if not real:
        return None
    if not traced:
        return real[0]
    root = chain_root(real, real[-1])
    head = _shape(root)
    same = [e for e in real if e.type == root.type and _shape(e) == head]
    same = [e for e in same if e.line.seq not in secondary] or same
    timed = all(e.line.ts is not None for e in same)
    return min(same, key=lambda e: (e.line.ts, e.line.seq) if timed else (0.0, e.line.seq))
