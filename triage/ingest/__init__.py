"""ingest: bytes from files, folders, stdin, gz/zst -> clean `Line`s, streaming."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from triage.ingest.normalize import Peeled, SourceState, normalize
from triage.ingest.reader import (
    RawLine,
    TruncatedInput,
    expand_paths,
    iter_raw,
    open_binary,
    read_chunks,
    until_damaged,
)
from triage.ingest.scan import (
    HEAD_LINES,
    HEAD_MIN,
    TAIL_BYTES,
    TAIL_MIN,
    Gap,
    LiteralScanner,
    windows,
)
from triage.model import Line, SourceInfo

__all__ = ["Ingest", "expand_paths", "rank_from_name"]

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


@dataclass
class _Stats:
    lines: int = 0
    ends_without_newline: bool = False
    last_line_text: str = ""
    damaged: bool = False


@dataclass
class Ingest:
    """Streams `Line`s from several sources and remembers per-source facts.

    Iterate it once; afterwards `sources` and `notes` describe what was read.
    """

    paths: list[str]
    sources: list[SourceInfo] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Fast path: with a scanner, files of at least `fast_min_bytes` are read as windows
    # around literal hits (plus head and tail); `on_gap(source)` is told of each skip.
    scanner: LiteralScanner | None = None
    fast_min_bytes: int = 2 << 20
    on_gap: Callable[[str], None] | None = None
    skipped_lines: int = 0
    tail_only: bool = False  # quick verdict: only the last TAIL_BYTES of each file
    on_progress: Callable[[int], None] | None = None  # bytes read, on the fast path
    _total: int = field(default=0, init=False, repr=False)  # bytes of all paths together
    _head_lines: int = field(default=HEAD_LINES, init=False, repr=False)
    _tail_bytes: int = field(default=TAIL_BYTES, init=False, repr=False)

    def __iter__(self) -> Iterator[Line]:
        seq = 0
        # a folder of many small rank logs is as big as one big log: the fast path goes
        # by what is read in all, and each file's always-read tail shrinks with their number
        self._total = sum(self._size(p) for p in self.paths)
        n = max(1, len(self.paths))
        self._head_lines = max(HEAD_MIN, HEAD_LINES // n)
        self._tail_bytes = max(TAIL_MIN, TAIL_BYTES // n)
        for path in self.paths:
            name = "<stdin>" if path == "-" else path
            state = SourceState()
            stats = _Stats()
            ranks = _NameRank(rank_from_name(path), state)
            try:
                for raw in self._raw(path, name):
                    if isinstance(raw, Gap):  # the lines before a gap go out before it is told
                        ready = ranks.decide()
                        yield from self._lines(ready, name, seq)
                        seq += len(ready)
                        self.skipped_lines += raw.lines
                        if self.on_gap is not None:
                            self.on_gap(name)
                        continue
                    stats.lines = raw.lineno
                    stats.ends_without_newline = not raw.complete
                    for p in normalize(raw.data, state):
                        if ranks.rank is None:  # most files: no name rank, nothing to wait for
                            seq += 1
                            yield Line(name, raw.lineno, p.text, p.rank, seq, p.ts)
                            continue
                        ready = ranks.take(raw.lineno, p)
                        yield from self._lines(ready, name, seq)
                        seq += len(ready)
                    if raw.cut_bytes:
                        self.notes.append(
                            f"{name}:{raw.lineno}: a line of {_size(raw.length)} was cut to its head and tail"
                        )
            except TruncatedInput as e:
                stats.damaged = True
                self.notes.append(str(e) + "; the lines before the damage were read")
            ready = ranks.decide()
            yield from self._lines(ready, name, seq)
            seq += len(ready)
            self.sources.append(
                SourceInfo(
                    path=name,
                    lines=stats.lines,
                    ranks=ranks.of_source(),
                    truncated=stats.ends_without_newline or stats.damaged,
                    ends_without_newline=stats.ends_without_newline,
                )
            )

    @staticmethod
    def _lines(ready: list[tuple[int, Peeled, int | None]], name: str, seq: int) -> Iterator[Line]:
        for i, (lineno, p, rank) in enumerate(ready, 1):
            yield Line(name, lineno, p.text, rank, seq + i, p.ts)

    def _raw(self, path: str, name: str) -> Iterator[RawLine | Gap]:
        if self.tail_only and path != "-" and not path.endswith((".gz", ".zst")):
            yield from _tail(path)
            return
        if self.scanner is None or not self._big(path):
            yield from iter_raw(path)
            return
        fh = open_binary(path)
        damage: list[TruncatedInput] = []
        try:
            yield from windows(
                self._progress(until_damaged(read_chunks(fh, path), damage)),
                self.scanner,
                head=self._head_lines,
                tail_bytes=self._tail_bytes,
            )
        finally:
            fh.close()
        if damage:
            raise damage[0]

    def _progress(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            if self.on_progress is not None:
                self.on_progress(len(chunk))
            yield chunk

    def _big(self, path: str) -> bool:
        if path == "-":
            return False
        return max(self._size(path), self._total) >= self.fast_min_bytes

    @staticmethod
    def _size(path: str) -> int:
        """About how many bytes reading `path` gives (a compressed file: 8x its size)."""
        if path == "-":
            return 0
        try:
            size = os.path.getsize(path)
        except OSError:
            return 0
        return size * (8 if path.endswith((".gz", ".zst")) else 1)


def _tail(path: str) -> Iterator[RawLine | Gap]:
    """The last TAIL_BYTES of a file, with true line numbers (newlines before it are
    counted in big reads, which is far cheaper than splitting them)."""
    from triage.ingest.reader import split_lines
    from triage.ingest.scan import TAIL_BYTES

    size = os.path.getsize(path)
    start = max(0, size - TAIL_BYTES)
    before = 0
    with open(path, "rb") as fh:
        remaining = start
        while remaining > 0:
            block = fh.read(min(remaining, 16 << 20))
            if not block:
                break
            before += block.count(b"\n")
            remaining -= len(block)
        data = fh.read()
    if start:
        nl = data.find(b"\n")
        data = data[nl + 1 :] if nl >= 0 else b""
        before += 1
        yield Gap(before)
    for raw in split_lines([data]):
        yield RawLine(before + raw.lineno, raw.data, raw.complete, raw.cut_bytes, raw.length)


def _size(n: int) -> str:
    """A byte count as read in a note: exact, and in the unit a person thinks in."""
    unit = f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"
    return f"{n:,} bytes ({unit})"


def rank_from_name(path: str) -> int | None:
    """The rank a log file's name gives it (rank3.log, train_rank_3.out, worker-3.log,
    3.log), or None."""
    base = path.rsplit("/", 1)[-1]
    for rx in _NAME_RANKS:
        m = rx.search(base)
        if m:
            return int(m.group(1))
    return None


class _NameRank:
    """Gives a file's unprefixed lines the rank its name says, unless its content says
    otherwise: lines wait (NAME_RANK_LOOKAHEAD at most) until a rank prefix or the end
    decides whether the content's ranks are only the name's."""

    def __init__(self, rank: int | None, state: SourceState) -> None:
        self.rank = rank
        self.state = state
        self.applies = False
        self.decided = rank is None
        self.pending: list[tuple[int, Peeled]] = []

    def take(self, lineno: int, p: Peeled) -> list[tuple[int, Peeled, int | None]]:
        """One more logical line: the lines ready to go out, with their ranks."""
        if not self.decided:
            self.pending.append((lineno, p))
            if p.rank is None and len(self.pending) < NAME_RANK_LOOKAHEAD:
                return []
            return self.decide()
        if self.applies and p.rank is not None and p.rank != self.rank:
            self.applies = False  # another rank past the lookahead: the name is a story's
        return [(lineno, p, self._rank(p))]

    def decide(self) -> list[tuple[int, Peeled, int | None]]:
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
