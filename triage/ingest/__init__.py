"""ingest: bytes from files, folders, stdin, gz/zst -> clean `Line`s, streaming."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from triage.ingest.lines import NAME_RANK_LOOKAHEAD, Gap, RawLine, SourceLines, rank_from_name, split_lines
from triage.ingest.reader import (
    TruncatedInput,
    expand_paths,
    iter_raw,
    open_binary,
    read_chunks,
    until_damaged,
)
from triage.ingest.scan import CHUNK as SCAN_CHUNK
from triage.ingest.scan import (
    HEAD_LINES,
    HEAD_MIN,
    TAIL_BYTES,
    TAIL_MIN,
    LiteralScanner,
    windows,
)
from triage.model import Line, SourceInfo

__all__ = ["NAME_RANK_LOOKAHEAD", "Ingest", "expand_paths", "rank_from_name"]


FAST_MIN_BYTES = 2 << 20  # files this big are read as windows around literal hits


@dataclass
class Ingest:
    """Streams `Line`s from several sources and remembers per-source facts.

    Iterate it once; afterwards `sources` and `notes` describe what was read. Each
    source's bytes become `Line`s in `lines.SourceLines`, as every entry point's do.
    """

    paths: list[str]
    sources: list[SourceInfo] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Fast path: with a scanner, files of at least `fast_min_bytes` are read as windows
    # around literal hits (plus head and tail); `on_gap(source)` is told of each skip.
    scanner: LiteralScanner | None = None
    fast_min_bytes: int = FAST_MIN_BYTES
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
            odd = _not_text(path)
            if odd:
                self.notes.append(odd)
            src = SourceLines(name, seq, notes=self.notes)
            damaged = False
            try:
                yield from src.read(self._raw(path, name), self._gap_of(name))
            except TruncatedInput as e:
                damaged = True
                self.notes.append(str(e) + "; the lines before the damage were read")
            yield from src.finish()
            seq = src.seq
            self.sources.append(src.info(damaged))

    def _gap_of(self, name: str) -> Callable[[Gap], None]:
        """What a source's `Gap` tells: the lines skipped, and `on_gap` of the source."""

        def gap(g: Gap) -> None:
            self.skipped_lines += g.lines
            if self.on_gap is not None:
                self.on_gap(name)

        return gap

    def _raw(self, path: str, name: str) -> Iterator[RawLine | Gap]:
        if self.tail_only and path != "-" and not path.endswith((".gz", ".zst")):
            yield from _tail(path)
            return
        if self.scanner is None or not self._big(path):
            yield from iter_raw(path)
            return
        fh = open_binary(path)
        damage: list[TruncatedInput] = []
        # chunks of scan.CHUNK (8 MiB): a rank log of a folder is one chunk, with no
        # partial line to carry into the next (a copy of the whole chunk)
        chunks = until_damaged(read_chunks(fh, path, SCAN_CHUNK), damage)
        try:
            yield from windows(
                self._progress(chunks),
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


SNIFF_BYTES = 64 << 10  # a file's head, read to tell a log from a binary file


def _not_text(path: str) -> str | None:
    """A note when a file's head is not UTF-8 text (a checkpoint or a core file given
    by mistake, or UTF-16 from a Windows redirect): its lines are read all the same."""
    if path == "-":
        return None
    try:
        fh = open_binary(path)
        try:
            head = fh.read(SNIFF_BYTES)
        finally:
            fh.close()
    except Exception:  # unreadable or damaged: reading it says so itself
        return None
    if len(head) < 64:
        return None
    half = len(head) // 2  # UTF-16 of ASCII: every other byte NUL, the others not
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or (
        head[1::2].count(0) > half * 0.4 and head[0::2].count(0) < half * 0.05
    ):
        return (
            f"{path}: is UTF-16 text (a Windows redirect?): read with its NUL bytes dropped, "
            "so characters beyond ASCII may be garbled; `iconv -f UTF-16 -t UTF-8` converts it"
        )
    text = head.decode("utf-8", errors="replace")
    # bytes that are not UTF-8 (a U+FFFD the file itself holds, as pasted, is text)
    invalid = text.count("\ufffd") - head.count("\ufffd".encode())
    bad = invalid + len(_CONTROL.findall(text))
    if bad * 10 <= len(text):
        return None
    return (
        f"{path}: does not look like a text log: {bad / len(text):.0%} of its first "
        f"{len(head) // 1024} KiB are control bytes or not UTF-8 (a binary file, or another encoding?)"
    )


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]")  # not \t \n \r ESC


def _tail(path: str) -> Iterator[RawLine | Gap]:
    """The last TAIL_BYTES of a file, with true line numbers (newlines before it are
    counted in big reads, which is far cheaper than splitting them)."""
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
