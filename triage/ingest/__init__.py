"""ingest: bytes from files, folders, stdin, gz/zst -> clean `Line`s, streaming."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from triage.ingest.normalize import SourceState, normalize
from triage.ingest.reader import (
    RawLine,
    TruncatedInput,
    expand_paths,
    iter_raw,
    open_binary,
    read_chunks,
    until_damaged,
)
from triage.ingest.scan import Gap, LiteralScanner, windows
from triage.model import Line, SourceInfo

__all__ = ["Ingest", "expand_paths"]

_RANK_IN_NAME = re.compile(r"(?:rank|local_rank|proc|worker|node)[_-]?(\d+)|^(\d+)\.(?:log|txt|out|err)$",
                           re.IGNORECASE)


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

    def __iter__(self) -> Iterator[Line]:
        seq = 0
        for path in self.paths:
            name = "<stdin>" if path == "-" else path
            state = SourceState()
            stats = _Stats()
            file_rank = _rank_from_name(path)
            try:
                for raw in self._raw(path, name):
                    if isinstance(raw, Gap):
                        self.skipped_lines += raw.lines
                        if self.on_gap is not None:
                            self.on_gap(name)
                        continue
                    stats.lines = raw.lineno
                    stats.ends_without_newline = not raw.complete
                    for p in normalize(raw.data, state):
                        seq += 1
                        rank = p.rank if p.rank is not None else file_rank
                        yield Line(name, raw.lineno, p.text, rank, seq, p.ts)
                    if raw.cut_bytes:
                        self.notes.append(
                            f"{name}:{raw.lineno}: a line of {raw.cut_bytes + 64 * 1024} bytes "
                            "was cut to its head and tail")
            except TruncatedInput as e:
                stats.damaged = True
                self.notes.append(str(e) + "; the lines before the damage were read")
            ranks = set(state.seen_ranks)
            if file_rank is not None:
                ranks.add(file_rank)
            self.sources.append(SourceInfo(
                path=name, lines=stats.lines, ranks=tuple(sorted(ranks)),
                truncated=stats.ends_without_newline or stats.damaged,
                ends_without_newline=stats.ends_without_newline))


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
            yield from windows(self._progress(until_damaged(read_chunks(fh, path), damage)),
                               self.scanner)
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
        try:
            size = os.path.getsize(path)
        except OSError:
            return False
        compressed = path.endswith((".gz", ".zst"))
        return size * (8 if compressed else 1) >= self.fast_min_bytes


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
        data = data[nl + 1:] if nl >= 0 else b""
        before += 1
        yield Gap(before)
    for raw in split_lines([data]):
        yield RawLine(before + raw.lineno, raw.data, raw.complete, raw.cut_bytes)


def _rank_from_name(path: str) -> int | None:
    base = path.rsplit("/", 1)[-1]
    m = _RANK_IN_NAME.search(base)
    if not m:
        return None
    return int(m.group(1) or m.group(2))
