"""Fast path for big logs: find candidate lines in raw bytes with a native
multi-literal engine, then hand only windows around them (plus the head and the tail)
to the normal line pipeline.

Engines, picked at run time: hyperscan (x86_64 wheels), ahocorasick_rs (Rust, any
arch), else plain Python (`bytes.find` per literal). All report the byte offsets where a literal occurs; a
whole line is taken around each, so the exact offset does not matter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from triage.ingest.reader import MAX_LINE, LineCap, RawLine, split_lines

CHUNK = 8 << 20
BEFORE = 30  # lines kept before a hit: the traceback frames above an exception line
AFTER = 60  # lines after: message continuations, torchrun's failure report
HEAD_LINES = 200
TAIL_BYTES = 256 << 10


class LiteralScanner:
    """Offsets of any literal in a buffer. Case-insensitive literals are matched
    caselessly (hyperscan natively, the others over the lower-cased buffer)."""

    def __init__(self, literals: list[str], icase: list[str] = (), engine: str | None = None) -> None:  # type: ignore[assignment]
        self.literals = sorted({x.encode() for x in literals if x})
        self.icase = sorted({x.encode() for x in icase if x})
        self._fn: Callable[[bytes], list[int]]
        self.engine = ""
        for name in ([engine] if engine else ["hyperscan", "ahocorasick_rs", "python"]):
            try:
                self._fn = getattr(self, f"_build_{name}")()
                self.engine = name
                break
            except (ImportError, OSError, RuntimeError, AttributeError):
                continue
        if not self.engine:
            raise RuntimeError("no literal scanner available")

    def offsets(self, buf: bytes) -> list[int]:
        return self._fn(buf) if (self.literals or self.icase) else []

    def _build_hyperscan(self) -> Callable[[bytes], list[int]]:
        import hyperscan

        pats = [re.escape(x) for x in self.literals] + [re.escape(x) for x in self.icase]
        flags = [0] * len(self.literals) + [hyperscan.HS_FLAG_CASELESS] * len(self.icase)
        if not pats:
            return lambda buf: []
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=pats, ids=list(range(len(pats))), elements=len(pats), flags=flags)

        def scan(buf: bytes) -> list[int]:
            hits: list[int] = []

            def on_match(_id: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
                hits.append(end)

            db.scan(buf, match_event_handler=on_match)
            hits.sort()
            return hits
        return scan

    def _build_ahocorasick_rs(self) -> Callable[[bytes], list[int]]:
        import ahocorasick_rs

        # One automaton over the lower-cased chunk, with every literal lower-cased: a
        # superset of the exact hits (the full regexes decide later), in one pass
        # (bytes.lower is a fast C pass; a second automaton or Python's re for the
        # caseless literals would cost more than the scan itself).
        lits = sorted({x.lower() for x in (*self.literals, *self.icase)})
        ac = ahocorasick_rs.BytesAhoCorasick(lits)

        def scan(buf: bytes) -> list[int]:
            return [s for _i, s, _e in ac.find_matches_as_indexes(buf.lower())]
        return scan

    def _build_python(self) -> Callable[[bytes], list[int]]:
        """No native engine: bytes.find per literal (C speed per pass, one pass each)."""
        lits = list(self.literals)
        ilits = [x.lower() for x in self.icase]

        def scan(buf: bytes) -> list[int]:
            hits: list[int] = []
            for hay, needles in ((buf, lits), (buf.lower() if ilits else b"", ilits)):
                for lit in needles:
                    i = hay.find(lit)
                    while i >= 0:
                        hits.append(i)
                        i = hay.find(lit, i + 1)
            hits.sort()
            return hits
        return scan


@dataclass(frozen=True, slots=True)
class Gap:
    """Lines were skipped before the next one: structure state must not span it."""

    lines: int


def windows(chunks: Iterator[bytes], scanner: LiteralScanner, *, before: int = BEFORE,
            after: int = AFTER, head: int = HEAD_LINES,
            tail_bytes: int = TAIL_BYTES) -> Iterator[RawLine | Gap]:
    """Yield the lines around literal hits (and the head and the tail), in order,
    with their true line numbers, and a `Gap` where lines were skipped.

    Memory: two chunks (one of lookahead, to know where the tail starts) plus the
    carried partial line.
    """
    emitted = 0  # last line number emitted
    base = 0  # line number of the last line before `data`
    pending_after = head  # lines still to emit from the start of the next data
    carry = b""  # partial last line of the previous chunk
    # A partial line longer than MAX_LINE is carried as its head and tail (`carry` holds
    # those bytes, so offsets still work) and the cap that knows its true size.
    cap: LineCap | None = None
    it = iter(chunks)
    cur = next(it, None)
    while cur is not None:
        nxt = next(it, None)
        buf = carry + cur
        cut = buf.rfind(b"\n") + 1
        if cut == 0:  # no newline yet
            if cap is None and len(buf) >= MAX_LINE:
                cap = LineCap()
                cap.add(buf)
            elif cap is not None:
                cap.add(cur)
            if nxt is not None:
                carry = buf if cap is None else cap.kept()
                cur = nxt
                continue
        first: RawLine | None = None  # the carried line, finished with this chunk's start
        if cap is not None and cut:
            cap.add(cur[:buf.find(b"\n") - len(carry)])
            first = cap.line(base + 1, True)
            cap = None
        data, carry = buf[:cut], buf[cut:]
        spans = _spans(data, scanner, before, after)
        if pending_after:
            spans.append((0, _forward(data, 0, pending_after)))
            pending_after = 0
        # the tail: the last `tail_bytes` of the input (this chunk, if the next is short)
        rest = 0 if nxt is None else len(nxt)
        if rest < tail_bytes and data:
            start = max(0, len(data) - (tail_bytes - rest))
            if start:
                start = data.find(b"\n", start) + 1 or len(data)
            spans.append((start, len(data)))
        lineno = base
        pos = 0
        for start, end in _merge(spans):
            lineno += data.count(b"\n", pos, start)
            pos = start
            first_ln = lineno + 1
            if first_ln > emitted + 1:
                yield Gap(first_ln - emitted - 1)
            seg = data[start:end]
            for raw in split_lines([seg]):
                ln = first_ln + raw.lineno - 1
                if ln > emitted:
                    if first is not None and ln == first.lineno:
                        raw = first
                    yield RawLine(ln, raw.data, raw.complete or end < len(data) or bool(carry),
                                  raw.cut_bytes, raw.length)
                    emitted = ln
            lineno += seg.count(b"\n")
            pos = end
            if end >= len(data) and nxt is not None:
                pending_after = max(pending_after, after)  # continue into the next chunk
        lineno += data.count(b"\n", pos)
        base = lineno
        cur = nxt
    if carry:
        total = base + 1
        if total > emitted + 1:
            yield Gap(total - emitted - 1)
        if cap is not None:  # a giant last line with no newline: the cap has all of it
            yield cap.line(total, False)
        else:
            for raw in split_lines([carry]):
                yield RawLine(total, raw.data, False, raw.cut_bytes, raw.length)
                break


def _spans(data: bytes, scanner: LiteralScanner, before: int, after: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    last_end = -1
    for off in scanner.offsets(data):
        if off < last_end:
            continue  # inside the previous window already
        ls = data.rfind(b"\n", 0, off) + 1
        start = _backward(data, ls, before)
        end = _forward(data, ls, after + 1)
        spans.append((start, end))
        last_end = end
    return spans


def _backward(data: bytes, pos: int, n: int) -> int:
    for _ in range(n):
        if pos <= 0:
            return 0
        pos = data.rfind(b"\n", 0, pos - 1) + 1
    return pos


def _forward(data: bytes, pos: int, n: int) -> int:
    for _ in range(n):
        nl = data.find(b"\n", pos)
        if nl < 0:
            return len(data)
        pos = nl + 1
    return pos


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def read_chunks_plain(fh: BinaryIO) -> Iterator[bytes]:
    while True:
        b = fh.read(CHUNK)
        if not b:
            return
        yield b
