"""Which lines of a batch hold which literals: one native pass over the batch.

The per-line readers (structure, the rule prefilter) each act only on lines that hold
one of their literals. Asking that of every line costs a Python call per line and
reader; asking it of a batch of lines joined by newlines costs one ahocorasick-rs pass,
and the (few) hits are mapped back to their lines. No literal holds a newline, so no
hit spans two lines.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate
from typing import Any


def _automaton(literals: Sequence[str]) -> Any:
    try:
        import ahocorasick_rs
    except ImportError:  # callers then read every line as they would without a batch
        return None
    return ahocorasick_rs.AhoCorasick(list(literals))


class LinesWith:
    """`of(texts)`: per index of a line holding any of `literals`, the indexes (into
    `literals`) of those it holds. `caseless`: literals are lower-case and matched
    against the lower-cased lines. `which` False: only which lines hold any literal
    matters (the sets then name some of the literals, not every one: a cheaper,
    non-overlapping pass). `available` is False without ahocorasick-rs."""

    def __init__(self, literals: Sequence[str], *, caseless: bool = False, which: bool = True) -> None:
        if any("\n" in lit or not lit for lit in literals):
            raise ValueError("a batch literal may be neither empty nor hold a newline")
        self.literals = tuple(literals)
        self.caseless = caseless
        self.which = which
        self._ac: Any = _automaton(self.literals) if self.literals else None
        self.available = self._ac is not None or not self.literals

    def of(self, texts: Sequence[str]) -> dict[int, set[int]]:
        """Line index -> literal indexes, for the lines holding any literal."""
        if self._ac is None:
            return {}
        joined = "\n".join(texts)
        if joined.count("\n") != len(texts) - 1:  # a text holds a newline: line by line
            return self._each(texts)
        lengths: Sequence[str] = texts
        if self.caseless:
            low = joined.lower()
            if len(low) != len(joined):  # some character lower-cases to several
                lengths = low.split("\n")
            joined = low
        found = self._ac.find_matches_as_indexes(joined, overlapping=self.which)
        if not found:
            return {}
        ends = list(accumulate(len(t) + 1 for t in lengths))  # one past each line's newline
        out: dict[int, set[int]] = {}
        for lit, start, _end in found:
            i = bisect_right(ends, start)
            hit = out.get(i)
            if hit is None:
                out[i] = {lit}
            else:
                hit.add(lit)
        return out

    def _each(self, texts: Sequence[str]) -> dict[int, set[int]]:
        out: dict[int, set[int]] = {}
        for i, text in enumerate(texts):
            found = self._ac.find_matches_as_indexes(
                text.lower() if self.caseless else text, overlapping=True
            )
            if found:
                out[i] = {lit for lit, _s, _e in found}
        return out
