"""Follow a growing file the way `tail -F` does, and split what arrives into lines.

`Follower` survives rotation (the path now names another file: the rest of the old
one is read first) and truncation (copytruncate: the size drops below what was read,
so reading restarts at 0). `LineSplitter` turns arbitrary chunks into complete lines
with the one splitter of `triage.ingest.lines` (C-speed `bytes.split`, the same
head/tail cap and cut marker as a file read whole), keeping an unfinished last line
(bounded: a progress bar redrawn with \\r for an hour must not grow without limit).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import BinaryIO

from triage.ingest.lines import Splitter

READ_MAX = 8 << 20  # bytes per poll: a burst is read over several polls, memory stays bounded


@dataclass(frozen=True, slots=True)
class Chunk:
    """Bytes read from the followed file. `fresh` is True when they start a new file
    (rotation or truncation): an unfinished line before them is over."""

    data: bytes
    fresh: bool = False


class Follower:
    """Read what was appended to `path` since the last call, across rotation and
    truncation. The file may not exist yet; it is opened when it appears."""

    def __init__(self, path: str, *, read_max: int = READ_MAX) -> None:
        self.path = path
        self.read_max = read_max
        self._fh: BinaryIO | None = None
        self._ident: tuple[int, int] | None = None
        self._pos = 0
        self.rotations = 0
        self.truncations = 0
        self._fresh = False

    @property
    def position(self) -> int:
        """Bytes read from the current file."""
        return self._pos

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def _open(self) -> bool:
        try:
            fh = open(self.path, "rb")  # noqa: SIM115 - kept open between polls
        except (FileNotFoundError, PermissionError, IsADirectoryError):
            return False
        st = os.fstat(fh.fileno())
        self._fh, self._ident, self._pos = fh, (st.st_dev, st.st_ino), 0
        return True

    def _read(self, limit: int) -> bytes:
        assert self._fh is not None
        data = self._fh.read(limit)
        self._pos += len(data)
        return data

    def poll(self) -> list[Chunk]:
        """Everything readable now (at most `read_max` bytes), as chunks in order."""
        out: list[Chunk] = []
        if self._fh is None and not self._open():
            return out
        budget = self.read_max
        data = self._read(budget)
        if data:
            out.append(Chunk(data, self._take_fresh()))
            budget -= len(data)
            if budget <= 0:
                return out
        # at EOF of the file we hold: has the path moved on, or was the file cut?
        try:
            st = os.stat(self.path)
        except OSError:
            return out  # rotated away and not recreated yet: keep the old file open
        if (st.st_dev, st.st_ino) != self._ident:
            rest = self._read(budget)  # what was written before the writer reopened
            if rest:
                out.append(Chunk(rest, self._take_fresh()))
            self.close()
            if self._open():
                self.rotations += 1
                self._fresh = True
                data = self._read(max(budget - len(rest), 1))
                if data:
                    out.append(Chunk(data, self._take_fresh()))
        elif st.st_size < self._pos:
            assert self._fh is not None
            self._fh.seek(0)
            self._pos = 0
            self.truncations += 1
            self._fresh = True
            data = self._read(budget)
            if data:
                out.append(Chunk(data, self._take_fresh()))
        return out

    def _take_fresh(self) -> bool:
        fresh, self._fresh = self._fresh, False
        return fresh


class LineSplitter:
    """Chunks in, complete lines out (capped if huge); the unfinished last line waits
    for its end. A thin face on `triage.ingest.lines.Splitter` for the watcher, which
    wants the lines as bytes and as one blob."""

    def __init__(self) -> None:
        self._sp = Splitter()

    @property
    def partial(self) -> bytes:
        """The unfinished last line's bytes kept so far (its head and tail when huge)."""
        return self._sp.partial

    def feed(self, data: bytes) -> tuple[bytes, list[bytes]]:
        """Return (the complete lines as one blob ending in \\n, the lines without \\n)."""
        lines = [raw.data for raw in self._sp.feed(data)]
        if not lines:
            return b"", []
        return b"\n".join(lines) + b"\n", lines

    def flush(self) -> bytes:
        """The unfinished line (capped), which is now final; the splitter is reset."""
        last = self._sp.finish()
        return b"" if last is None else last.data
