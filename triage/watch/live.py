"""Live diagnosis over a stream of lines, cheap enough for 1 MB/s of output.

A full `Analysis` normalises, structures and matches every line: tens of microseconds
per line, far too much for a busy run. Most training output (step lines) can never
fire a rule, so the live layer first scans each chunk for *triggers* with `bytes.find`
(C speed): the rules' literals (anything a line clause or an exception clause needs)
and the structure stage's markers (tracebacks, C++ traces, torchrun reports). Only the
lines around a trigger (a few before, a window after, so a traceback's frames and a
torchrun report's fields come along) are fed to one persistent `Analysis`; the other
lines only to its progress reader (phase, steps, metrics: what the screen shows), so
the screen and the report read one state. `Analysis.report` is pure: a report is
taken from the live analysis itself.

Diagnoses inferred only from how the log ends (cut off, no terminal event) are left
out while the run is alive: a live log always "ends" in the middle. The full triage of
the capture when the run ends has the last word.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from triage.engine import Analysis
from triage.engine.rules import REGEX_TIMEOUT, Rule
from triage.ingest.lines import LineFeed
from triage.ingest.normalize import strip_ansi
from triage.model import Diagnosis, Line, Report
from triage.structure import Progress
from triage.structure.tables import STRUCTURE_LITERALS

BEFORE = 30  # lines before a hit: traceback frames above an exception line (as ingest.scan)
AFTER = 60  # lines after: a traceback's frames and message, a torchrun report's fields
PROGRESS_ALL = 256  # a chunk of at most this many lines is read whole for progress...
PROGRESS_TAIL = 64  # ...of a bigger one (a busy run), its windows and its last lines

# What the structure stage needs to see to build exceptions and events.
STRUCTURE_MARKERS: tuple[str, ...] = tuple(STRUCTURE_LITERALS)

Target = Any  # a line Clause, or (rule id, Unless) for a log-scope `unless`


class TriggerScanner:
    """Which lines of a chunk may matter: one native multi-literal pass over the raw
    bytes (Aho-Corasick; `bytes.find` per literal without it), then, for lines that
    hold only a rule's literal, that rule's regex over all such lines at once. A
    literal that is in every healthy line ("grad_norm") then costs one regex pass per
    chunk, not a window per line."""

    def __init__(
        self,
        exact: dict[str, list[Target]],
        icase: dict[str, list[Target]],
        structure: Iterable[str] = STRUCTURE_MARKERS,
    ) -> None:
        self.targets: dict[bytes, list[Target]] = {}
        for lit, ts in exact.items():
            self.targets.setdefault(lit.encode(), []).extend(ts)
        self.itargets: dict[bytes, list[Target]] = {}
        for lit, ts in icase.items():
            self.itargets.setdefault(lit.lower().encode(), []).extend(ts)
        self.structure = {s.encode() for s in structure if s}
        self.exact = sorted(set(self.targets) | self.structure)
        self.icase = sorted(self.itargets)
        self._ac = _aho(self.exact)
        self._iac = _aho(self.icase)

    def _scan(self, buf: bytes, lits: list[bytes], ac: Any) -> dict[bytes, list[int]]:
        """literal -> byte offsets of its occurrences in buf."""
        out: dict[bytes, list[int]] = {}
        if not lits:
            return out
        if ac is None:
            for lit in lits:
                found = find_hits(buf, [lit])
                if found:
                    out[lit] = found
            return out
        for i, start, _end in ac.find_matches_as_indexes(buf, overlapping=True):
            lst = out.get(lits[i])
            if lst is None:
                out[lits[i]] = [start]
            else:
                lst.append(start)
        return out

    def lines(self, blob: bytes, lines: list[bytes]) -> list[int]:
        """0-based indexes of the lines in `lines` (joined in `blob`) that need a window."""
        exact = self._scan(blob, self.exact, self._ac)
        icase = self._scan(blob.lower(), self.icase, self._iac) if self.icase else {}
        if not exact and not icase:
            return []
        offsets: list[int] = []  # lines that get a window without further checks
        clauses: dict[int, tuple[Any, list[int]]] = {}  # clause -> offsets of its literals
        for table, found in ((self.targets, exact), (self.itargets, icase)):
            for lit, offs in found.items():
                if lit in self.structure and table is self.targets:
                    offsets += offs
                    if lit not in table:
                        continue
                for t in table.get(lit, ()):
                    if isinstance(t, tuple) or getattr(t, "pattern", None) is None:
                        offsets += offs  # a log-scope `unless`: the matcher must see it
                    else:
                        clauses.setdefault(id(t), (t, []))[1].extend(offs)
        window = set(line_indexes(blob, offsets))
        text: str | None = None
        for clause, offs in clauses.values():
            if len(offs) <= FEW:
                idxs = [i for i in line_indexes(blob, offs) if i not in window]
                window.update(i for i in idxs if _search(clause, lines[i]))
            else:
                # a literal in many lines: the clause's regex once over the whole chunk
                if text is None:
                    text = strip_ansi(blob.decode("utf-8", "replace"))
                window.update(_regex_lines(clause, text))
        return sorted(window)


FEW = 32  # literal hits in a chunk up to which each line is checked on its own
_MULTILINE: dict[int, Any] = {}


def _aho(lits: list[bytes]) -> Any:
    if not lits:
        return None
    try:
        import ahocorasick_rs
    except ImportError:
        return None
    return ahocorasick_rs.BytesAhoCorasick(lits)


def line_indexes(blob: bytes, offsets: list[int]) -> list[int]:
    """0-based line indexes (sorted, unique) of byte offsets in a blob of lines."""
    out: list[int] = []
    idx, last = 0, 0
    for off in sorted(offsets):
        idx += blob.count(b"\n", last, off)
        last = off
        if not out or out[-1] != idx:
            out.append(idx)
    return out


def _search(clause: Any, raw: bytes) -> bool:
    try:
        return (
            clause.pattern.search(strip_ansi(raw.decode("utf-8", "replace")), timeout=REGEX_TIMEOUT)
            is not None
        )
    except TimeoutError:
        return True  # cannot tell cheaply: let the full matcher decide


def _regex_lines(clause: Any, text: str) -> list[int]:
    """Line indexes where the clause's regex matches in a multi-line text (^ and $ at
    line boundaries, as when each line is searched on its own)."""
    import regex

    pat = _MULTILINE.get(id(clause))
    if pat is None:
        pat = _MULTILINE[id(clause)] = regex.compile(
            clause.pattern.pattern, clause.pattern.flags | regex.MULTILINE
        )
    out: list[int] = []
    idx, last = 0, 0
    try:
        for m in pat.finditer(text, timeout=REGEX_TIMEOUT * 4):
            idx += text.count("\n", last, m.start())
            last = m.start()
            out.append(idx)
    except TimeoutError:
        return [i for i in range(text.count("\n"))]  # unsure: every line may matter
    return out


def find_hits(blob: bytes, literals: list[bytes]) -> list[int]:
    """Byte offsets of literal occurrences in `blob`, at most one per line and literal."""
    out: list[int] = []
    find = blob.find
    for lit in literals:
        pos = find(lit)
        while pos >= 0:
            out.append(pos)
            nl = blob.find(b"\n", pos)
            if nl < 0:
                break
            pos = find(lit, nl + 1)
    return out


@dataclass
class LiveDiagnoses:
    """The current live view: diagnoses inferred from lines, best first."""

    diagnoses: list[Diagnosis] = field(default_factory=list)
    report: Report | None = None


class LiveTriage:
    """Feed consecutive chunks of complete lines; ask `diagnoses()` when `dirty`."""

    def __init__(
        self,
        rules: list[Rule],
        source: str,
        facts: dict[str, Any] | None = None,
        *,
        before: int = BEFORE,
        after: int = AFTER,
    ) -> None:
        self.rules = rules
        self.source = source
        self.facts = dict(facts or {})
        self.before = before
        self.after = after
        self.analysis = Analysis(rules, self.facts)
        pre = self.analysis.matcher.prefilter
        self.scanner = TriggerScanner(pre.literals, pre.icase)
        self.feed_lines = LineFeed(source, wait=False)  # bytes -> Lines, as files are read
        self.lines = 0  # physical lines seen (complete ones)
        self.fed_upto = 0  # the last lineno fed to the analysis
        self.window_end = 0  # feed every line up to here
        self.fed = 0  # lines fed to the analysis (for the bench)
        self.dirty = False
        self.matched: deque[int] = deque(maxlen=4096)  # linenos that produced findings
        self._prev: deque[tuple[int, list[Line]]] = deque(maxlen=before)
        self._findings_seen = 0

    # -- feeding ------------------------------------------------------------------
    def feed(self, blob: bytes, lines: list[bytes]) -> None:
        """`lines` are the next complete lines (without \\n); `blob` is them joined,
        each followed by \\n, as LineSplitter returns them. Lines around a trigger go
        to the whole analysis; the others only to its progress reader (all of them in
        a small chunk, the last ones of a big one), which the screen reads."""
        if not lines:
            return
        base = self.lines  # lineno of lines[i] is base + i + 1
        n = len(lines)
        full = self._windows(self.scanner.lines(blob, lines), base, n)
        tail_from = 0 if n <= PROGRESS_ALL else n - max(PROGRESS_TAIL, self.before)
        keep_from = n - self.before
        for i in range(n):
            if i not in full and i < tail_from:
                continue
            lineno = base + i + 1
            parts = self._lines_of(lineno, lines[i])
            if i in full:
                self._feed_full(lineno, parts)
            else:
                for line in parts:
                    self.analysis.feed_progress(line)
            if i >= keep_from:
                self._prev.append((lineno, parts))
        self.lines = base + n

    def _windows(self, hits: list[int], base: int, n: int) -> set[int]:
        """The indexes of the chunk's lines the whole analysis must read: a window open
        from an earlier chunk, and one around each hit. Context lines of the previous
        chunk that a hit needs are fed here (their progress was read already)."""
        full: set[int] = set()
        if self.window_end > base:
            full.update(range(min(n, self.window_end - base)))
        for h in hits:
            lineno = base + h + 1
            if h < self.before:  # context from the previous chunk
                for ln, parts in self._prev:
                    if ln >= lineno - self.before and ln > self.fed_upto:
                        self._feed_full(ln, parts, progress=False)
            self.window_end = max(self.window_end, lineno + self.after)
            full.update(range(max(0, h - self.before), min(n, self.window_end - base)))
        return full

    def feed_final(self, data: bytes) -> None:
        """The unfinished last line once the run is over: always fed (it is how the log
        ends)."""
        if not data:
            return
        self.lines += 1
        self._feed_full(self.lines, self.feed_lines.finish(data))

    def _lines_of(self, lineno: int, raw: bytes) -> list[Line]:
        """The logical lines of one physical line (read once, in line order)."""
        return self.feed_lines.line(raw, lineno)

    def _feed_full(self, lineno: int, parts: list[Line], progress: bool = True) -> None:
        """Feed a line's logical lines to the whole analysis; `progress` False when the
        progress reader has read them already."""
        if lineno <= self.fed_upto:
            return
        if lineno > self.fed_upto + 1 and self.fed_upto:
            self.analysis.gap(self.source)  # skipped lines: no traceback spans the gap
        self.fed_upto = lineno
        for line in parts:
            self.analysis.feed(line, progress=progress)
        self.fed += 1
        findings = self.analysis.matcher.findings
        if len(findings) > self._findings_seen:
            for f in findings[self._findings_seen :]:
                if f.evidence.line is not None:
                    self.matched.append(f.evidence.line)
            self._findings_seen = len(findings)
        self.dirty = True

    @property
    def findings_seen(self) -> int:
        """Findings the live analysis has made so far (grows when a rule fires)."""
        return self._findings_seen

    # -- reporting ----------------------------------------------------------------
    def report(self) -> Report:
        """A report over what was fed so far (`Analysis.report` is pure: the live state
        is left untouched, no copy needed)."""
        return self.analysis.report([self.feed_lines.info()], self.feed_lines.notes)

    def progress(self) -> Progress:
        """Where the run is (phase, step, loss, tok/s, grad norm, step time): read from
        the same structure state the report is made from, so the screen and the report
        agree. Cheap: no copy, no reasoning."""
        return self.analysis.structurer.now()

    def diagnoses(self) -> LiveDiagnoses:
        """Diagnoses that lines of the log support (inferences from the end are left
        for the final triage), best first; clears `dirty`."""
        self.dirty = False
        rep = self.report()
        # what the watcher itself saw (a stall: run.stalled_s) is as live as a line
        live = [
            d
            for d in rep.diagnoses
            if math.isfinite(d.first_seen) or any((e.fact or "").startswith("run.") for e in d.evidence)
        ]
        return LiveDiagnoses(live, rep)
