"""Bytes to numbered `Line`s: the one path from raw bytes to what the engine reads.

Every entry point turns bytes into `Line`s here, so a file, an in-memory text and a
live feed agree on line numbers, the huge-line cap and its marker, the rank a file's
name gives, and the note about a cut line.

How each caller uses it:

- A whole file (`triage.ingest.Ingest`): per source, `src = SourceLines(name, seq,
  notes=shared_notes)`; `yield from src.read(raws, on_gap)` over the file's `RawLine`s
  and `Gap`s (`reader.iter_raw(path)`, or `scan.windows(...)` on the fast path); on
  `TruncatedInput` note the damage; then `yield from src.finish()` (lines that waited
  for the name's rank) and `src.info(damaged)` is its `SourceInfo`; `src.seq` is the
  last seq used, the next source's start.
- An in-memory text (`engine.analyze_text`): `src = SourceLines(name)`,
  `lines = list(src.text(text))`, then `analyze_lines(lines, [src.info()])` (pass
  `src.notes` as notes to report a cut line as files do). Lines only:
  `lines_from_text(text, source)`.
- A live feed (`watch.live.LiveTriage._feed_one`): one `feed = LineFeed(source)` per
  followed source. For each physical line fed (without its newline; `lineno` is its
  true number, which may skip lines): `lines = feed.line(raw, lineno)` and feed those
  `Line`s to the analysis; it caps the line, numbers it and keeps the per-source
  normalize state. Before skipping lines, feed `feed.gap()` (lines that waited for the
  name's rank) and then tell the analysis of the gap. The unfinished last line at the
  end: `feed.finish(rest)`. A feed of raw chunks instead: `feed.feed(chunk)` per
  chunk and `feed.finish()`. `feed.info()` and `feed.notes` as for a file.
- Exact bytes (`fixtures.add.iter_lines`, which copies lines unchanged into a fixture):
  `reader.iter_exact(path)` gives (lineno, bytes with the newline) for every physical
  line, numbered as here, uncapped; a damaged .gz/.zst ends where the damage starts.

Splitting: `Splitter` (incremental; `split_lines` over an iterable of chunks) splits
on \\n in bounded memory; a line longer than MAX_LINE keeps its first HEAD_KEEP and last
TAIL_KEEP bytes around `cut_marker(n)` (`cap`, or `LineCap` while the line is still
arriving). `watch.follow.LineSplitter` and `scan.windows` use the same cap and marker.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from triage.ingest.normalize import (
    Peeled,
    SourceState,
    native_plain,
    normalize,
    normalize_plain,
    normalize_plain_python,
    peeled,
)
from triage.ingest.raw import Gap, RawLine
from triage.ingest.unwrap import Unwrapper
from triage.model import Line, SourceInfo, new_line

__all__ = [
    "CUT_MARKER",
    "HEAD_KEEP",
    "MAX_LINE",
    "NAME_RANK_LOOKAHEAD",
    "TAIL_KEEP",
    "Gap",
    "LineCap",
    "LineFeed",
    "RawLine",
    "SourceLines",
    "Splitter",
    "cap",
    "cut_marker",
    "exact_lines",
    "lines_from_text",
    "rank_from_name",
    "recap",
    "shown_texts",
    "split_lines",
]

MAX_LINE = 64 * 1024  # bytes kept per physical line: head + tail
HEAD_KEEP = 48 * 1024
TAIL_KEEP = 16 * 1024
CUT_MARKER = b" ...[%d bytes cut]... "  # between a cut line's head and tail; %d: bytes cut


def cut_marker(cut: int) -> bytes:
    """The one marker standing for `cut` bytes dropped from the middle of a line."""
    return CUT_MARKER % cut


# -- the cap ---------------------------------------------------------------------------

# A whole escape sequence (CSI, OSC, two-byte): the cap trims a fragment of one at a cut,
# since half of "\x1b[31m" is no longer an escape and would stay in the text as "31m".
_ESC_SEQ = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_ESC_REACH = 256  # bytes either side of a cut searched for a sequence it splits


def _capped(head: bytes, tail: bytes, edge: bytes, length: int) -> tuple[bytes, int]:
    """Head, marker, tail of a line of `length` bytes; `edge`: the last bytes dropped."""
    head, tail = _trim_escapes(head, tail, edge)
    cut = length - len(head) - len(tail)
    return head + cut_marker(cut) + tail, cut


def cap(data: bytes) -> tuple[bytes, int]:
    """A whole line in memory, capped as `LineCap` caps it while it arrives: the bytes
    to keep (with the marker where cut) and the count of bytes cut (0: unchanged)."""
    n = len(data)
    if n <= MAX_LINE:
        return data, 0
    end = n - TAIL_KEEP
    return _capped(data[:HEAD_KEEP], data[end:], data[max(HEAD_KEEP, end - _ESC_REACH) : end], n)


_MARKER_RE = re.compile(rb" \.\.\.\[(\d+) bytes cut\]\.\.\. ")
_MARKER_MAX = len(cut_marker(10**18))


def _cut_before(data: bytes) -> int:
    """The bytes cut from `data` by an earlier cap (its marker where the cap puts it,
    the tail after it no longer than TAIL_KEEP), or 0: `data` is as written."""
    n = len(data)
    if n > HEAD_KEEP + TAIL_KEEP + _MARKER_MAX:
        return 0
    m = _MARKER_RE.search(data, HEAD_KEEP - _ESC_REACH, HEAD_KEEP + _MARKER_MAX)
    if m is None or m.start() > HEAD_KEEP or n - m.end() > TAIL_KEEP:
        return 0
    return int(m.group(1))


def recap(data: bytes) -> tuple[bytes, int]:
    """`cap` for a line that may be capped already (`watch.follow.LineSplitter` caps the
    lines it gives out, and they are passed on): such a line is kept as it is, with
    the count its marker gives."""
    if len(data) <= MAX_LINE:
        return data, 0
    done = _cut_before(data)
    return (data, done) if done else cap(data)


def _raw(lineno: int, data: bytes, complete: bool) -> RawLine:
    """A RawLine of a whole line held in memory, capped if huge."""
    if len(data) <= MAX_LINE:
        return RawLine(lineno, data, complete)
    kept, cut = cap(data)
    return RawLine(lineno, kept, complete, cut, len(data))


class LineCap:
    """One physical line in bounded memory: its first HEAD_KEEP and last TAIL_KEEP bytes,
    the count of those dropped between, and the last dropped bytes (an escape sequence
    may straddle the cut)."""

    __slots__ = ("cut", "edge", "head", "tail")

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.cut = 0
        self.edge = b""

    def add(self, piece: bytes | bytearray) -> None:
        """Append the next bytes of the line."""
        if len(self.head) < HEAD_KEEP:
            room = HEAD_KEEP - len(self.head)
            self.head += piece[:room]
            piece = piece[room:]
        if not piece:
            return
        self.tail += piece
        excess = len(self.tail) - TAIL_KEEP
        if excess > 0:
            dropped = bytes(self.tail[max(0, excess - _ESC_REACH) : excess])
            self.edge = dropped if len(dropped) >= _ESC_REACH else (self.edge + dropped)[-_ESC_REACH:]
            del self.tail[:excess]
            self.cut += excess

    def kept(self) -> bytes:
        """The bytes kept so far, head then tail, with no marker."""
        return bytes(self.head) + bytes(self.tail)

    def size(self) -> int:
        """The line's length so far, kept and cut bytes together."""
        return len(self.head) + len(self.tail) + self.cut

    def line(self, lineno: int, complete: bool) -> RawLine:
        """The line as read: head, a marker with the bytes cut, tail."""
        if not self.cut:
            return RawLine(lineno, self.kept(), complete)
        length = self.size()
        data, cut = _capped(bytes(self.head), bytes(self.tail), self.edge, length)
        return RawLine(lineno, data, complete, cut, length)


