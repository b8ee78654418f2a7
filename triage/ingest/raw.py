"""One physical line as read, and a gap of skipped lines: what every reader of bytes
yields (`lines.Splitter`, `scan.windows`) and every consumer of them reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class RawLine(NamedTuple):
    """One physical line as read (a tuple: built once per line, cheaply)."""

    lineno: int
    data: bytes
    complete: bool  # False for a last line with no newline
    cut_bytes: int = 0  # bytes dropped from the middle of a huge line
    length: int = 0  # the whole line's length in bytes, where it was cut (else 0)


@dataclass(frozen=True, slots=True)
class Gap:
    """Lines were skipped before the next one: structure state must not span it."""

    lines: int
