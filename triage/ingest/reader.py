"""Byte sources: files, folders of per-rank logs, stdin, .gz and .zst, read as chunks.

Splitting them into physical lines (and the huge-line cap) is `triage.ingest.lines`;
its names are re-exported here for the callers that import them from this module."""

from __future__ import annotations

import gzip
import io
import os
import re
import stat
import sys
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from triage.errors import TriageError
from triage.ingest.lines import (
    HEAD_KEEP,
    MAX_LINE,
    TAIL_KEEP,
    LineCap,
    RawLine,
    exact_lines,
    split_lines,
)

__all__ = [
    "HEAD_KEEP",
    "MAX_LINE",
    "TAIL_KEEP",
    "LineCap",
    "RawLine",
    "TruncatedInput",
    "expand_paths",
    "iter_exact",
    "iter_raw",
    "open_binary",
    "read_chunks",
    "read_text_sample",
    "split_lines",
    "until_damaged",
]

CHUNK = 1 << 20

LOG_SUFFIXES = (".log", ".txt", ".out", ".err", ".gz", ".zst", ".stdout", ".stderr")


def expand_paths(args: Iterable[str]) -> list[str]:
    """Resolve CLI arguments into an ordered list of log paths ('-' for stdin).

    A folder contributes the log-like files inside it (recursively, in natural order,
    so rank2 comes before rank10); a missing path or an empty folder is an error.
    """
    out: list[str] = []
    for arg in args:
        if arg == "-":
            out.append(arg)
            continue
        p = Path(arg)
        if not p.exists():
            raise TriageError(f"no such file or directory: {arg}")
        if p.is_dir():
            found = sorted(
                (
                    str(f)
                    for f in p.rglob("*")
                    if f.is_file() and not f.name.startswith(".") and _looks_like_log(f)
                ),
                key=natural_key,
            )
            if not found:
                raise TriageError(f"{arg}: folder holds no log files (*.log, *.txt, *.out, ...)")
            out.extend(found)
        else:
            mode = p.stat().st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
                raise TriageError(f"{arg}: not a regular file")
            if not os.access(p, os.R_OK):
                raise TriageError(f"{arg}: permission denied")
            out.append(str(p))
    if not out:
        raise TriageError("no input: give a log file, a folder of logs, or - for stdin")
    return out


_DIGITS = re.compile(r"(\d+)")


def natural_key(path: str) -> list[str | int]:
    """Sort key that orders the numbers inside names by value: rank2 before rank10.

    Splitting on a capturing group alternates text and digits, so two keys always hold
    the same type at the same index and compare without error.
    """
    return [int(t) if i % 2 else t.lower() for i, t in enumerate(_DIGITS.split(path))]


def _looks_like_log(p: Path) -> bool:
    name = p.name.lower()
    if name.endswith(LOG_SUFFIXES):
        return True
    # rank files without suffix, e.g. "rank0", "stderr", "0"
    return "." not in name


def open_binary(path: str) -> BinaryIO:
    """Open a source for reading bytes, decompressing .gz/.zst by magic number."""
    if path == "-":
        return _stdin()
    try:
        fh: BinaryIO = open(path, "rb")  # noqa: SIM115 - returned to the caller
    except PermissionError:
        raise TriageError(f"{path}: permission denied") from None
    except IsADirectoryError:
        raise TriageError(f"{path}: is a directory") from None
    except OSError as e:
        raise TriageError(f"{path}: cannot open ({e.strerror})") from None
    head = fh.peek(4)[:4] if hasattr(fh, "peek") else b""
    if head[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=fh, mode="rb")  # type: ignore[return-value]
    # a zstd frame, or a skippable frame (pzstd and seekable zstd start with one)
    if head == b"\x28\xb5\x2f\xfd" or (len(head) == 4 and _skippable(int.from_bytes(head, "little"))):
        try:
            import zstandard  # optional dependency
        except ImportError:
            fh.close()
            raise TriageError(
                f"{path}: is zstd-compressed; install zstandard (pip install 'triage[zstd]')"
            ) from None
        return _ZstdStream(fh, zstandard)  # type: ignore[return-value]
    return fh


def _stdin() -> BinaryIO:
    # With file descriptor 0 closed (`triage logs - <&-`, a cron job, a daemon) Python
    # sets sys.stdin to None: say so instead of failing on its missing buffer.
    stdin = sys.stdin
    buf = getattr(stdin, "buffer", None) if stdin is not None else None
    if buf is None:
        raise TriageError("-: stdin is closed; pipe a log in (cmd 2>&1 | triage logs -) or give a file")
    return buf  # type: ignore[no-any-return]


def _skippable(magic: int) -> bool:
    return 0x184D2A50 <= magic <= 0x184D2A5F