def _trim_escapes(head: bytes, tail: bytes, edge: bytes) -> tuple[bytes, bytes]:
    """Drop the fragments of an escape sequence that the cut split, at the end of the head
    and at the start of the tail (`edge`: the bytes dropped just before the tail)."""
    i = head.rfind(b"\x1b", max(0, len(head) - _ESC_REACH))
    if i >= 0 and _ESC_SEQ.match(head, i) is None:
        head = head[:i]
    j = edge.rfind(b"\x1b")
    if j >= 0:
        before = edge[j:]
        m = _ESC_SEQ.match(before + tail[:_ESC_REACH])
        if m is not None and m.end() > len(before):
            tail = tail[m.end() - len(before) :]
    return head, tail


# -- splitting -------------------------------------------------------------------------


class Splitter:
    """Chunks in, numbered physical lines out, in bounded memory: the unfinished last
    line waits for its end (as its head and tail in a `LineCap` once it is huge)."""

    __slots__ = ("_cap", "_carry", "_carry_len", "lineno")

    def __init__(self, lineno: int = 0) -> None:
        self.lineno = lineno  # the number of the last complete line given out
        self._carry: list[bytes] = []  # pieces of the unfinished line, while it fits
        self._carry_len = 0
        self._cap: LineCap | None = None  # the unfinished line once it is huge

    @property
    def partial(self) -> bytes:
        """The unfinished line's bytes kept so far (head and tail when huge, no marker)."""
        return self._cap.kept() if self._cap is not None else b"".join(self._carry)

    def feed(self, chunk: bytes) -> list[RawLine]:
        """The lines `chunk` completes, in order (split at C speed, capped if huge)."""
        return list(self.lines_of(chunk))

    def lines_of(self, chunk: bytes) -> Iterator[RawLine]:
        """`feed`, a line at a time: a chunk's lines are not all held at once (each is a
        tuple the cyclic collector would walk while it waits); read it to its end."""
        parts = chunk.split(b"\n")
        last = parts.pop()
        if parts:
            n = self.lineno
            yield self._close(parts[0], n + 1)
            limit = MAX_LINE
            for i in range(1, len(parts)):
                p = parts[i]
                yield RawLine(n + 1 + i, p, True) if len(p) <= limit else _raw(n + 1 + i, p, True)
            self.lineno = n + len(parts)
        if last:
            self._extend(last)

    def finish(self) -> RawLine | None:
        """The unfinished last line (no newline), now final, or None; resets the line."""
        if self._cap is None and not self._carry:
            return None
        return self._close(b"", self.lineno + 1, complete=False)

    def _extend(self, piece: bytes) -> None:
        if not piece:
            return
        if self._cap is not None:
            self._cap.add(piece)
        elif self._carry_len + len(piece) > HEAD_KEEP:
            cap_ = self._cap = LineCap()
            for p in self._carry:
                cap_.add(p)
            cap_.add(piece)
            self._carry, self._carry_len = [], 0
        else:
            self._carry.append(piece)
            self._carry_len += len(piece)

    def _close(self, end: bytes, lineno: int, complete: bool = True) -> RawLine:
        """The unfinished line, ended by `end` (its last bytes)."""
        if self._cap is not None:
            self._cap.add(end)
            raw = self._cap.line(lineno, complete)
            self._cap = None
            return raw
        if not self._carry:
            return _raw(lineno, end, complete)
        self._carry.append(end)
        data = b"".join(self._carry)
        self._carry, self._carry_len = [], 0
        return _raw(lineno, data, complete)


