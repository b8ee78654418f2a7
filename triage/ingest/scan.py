"""Fast path for big logs: find candidate lines in raw bytes with a native
multi-literal engine, then hand only windows around them (plus the head and the tail)
to the normal line pipeline.

Engines, picked at run time: hyperscan (x86_64 wheels), ahocorasick_rs (Rust, any
arch), else plain Python (`bytes.find` per literal). All report the byte offsets where a
literal occurs, or, for a literal a rule's clause confirms (`Confirm`), where the
clause's pattern matches the line too; a whole line is taken around each, so the exact
offset does not matter.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from triage.cache import cache_dir
from triage.ingest.lines import MAX_LINE, Gap, LineCap, RawLine, split_lines
from triage.ingest.normalize import SourceState, normalize_plain
from triage.ingest.supersets import hs_pieces, native_superset
from triage.native import native

__all__ = ["Confirm", "Gap", "LiteralScanner", "native_superset", "windows"]  # Gap: from lines

CHUNK = 8 << 20
BEFORE = 30  # lines kept before a hit: the traceback frames above an exception line
AFTER = 60  # lines after: message continuations, torchrun's failure report
HEAD_LINES = 200
HEAD_MIN = 8  # the head kept of each of many files read together
TAIL_BYTES = 256 << 10
TAIL_MIN = 2 << 10  # the tail kept of each of many files read together (a rank folder)
# A few lines read every SAMPLE_BYTES of the body: the metric series (loss, grad norm,
# tok/s, step time) and the step clock cover the whole run, not its head and tail only,
# for about 2,000 lines of Python in a 512 MiB log.
SAMPLE_BYTES = 1 << 20
SAMPLE_LINES = 4
# The metric series, chosen natively (`_SeriesPicker`): from every STEP_BLOCK bytes the
# first line with "loss" on it (what the progress reader reads as a step line: 4,096 of
# them in 512 MiB, about 512 a rank of 8, what a picture keeps), and the lines around
# the SERIES_GAPS largest gaps in time between those step lines in each chunk, bisected
# down to the two lines the gap is between, where a gap is at least GAP_FACTOR times
# the chunk's median and GAP_MIN_S long: a mid-run stall's step time is read whole.
# With the native module (triage/native.py) every loss, grad norm and tok/s value of
# the body is read too, at about 1 GB/s, and of each EXTREME_BLOCK bytes the lines of
# each metric's lowest and highest value and the first non-finite loss are read as
# well: a one-line spike or throughput drop between the step lines is in the series.
# Without it those are not found (a bytes regex reading every value costs 0.3 us a
# value, 0.7-2.9 s in 512 MiB: bench/README.md).
STEP_BLOCK = 128 << 10
EXTREME_BLOCK = 1 << 20
SERIES_GAPS = 2
GAP_FACTOR = 4
GAP_MIN_S = 60.0


@dataclass(frozen=True, slots=True)
class Confirm:
    """Literals whose hits count only where a pattern matches the line too: a clause's
    literals and the native superset of its regex (`native_superset`). A common literal
    (`:inf` is in every `:INFO`) then costs native time instead of a window of Python."""

    literals: tuple[str, ...]
    icase: bool
    pattern: str


class LiteralScanner:
    """Offsets of candidate lines in a buffer: where a plain literal occurs, or where a
    `Confirm` group's pattern matches. Case-insensitive literals are matched caselessly
    (hyperscan natively, the others over the lower-cased buffer).

    hyperscan runs the confirm patterns themselves in the same pass; the other engines
    find their literals and run the pattern (Python's `re`, over bytes) on those lines
    only. A pattern the engine cannot compile makes its literals plain: never fewer
    candidates than the literals alone would give.
    """

    def __init__(
        self,
        literals: Sequence[str],
        icase: Sequence[str] = (),
        engine: str | None = None,
        confirm: Sequence[Confirm] = (),
    ) -> None:
        self.literals = sorted({x.encode() for x in literals if x})
        self.icase = sorted({x.encode() for x in icase if x})
        self.confirm = [c for c in confirm if c.literals]
        self._fn: Callable[[bytes], list[int]]
        self.engine = ""
        for name in [engine] if engine else ["hyperscan", "ahocorasick_rs", "python"]:
            try:
                self._fn = getattr(self, f"_build_{name}")()
                self.engine = name
                break
            except (ImportError, OSError, RuntimeError, AttributeError):
                continue
        if not self.engine:
            raise RuntimeError("no literal scanner available")

    def offsets(self, buf: bytes) -> list[int]:
        """Sorted offsets, each inside (or at the end of) a candidate line."""
        return self._fn(buf) if (self.literals or self.icase or self.confirm) else []

    def _plain_and_checked(self) -> tuple[set[bytes], set[bytes], dict[bytes, list[re.Pattern[bytes]]]]:
        """Plain literals (case-sensitive, caseless) and, for the engines that confirm in
        Python, each lower-cased confirm literal with the patterns that decide its hits."""
        plain, iplain = set(self.literals), set(self.icase)
        checked: dict[bytes, list[re.Pattern[bytes]]] = {}
        for c in self.confirm:
            try:
                pat = re.compile(c.pattern.encode(), re.IGNORECASE if c.icase else 0)
            except (re.error, OverflowError, RecursionError):
                (iplain if c.icase else plain).update(x.encode() for x in c.literals)
                continue
            for lit in c.literals:
                checked.setdefault(lit.encode().lower(), []).append(pat)
        # a caseless plain literal is a window by itself in any case: nothing to confirm
        for low in {x.lower() for x in iplain}:
            checked.pop(low, None)
        return plain, iplain, checked

    def _build_hyperscan(self) -> Callable[[bytes], list[int]]:
        import hyperscan

        caseless = hyperscan.HS_FLAG_CASELESS
        pats = [re.escape(x) for x in self.literals] + [re.escape(x) for x in self.icase]
        flags = [0] * len(self.literals) + [caseless] * len(self.icase)
        if not pats and not self.confirm:
            return lambda buf: []
        # each confirm pattern as the cheap pieces it has (`hs_pieces`): any match of a
        # piece is a window, so the pieces need no ids of their own
        pieces = [(c, hs_pieces(c.pattern)) for c in self.confirm]
        wanted = (
            pats + [x.encode() for _c, (alts, _i) in pieces for x in alts],
            flags + [caseless if c.icase or i else 0 for c, (alts, i) in pieces for _x in alts],
        )
        db = _hs_cached(*wanted)
        if db is None:
            # a pattern hyperscan refuses: find it, one at a time, and scan its literals
            for c, (alts, icase) in pieces:
                flag = caseless if c.icase or icase else 0
                if _hs_compile([x.encode() for x in alts], [flag] * len(alts)) is None:
                    pats.extend(re.escape(x.encode()) for x in c.literals)
                    flags.extend([caseless if c.icase else 0] * len(c.literals))
                else:
                    pats.extend(x.encode() for x in alts)
                    flags.extend([flag] * len(alts))
            db = _hs_cached(pats, flags, also=wanted)  # next time found under `wanted`
            if db is None:
                raise RuntimeError("hyperscan cannot compile the scan patterns")

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
        plain, iplain, checked = self._plain_and_checked()
        lits = sorted({x.lower() for x in (*plain, *iplain)} | set(checked))
        if not lits:
            return lambda buf: []
        ac = ahocorasick_rs.BytesAhoCorasick(lits)
        # this engine matches every literal caselessly: a hit of a case-sensitive plain
        # literal's lower-cased form is a window too (a superset, as for any literal)
        plain_low = {x.lower() for x in plain}
        pats = [None if x in plain_low else checked.get(x) for x in lits]

        def scan(buf: bytes) -> list[int]:
            if not checked:
                return [s for _i, s, _e in ac.find_matches_as_indexes(buf.lower())]
            # overlapping: a confirm literal's hit must not hide a plain one inside it
            found = ac.find_matches_as_indexes(buf.lower(), overlapping=True)
            return _confirmed(buf, iter(sorted(((s, pats[i]) for i, s, _e in found), key=_first)))

        return scan

    def _build_python(self) -> Callable[[bytes], list[int]]:
        """No native engine: bytes.find per literal (C speed per pass, one pass each)."""
        plain, iplain, checked = self._plain_and_checked()
        lits = list(plain)
        ilits = sorted({x.lower() for x in iplain} | set(checked))

        def scan(buf: bytes) -> list[int]:
            hits: list[tuple[int, list[re.Pattern[bytes]] | None]] = []
            for hay, needles in ((buf, lits), (buf.lower() if ilits else b"", ilits)):
                for lit in needles:
                    pats = checked.get(lit) if hay is not buf else None
                    i = hay.find(lit)
                    while i >= 0:
                        hits.append((i, pats))
                        i = hay.find(lit, i + 1)
            hits.sort(key=_first)
            return _confirmed(buf, iter(hits)) if checked else [h[0] for h in hits]

        return scan


def _hs_compile(pats: list[bytes], flags: list[int]) -> Any:
    import hyperscan

    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        db.compile(expressions=pats, ids=list(range(len(pats))), elements=len(pats), flags=flags)
    except hyperscan.error:
        return None
    return db


def _hs_cached(pats: list[bytes], flags: list[int], also: tuple[list[bytes], list[int]] | None = None) -> Any:
    """A hyperscan database for these patterns, from the on-disk cache when it has one:
    compiling the rules' patterns takes about a second, loading them milliseconds.
    Where the cache cannot be read or written, it is compiled each time. `also`: other
    patterns whose lookup should find this database too (the set hyperscan refused, so
    the fallback is not worked out again on every run)."""
    import hyperscan

    path = _hs_path(pats, flags)
    try:
        db = hyperscan.loadb(path.read_bytes(), hyperscan.HS_MODE_BLOCK)
        db.scratch = hyperscan.Scratch(db)  # a loaded database comes without one
        return db
    except (OSError, hyperscan.error, TypeError, ValueError):
        pass
    db = _hs_compile(pats, flags)
    if db is not None:
        for dest in [path] + ([_hs_path(*also)] if also else []):
            try:
                dest.parent.mkdir(parents=True, exist_ok=True)
                tmp = dest.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_bytes(hyperscan.dumpb(db))
                os.replace(tmp, dest)  # atomic: a concurrent run reads the old file or this one
            except (OSError, hyperscan.error):
                pass
    return db


def _hs_path(pats: list[bytes], flags: list[int]) -> Path:
    import hyperscan

    key = hashlib.sha256(repr((getattr(hyperscan, "__version__", ""), pats, flags)).encode())
    return cache_dir() / f"hs-{key.hexdigest()[:32]}.db"


def _first(hit: tuple[int, object]) -> int:
    return hit[0]


def _confirmed(buf: bytes, hits: Iterator[tuple[int, list[re.Pattern[bytes]] | None]]) -> list[int]:
    """The offsets of `hits` (in order) that are plain (no patterns), or whose line one of
    their patterns matches; each line is tried once per pattern list."""
    out: list[int] = []
    line_end = -1  # end of the line decided last
    line = b""
    kept = False
    tried: set[int] = set()  # the pattern lists tried on that line
    for off, pats in hits:
        if pats is None:
            out.append(off)
            continue
        if off >= line_end:  # a later line (hits come in order)
            start = buf.rfind(b"\n", 0, off) + 1
            end = buf.find(b"\n", off)
            line_end = len(buf) if end < 0 else end
            line = buf[start:line_end]
            kept = False
            tried = set()
        if kept or id(pats) in tried:
            continue
        tried.add(id(pats))
        if any(p.search(line) for p in pats):
            kept = True
            out.append(off)
    return out


def windows(
    chunks: Iterator[bytes],
    scanner: LiteralScanner,
    *,
    before: int = BEFORE,
    after: int = AFTER,
    head: int = HEAD_LINES,
    tail_bytes: int = TAIL_BYTES,
    sample_bytes: int = SAMPLE_BYTES,
    sample_lines: int = SAMPLE_LINES,
) -> Iterator[RawLine | Gap]:
    """Yield the lines around literal hits (and the head, the tail, and `sample_lines`
    lines after every `sample_bytes` of input), in order, with their true line numbers,
    and a `Gap` where lines were skipped.

    Memory: two chunks (one of lookahead, to know where the tail starts) plus the
    carried partial line.
    """
    yield from _Windows(scanner, before, after, head, tail_bytes, sample_bytes, sample_lines).run(chunks)


class _Windows:
    """The state `windows` carries from one chunk to the next."""

    def __init__(
        self,
        scanner: LiteralScanner,
        before: int,
        after: int,
        head: int,
        tail_bytes: int,
        sample_bytes: int,
        sample_lines: int,
    ) -> None:
        self.scanner, self.before, self.after = scanner, before, after
        self.tail_bytes, self.sample_bytes, self.sample_lines = tail_bytes, sample_bytes, sample_lines
        self.emitted = 0  # last line number emitted
        self.data_pos = 0  # offset in the input of `data`'s first byte
        self.base = 0  # line number of the last line before `data`
        self.pending_after = head  # lines still to emit from the start of the next data
        self.carry = b""  # partial last line of the previous chunk
        # A partial line longer than MAX_LINE is carried as its head and tail (`carry`
        # holds those bytes, so offsets still work) and the cap that knows its true size.
        self.cap: LineCap | None = None
        self.series = _SeriesPicker()

    def run(self, chunks: Iterator[bytes]) -> Iterator[RawLine | Gap]:
        """Each chunk with a look at the next (is the tail in this one?), then the end."""
        it = iter(chunks)
        cur = next(it, None)
        while cur is not None:
            nxt = next(it, None)
            buf = self.carry + cur
            cut = buf.rfind(b"\n") + 1
            if cut == 0:  # no newline yet
                self._grow(buf, cur)
                if nxt is not None:
                    self.carry = buf if self.cap is None else self.cap.kept()
                    cur = nxt
                    continue
            first = self._end_carried(buf, cur, cut)
            data, self.carry = buf[:cut], buf[cut:]
            yield from self._emit(data, self._spans_of(data, nxt), first, nxt)
            cur = nxt
        yield from self._last()

    def _grow(self, buf: bytes, cur: bytes) -> None:
        """A chunk without a newline: the carried line grows (into a cap once huge)."""
        if self.cap is None and len(buf) >= MAX_LINE:
            self.cap = LineCap()
            self.cap.add(buf)
        elif self.cap is not None:
            self.cap.add(cur)

    def _end_carried(self, buf: bytes, cur: bytes, cut: int) -> RawLine | None:
        """The capped carried line, finished by this chunk's start (None if not capped)."""
        if self.cap is None or not cut:
            return None
        self.cap.add(cur[: buf.find(b"\n") - len(self.carry)])
        first = self.cap.line(self.base + 1, True)
        self.cap = None
        return first

    def _spans_of(self, data: bytes, nxt: bytes | None) -> list[tuple[int, int]]:
        """The spans of `data` to read: hits, samples, the head's rest, the tail."""
        spans = _spans(data, self.scanner, self.before, self.after)
        if self.sample_lines and self.sample_bytes:
            spans.extend(_samples(data, self.data_pos, self.sample_bytes, self.sample_lines))
            spans.extend(self.series.spans(data, self.before, self.after))
        self.data_pos += len(data)
        if self.pending_after:
            spans.append((0, _forward(data, 0, self.pending_after)))
            self.pending_after = 0
        # the tail: the last `tail_bytes` of the input (this chunk, if the next is short)
        rest = 0 if nxt is None else len(nxt)
        if rest < self.tail_bytes and data:
            start = max(0, len(data) - (self.tail_bytes - rest))
            if start:
                start = data.find(b"\n", start) + 1 or len(data)
            spans.append((start, len(data)))
        return spans

    def _emit(
        self, data: bytes, spans: list[tuple[int, int]], first: RawLine | None, nxt: bytes | None
    ) -> Iterator[RawLine | Gap]:
        """The lines of `spans` with their true numbers, a `Gap` before each skip."""
        lineno = self.base
        pos = 0
        for start, end in _merge(spans):
            lineno += data.count(b"\n", pos, start)
            pos = start
            first_ln = lineno + 1
            if first_ln > self.emitted + 1:
                yield Gap(first_ln - self.emitted - 1)
            seg = data[start:end]
            more = end < len(data) or bool(self.carry)  # no line of seg is the input's last
            for raw in split_lines([seg]):
                ln = first_ln + raw.lineno - 1
                if ln > self.emitted:
                    if first is not None and ln == first.lineno:
                        raw = first
                    yield RawLine(ln, raw.data, raw.complete or more, raw.cut_bytes, raw.length)
                    self.emitted = ln
            lineno += seg.count(b"\n")
            pos = end
            if end >= len(data) and nxt is not None:
                self.pending_after = max(self.pending_after, self.after)  # on into the next chunk
        self.base = lineno + data.count(b"\n", pos)

    def _last(self) -> Iterator[RawLine | Gap]:
        """The input's last line when it has no newline."""
        if not self.carry:
            return
        total = self.base + 1
        if total > self.emitted + 1:
            yield Gap(total - self.emitted - 1)
        if self.cap is not None:  # a giant last line with no newline: the cap has all of it
            yield self.cap.line(total, False)
        else:
            for raw in split_lines([self.carry]):
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


def _samples(data: bytes, pos: int, every: int, n: int) -> list[tuple[int, int]]:
    """Spans of the `n` whole lines after each multiple of `every` in the input that falls
    inside `data` (which starts at input offset `pos`)."""
    out: list[tuple[int, int]] = []
    k = -(-pos // every) * every  # the first multiple at or after pos
    while k < pos + len(data):
        if k:  # offset 0 is the head's
            start = data.find(b"\n", k - pos) + 1
            if start:
                out.append((start, _forward(data, start, n)))
        k += every
    return out


class _SeriesPicker:
    """The step lines of a chunk worth reading for the metric series and the step clock
    (see STEP_BLOCK): spans of whole lines, found with `bytes.find`, one bytes regex and
    a few dozen timestamps read per chunk."""

    def __init__(self) -> None:
        self.state = SourceState()  # the prefix peeler's state, for the probes only

    def spans(self, data: bytes, before: int, after: int) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        timed: list[tuple[int, float]] = []  # (line start, time) of each step line read
        for block in range(0, len(data), STEP_BLOCK):
            i = data.find(b"loss", block, block + STEP_BLOCK)
            if i < 0:
                continue
            start, end = _line_at(data, i)
            out.append((start, end))
            ts = self._ts(data, start, end)
            if ts is not None:
                timed.append((start, ts))
        for pos in self._gaps(data, timed):
            out.append((_backward(data, pos, before), _forward(data, pos, after + 1)))
        if native is not None:  # each metric's extremes, every value read natively
            out.extend(native.extremes(data, EXTREME_BLOCK))
        return out

    def _ts(self, data: bytes, start: int, end: int) -> float | None:
        """The time of the line at `start`, as the line pipeline reads it."""
        line = data[start:end].rstrip(b"\r\n")
        if len(line) > 4096:
            return None
        p = normalize_plain(line, self.state)
        return None if p is None else p.ts

    def _gaps(self, data: bytes, timed: list[tuple[int, float]]) -> list[int]:
        """The line starts right after the largest gaps in time between `timed` lines."""
        gaps = sorted(
            ((b[1] - a[1], a, b) for a, b in itertools.pairwise(timed) if b[1] >= a[1]),
            key=lambda g: g[0],
        )
        if not gaps:
            return []
        floor = max(GAP_MIN_S, GAP_FACTOR * gaps[len(gaps) // 2][0])
        return [self._bisect(data, a, b) for dt, a, b in gaps[::-1][:SERIES_GAPS] if dt >= floor]

    def _bisect(self, data: bytes, lo: tuple[int, float], hi: tuple[int, float]) -> int:
        """Halve the span between two timed lines toward the half with more of the time
        until the two are (about) adjacent: the start of the line after the gap."""
        for _ in range(40):
            mid = data.find(b"\n", (lo[0] + hi[0]) // 2) + 1
            probe = None
            while 0 < mid < hi[0] and probe is None:
                start, end = _line_at(data, mid)
                probe = self._ts(data, start, end)
                if probe is None:
                    mid = end
            if probe is None or not lo[1] <= probe <= hi[1] or mid <= lo[0]:
                break
            if hi[1] - probe >= probe - lo[1]:
                lo = (mid, probe)
            else:
                hi = (mid, probe)
        return hi[0]


def _line_at(data: bytes, i: int) -> tuple[int, int]:
    """The span of the whole line holding offset `i`, its newline included."""
    start = data.rfind(b"\n", 0, i) + 1
    end = data.find(b"\n", i)
    return start, len(data) if end < 0 else end + 1


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