class _ZstdFrames:
    """Follows zstd frame and block headers as the compressed bytes pass, to tell the
    end of the input from the end of a frame: zstandard's stream reader ends quietly on a
    cut-off frame, where gzip raises EOFError (RFC 8878 section 3.1.1 has the layout)."""

    def __init__(self) -> None:
        self._need = "magic"  # what the next bytes are: magic, header, block, or skip
        self._buf = bytearray()  # the part of a header read so far
        self._skip = 0  # bytes of block content (or a skippable frame) still to pass
        self._checksum = False
        self.lost = False  # not a layout this tracker knows: make no claim

    @property
    def between_frames(self) -> bool:
        return self.lost or (self._need == "magic" and not self._buf and not self._skip)

    def feed(self, data: bytes) -> None:
        i, n = 0, len(data)
        while i < n and not self.lost:
            if self._skip:
                take = min(self._skip, n - i)
                self._skip -= take
                i += take
                continue
            want = self._header_size()
            take = min(want - len(self._buf), n - i)
            self._buf += data[i : i + take]
            i += take
            if len(self._buf) == want:
                self._parse()

    def _header_size(self) -> int:
        if self._need == "magic":
            return 8 if len(self._buf) >= 4 and self._buf[0] & 0xF0 == 0x50 else 5
        if self._need == "header":
            fhd = self._buf[4]
            single = fhd >> 5 & 1
            fcs = (1 if single else 0, 2, 4, 8)[fhd >> 6]
            return 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + fcs
        return 3  # a block header

    def _parse(self) -> None:
        b = self._buf
        if self._need == "magic":
            magic = int.from_bytes(b[:4], "little")
            if _skippable(magic) and len(b) == 8:
                self._skip = int.from_bytes(b[4:8], "little")
                b.clear()
            elif magic == 0xFD2FB528:
                self._need = "header"
                self._checksum = bool(b[4] >> 2 & 1)  # the header is never 5 bytes: read on
            elif not _skippable(magic):
                self.lost = True
            return
        if self._need == "header":
            self._need, self._buf = "block", bytearray()
            return
        head = int.from_bytes(b, "little")
        last, kind, size = head & 1, head >> 1 & 3, head >> 3
        self._skip = 1 if kind == 1 else size  # an RLE block stores one byte
        b.clear()
        if last:
            self._skip += 4 if self._checksum else 0
            self._need = "magic"


class _ZstdSource:
    """The compressed file as zstandard reads it, shown to a `_ZstdFrames` on the way."""

    def __init__(self, fh: BinaryIO, frames: _ZstdFrames) -> None:
        self._fh, self._frames = fh, frames

    def read(self, size: int = -1) -> bytes:
        data = self._fh.read(size)
        self._frames.feed(data)
        return data


class _ZstdStream:
    """A .zst file's decompressed bytes, all frames; a cut-off last frame raises EOFError
    after its readable part, as gzip does, so it gets the same note."""

    def __init__(self, fh: BinaryIO, zstandard: object) -> None:
        self._fh = fh
        self._frames = _ZstdFrames()
        self._reader = zstandard.ZstdDecompressor().stream_reader(  # type: ignore[attr-defined]
            _ZstdSource(fh, self._frames), read_across_frames=True
        )

    def read(self, size: int = -1) -> bytes:
        data: bytes = self._reader.read(size)
        if not data and not self._frames.between_frames:
            raise EOFError("the input ends inside a zstd frame")
        return data

    def close(self) -> None:
        self._reader.close()
        self._fh.close()


def read_chunks(fh: BinaryIO, path: str, size: int = CHUNK) -> Iterator[bytes]:
    """Yield chunks of at most `size` bytes; a damaged compressed stream ends the data
    with a clear error."""
    # read1 returns what is decoded so far, so a cut-off gzip keeps its readable part
    read = getattr(fh, "read1", None) or fh.read
    while True:
        try:
            chunk = read(size)
        except (EOFError, gzip.BadGzipFile, zlib.error) as e:
            raise TruncatedInput(path, str(e)) from None
        except OSError as e:
            raise TriageError(f"{path}: read error ({e})") from None
        except Exception as e:  # zstandard.ZstdError has no importable base here
            if type(e).__name__ == "ZstdError":
                raise TruncatedInput(path, str(e)) from None
            raise
        if not chunk:
            return
        yield chunk


class TruncatedInput(Exception):
    """A compressed stream ended early: the lines read so far are kept."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: compressed stream is damaged or cut off ({why})")
        self.path = path


def iter_raw(path: str) -> Iterator[RawLine]:
    """The physical lines of a source, numbered and capped (`lines.split_lines`); a
    damaged .gz/.zst raises `TruncatedInput` after the lines before the damage."""
    fh = open_binary(path)
    damage: list[TruncatedInput] = []
    try:
        yield from split_lines(until_damaged(read_chunks(fh, path), damage))
    finally:
        if path != "-":  # stdin is not ours to close
            fh.close()
    if damage:
        raise damage[0]  # after the last, unfinished line was yielded: it is often the evidence


def iter_exact(path: str) -> Iterator[tuple[int, bytes]]:
    """(lineno, exact bytes with the newline) of every physical line, numbered as
    `iter_raw` numbers them and uncapped; a damaged .gz/.zst ends where the damage
    starts (the report notes it)."""
    fh = open_binary(path)
    try:
        yield from exact_lines(until_damaged(read_chunks(fh, path), []))
    finally:
        if path != "-":
            fh.close()


def until_damaged(chunks: Iterator[bytes], damage: list[TruncatedInput]) -> Iterator[bytes]:
    """End the data at a damaged compressed stream, remembering why."""
    try:
        yield from chunks
    except TruncatedInput as e:
        damage.append(e)


def read_text_sample(path: str, limit: int = 4096) -> str:
    """The first bytes of a file as text (for format sniffing)."""
    with open(path, "rb") as fh:
        return io.TextIOWrapper(io.BytesIO(fh.read(limit)), errors="replace").read()