def split_lines(chunks: Iterable[bytes]) -> Iterator[RawLine]:
    """Split a byte stream on \\n in bounded memory (`Splitter`), numbering from 1.

    A line longer than MAX_LINE keeps its first HEAD_KEEP and last TAIL_KEEP bytes;
    `cut_bytes` says how much was dropped. The last line may lack a newline.
    """
    sp = Splitter()
    for chunk in chunks:
        yield from sp.lines_of(chunk)
    last = sp.finish()
    if last is not None:
        yield last


def exact_lines(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """(lineno, exact bytes with the newline) of every physical line, numbered as
    `split_lines` numbers them, uncapped: for copying lines unchanged."""
    n = 0
    pending: list[bytes] = []  # pieces of a line longer than a chunk
    for chunk in chunks:
        parts = chunk.split(b"\n")
        if len(parts) == 1:
            pending.append(chunk)
            continue
        parts[0] = b"".join(pending) + parts[0]
        for piece in parts[:-1]:
            n += 1
            yield n, piece + b"\n"
        pending = [parts[-1]] if parts[-1] else []
    if pending:
        yield n + 1, b"".join(pending)


# -- the rank a file's name gives ------------------------------------------------------

# Where a file's name says its rank: tried in order, the first row that matches wins, so
# an explicit "rank3" beats a "worker-1" in the same name. Each number must stand alone:
# not glued to a word before it (llama3, framework3) nor part of a longer number. A node
# number (gpu-node-17) is a host, not a rank.
_NAME_RANKS: list[re.Pattern[str]] = [
    re.compile(r"(?<![a-z])(?:local_)?rank[_-]?(\d{1,6})(?!\d)", re.IGNORECASE),
    re.compile(r"(?<![a-z])(?:worker|proc)[_-]?(\d{1,6})(?!\d)", re.IGNORECASE),
    re.compile(r"^(\d{1,6})\.(?:log|txt|out|err)$", re.IGNORECASE),  # 0.log ... 7.log
]
# Logical lines read before deciding whether the name's rank holds: a file whose lines
# carry other ranks' prefixes (an interleaved log named for its story) is not one rank's.
NAME_RANK_LOOKAHEAD = 200


def rank_from_name(path: str) -> int | None:
    """The rank a log file's name gives it (rank3.log, train_rank_3.out, worker-3.log,
    3.log), or None."""
    base = path.rsplit("/", 1)[-1]
    for rx in _NAME_RANKS:
        m = rx.search(base)
        if m:
            return int(m.group(1))
    return None


Ready = list[tuple[int, Peeled, int | None]]  # (lineno, peeled line, its rank)


class _NameRank:
    """Gives a file's unprefixed lines the rank its name says, unless its content says
    otherwise: lines wait (NAME_RANK_LOOKAHEAD at most) until a rank prefix or the end
    decides whether the content's ranks are only the name's."""

    def __init__(self, rank: int | None, state: SourceState, *, wait: bool = True) -> None:
        self.rank = rank
        self.state = state
        # a live feed cannot hold lines back: it applies the name's rank at once, until
        # a line carries another rank (as a file does past the lookahead)
        self.applies = not wait and rank is not None
        self.decided = rank is None or not wait
        self.pending: list[tuple[int, Peeled]] = []

    def take(self, lineno: int, p: Peeled) -> Ready:
        """One more logical line: the lines ready to go out, with their ranks."""
        if not self.decided:
            self.pending.append((lineno, p))
            if p.rank is None and len(self.pending) < NAME_RANK_LOOKAHEAD:
                return []
            return self.decide()
        if self.applies and p.rank is not None and p.rank != self.rank:
            self.applies = False  # another rank past the lookahead: the name is a story's
        return [(lineno, p, self._rank(p))]

    def decide(self) -> Ready:
        """Decide now (a gap or the end of the file comes) and release the waiting lines."""
        if not self.decided:
            self.decided = True
            self.applies = self.state.seen_ranks <= {self.rank}
        out = [(n, p, self._rank(p)) for n, p in self.pending]
        self.pending = []
        return out

    def _rank(self, p: Peeled) -> int | None:
        if p.rank is not None:
            return p.rank
        return self.rank if self.applies else None

    def of_source(self) -> tuple[int, ...]:
        ranks = set(self.state.seen_ranks)
        if self.applies and self.rank is not None:
            ranks.add(self.rank)
        return tuple(sorted(ranks))


# -- one source's lines ----------------------------------------------------------------


def _size(n: int) -> str:
    """A byte count as read in a note: exact, and in the unit a person thinks in."""
    unit = f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"
    return f"{n:,} bytes ({unit})"


class SourceLines:
    """One source's raw lines -> numbered, normalised `Line`s, and what was learnt on the
    way: the normalize state, the name's rank, cut-line notes, the `SourceInfo`.

    `seq` is the last global seq given out (start a source at the previous one's);
    `notes` may be a list shared by several sources, appended to as lines are read.
    """

    def __init__(
        self,
        name: str,
        seq: int = 0,
        *,
        name_rank: bool = True,
        notes: list[str] | None = None,
        wait: bool = True,
    ) -> None:
        self.name = name
        self.seq = seq
        self.state = SourceState()
        self.notes: list[str] = [] if notes is None else notes
        self.lines = 0  # the number of the last physical line read
        self.ends_without_newline = False
        self.skipped = 0  # lines the fast path skipped (told by `Gap`s)
        self._ranks = _NameRank(rank_from_name(name) if name_rank else None, self.state, wait=wait)

    def read(
        self, raws: Iterable[RawLine | Gap], on_gap: Callable[[Gap], None] | None = None
    ) -> Iterator[Line]:
        """The `Line`s of `raws` in order; `on_gap` is told of each `Gap` after the lines
        before it went out. The per-line hot loop of every file read."""
        name, state = self.name, self.state
        plain = self._ranks.rank is None  # most files: no name rank, nothing to wait for
        read_plain = native_plain
        seq = self.seq
        last: RawLine | None = None
        unwrap = Unwrapper()
        try:
            for raw in unwrap(raws):
                if isinstance(raw, Gap):
                    self.seq = seq
                    yield from self.gap()
                    seq = self.seq
                    self.skipped += raw.lines
                    if on_gap is not None:
                        on_gap(raw)
                    continue
                last = raw
                lineno = raw.lineno
                # `normalize_plain`, unrolled: the module's read, else the Python path's
                got = read_plain(raw.data) if read_plain is not None else None
                if got is not None and plain and got[3] is None and not raw.cut_bytes:
                    # `normalize.peeled` without an srun label or a name rank to wait
                    # for: its Line at once
                    seq += 1
                    if got[1] is not None:
                        state.seen_ranks.add(got[1])
                    yield new_line(name, lineno, got[0], got[1], seq, got[2])
                    continue
                one = peeled(got, state) if got is not None else normalize_plain_python(raw.data, state)
                for p in (one,) if one is not None else normalize(raw.data, state):
                    if plain:
                        seq += 1
                        yield new_line(name, lineno, p.text, p.rank, seq, p.ts)
                        continue
                    self.seq = seq
                    yield from self._emit(self._ranks.take(lineno, p))
                    seq = self.seq
                if raw.cut_bytes:
                    self._note_cut(raw)
        finally:
            self.seq = seq
            if last is not None:
                self.lines, self.ends_without_newline = (
                    max(last.lineno, unwrap.last_lineno),
                    not last.complete,
                )
            if unwrap.joined:
                self.notes.append(
                    f"{self.name}: hard-wrapped at {unwrap.width} columns (a terminal's copy): "
                    f"{unwrap.joined} cut lines were joined to the line before them"
                )

    def line(self, raw: RawLine) -> list[Line]:
        """The `Line`s of one raw line (a live feed's step; `read` is the loop)."""
        self.lines, self.ends_without_newline = raw.lineno, not raw.complete
        out: list[Line] = []
        one = normalize_plain(raw.data, self.state)
        for p in (one,) if one is not None else normalize(raw.data, self.state):
            out.extend(self._emit(self._ranks.take(raw.lineno, p)))
        if raw.cut_bytes:
            self._note_cut(raw)
        return out

    def text(self, text: str | bytes) -> Iterator[Line]:
        """The `Line`s of an in-memory log, then those that waited for the name's rank."""
        data = text.encode("utf-8") if isinstance(text, str) else text
        yield from self.read(split_lines([data]))
        yield from self.finish()

    def gap(self) -> list[Line]:
        """Lines are skipped next: the lines waiting for the name's rank go out first."""
        return self._emit(self._ranks.decide())

    def finish(self) -> list[Line]:
        """The source ended: the lines still waiting for the name's rank."""
        return self._emit(self._ranks.decide())

    def info(self, damaged: bool = False) -> SourceInfo:
        """What was read of this source (`damaged`: a compressed stream ended early)."""
        return SourceInfo(
            path=self.name,
            lines=self.lines,
            ranks=self._ranks.of_source(),
            truncated=self.ends_without_newline or damaged,
            ends_without_newline=self.ends_without_newline,
        )

    def _emit(self, ready: Ready) -> list[Line]:
        seq = self.seq
        out = [new_line(self.name, n, p.text, r, seq + i, p.ts) for i, (n, p, r) in enumerate(ready, 1)]
        self.seq = seq + len(out)
        return out

    def _note_cut(self, raw: RawLine) -> None:
        self.notes.append(
            f"{self.name}:{raw.lineno}: a line of {_size(raw.length)} was cut to its head and tail"
        )


def lines_from_text(text: str | bytes, source: str = "<text>") -> Iterator[Line]:
    """The `Line`s of an in-memory log named `source` (see `SourceLines.text`)."""
    return SourceLines(source).text(text)


def _live_raw(lineno: int, data: bytes, complete: bool) -> RawLine:
    """A RawLine of a live line, which `LineSplitter` may have capped already."""
    done = _cut_before(data) if len(data) > MAX_LINE else 0
    if done:
        return RawLine(lineno, data, complete, done, len(data) - len(cut_marker(done)) + done)
    return _raw(lineno, data, complete)


def shown_texts(raw: bytes, state: SourceState) -> list[str]:
    """The texts of one physical line's logical lines, capped and normalised as the
    analysis reads them (`state` carries the source's prefix state): what a screen that
    shows the raw log as text prints, and what a dead pane's screen is compared with."""
    return [p.text for p in normalize(recap(raw)[0], state)]


class LineFeed:
    """An incremental source for a live log: physical lines (or raw chunks) in as they
    arrive (use `line` or `feed`, not both), `Line`s out, with the same cap, numbering,
    name rank, normalize state and cut-line notes as a file read whole."""

    def __init__(self, source: str, *, seq: int = 0, name_rank: bool = True, wait: bool = True) -> None:
        """`wait` False: never hold a line back for the name's rank (the watcher, which
        must see each line as it comes); the name's rank applies until another shows."""
        self.source = SourceLines(source, seq, name_rank=name_rank, wait=wait)
        self.splitter = Splitter()

    @property
    def notes(self) -> list[str]:
        return self.source.notes

    @property
    def lines(self) -> int:
        """The number of the last physical line fed."""
        return self.source.lines

    def line(self, raw: bytes, lineno: int | None = None) -> list[Line]:
        """One complete physical line without its newline (capped here if huge, or as
        `LineSplitter` capped it), as line `lineno` (default: the next one). Call
        `gap()` first where lines are skipped."""
        n = self.source.lines + 1 if lineno is None else lineno
        return self.source.line(_live_raw(n, raw, True))

    def feed(self, chunk: bytes) -> list[Line]:
        """The `Line`s of the lines `chunk` completes (a feed of raw chunks)."""
        out: list[Line] = []
        for raw in self.splitter.feed(chunk):
            out += self.source.line(raw)
        return out

    def gap(self) -> list[Line]:
        """Lines are skipped next: the lines waiting for the name's rank, to feed first."""
        return self.source.gap()

    def finish(self, rest: bytes | None = None) -> list[Line]:
        """The run is over: the unfinished last line (`rest`, else what `feed` holds) is
        final, and every waiting line goes out."""
        out: list[Line] = []
        if rest:
            out += self.source.line(_live_raw(self.source.lines + 1, rest, False))
        else:
            last = self.splitter.finish()
            if last is not None:
                out += self.source.line(last)
        return out + self.source.finish()

    def info(self) -> SourceInfo:
        return self.source.info()
