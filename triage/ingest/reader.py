"""Byte sources: files, folders of per-rank logs, stdin, .gz and .zst; split into
physical lines in bounded memory (a huge line keeps its head and tail)."""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from triage.errors import TriageError

CHUNK = 1 << 20
MAX_LINE = 64 * 1024  # bytes kept per physical line: head + tail
HEAD_KEEP = 48 * 1024
TAIL_KEEP = 16 * 1024

LOG_SUFFIXES = (".log", ".txt", ".out", ".err", ".gz", ".zst", ".stdout", ".stderr")


@dataclass(frozen=True, slots=True)
class RawLine:
    lineno: int
    data: bytes
    complete: bool  # False for a last line with no newline
    cut_bytes: int = 0  # bytes dropped from the middle of a huge line


def expand_paths(args: Iterable[str]) -> list[str]:
    """Resolve CLI arguments into an ordered list of log paths ('-' for stdin).

    A folder contributes the log-like files inside it (recursively, sorted, so
    rank0..rankN keep their order); a missing path or an empty folder is an error.
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
                str(f) for f in p.rglob("*")
                if f.is_file() and not f.name.startswith(".") and _looks_like_log(f)
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


def _looks_like_log(p: Path) -> bool:
    name = p.name.lower()
    if name.endswith(LOG_SUFFIXES):
        return True
    # rank files without suffix, e.g. "rank0", "stderr", "0"
    return "." not in name


def open_binary(path: str) -> BinaryIO:
    """Open a source for reading bytes, decompressing .gz/.zst by magic number."""
    if path == "-":
        return sys.stdin.buffer
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
    if head == b"\x28\xb5\x2f\xfd":
        try:
            import zstandard  # optional dependency
        except ImportError:
            fh.close()
            raise TriageError(
                f"{path}: is zstd-compressed; install zstandard (pip install 'triage[zstd]')"
            ) from None
        return zstandard.ZstdDecompressor().stream_reader(fh)  # type: ignore[return-value]
    return fh


def read_chunks(fh: BinaryIO, path: str) -> Iterator[bytes]:
    """Yield chunks; a damaged compressed stream ends the data with a clear error."""
    # read1 returns what is decoded so far, so a cut-off gzip keeps its readable part
    read = getattr(fh, "read1", None) or fh.read
    while True:
        try:
            chunk = read(CHUNK)
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


def split_lines(chunks: Iterable[bytes]) -> Iterator[RawLine]:
    """Split a byte stream on \\n in bounded memory.

    A line longer than MAX_LINE keeps its first HEAD_KEEP and last TAIL_KEEP bytes;
    `cut_bytes` says how much was dropped. The last line may lack a newline.
    """
    lineno = 0
    head = bytearray()
    tail = bytearray()
    cut = 0
    for chunk in chunks:
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            piece = chunk[start:] if nl < 0 else chunk[start:nl]
            if cut or len(head) + len(piece) > HEAD_KEEP:
                # overflow mode: fill head to HEAD_KEEP, keep a rolling tail
                if not cut and len(head) < HEAD_KEEP:
                    room = HEAD_KEEP - len(head)
                    head += piece[:room]
                    piece = piece[room:]
                tail += piece
                if len(tail) > TAIL_KEEP:
                    cut += len(tail) - TAIL_KEEP
                    del tail[: len(tail) - TAIL_KEEP]
            else:
                head += piece
            if nl < 0:
                break
            lineno += 1
            yield RawLine(lineno, _join(head, tail, cut), True, cut)
            head.clear()
            tail.clear()
            cut = 0
            start = nl + 1
            if start >= len(chunk):
                break
    if head or tail:
        lineno += 1
        yield RawLine(lineno, _join(head, tail, cut), False, cut)


def _join(head: bytearray, tail: bytearray, cut: int) -> bytes:
    if not cut:
        return bytes(head) + bytes(tail)
    return bytes(head) + b" ...[%d bytes cut]... " % cut + bytes(tail)


def iter_raw(path: str) -> Iterator[RawLine]:
    fh = open_binary(path)
    damage: list[TruncatedInput] = []
    try:
        yield from split_lines(until_damaged(read_chunks(fh, path), damage))
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()
    if damage:
        raise damage[0]  # after the last, unfinished line was yielded: it is often the evidence


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
