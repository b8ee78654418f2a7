"""Live diagnosis over a stream of lines, cheap enough for 1 MB/s of output.

A full `Analysis` normalises, structures and matches every line: tens of microseconds
per line, far too much for a busy run. Most training output (step lines) can never
fire a rule, so the live layer first scans each chunk for *triggers* with `bytes.find`
(C speed): the rules' literals (anything a line clause or an exception clause needs)
and the structure stage's markers (tracebacks, C++ traces, torchrun reports). Only the
lines around a trigger (a few before, a window after, so a traceback's frames and a
torchrun report's fields come along) are fed to one persistent `Analysis`. A report
is taken from a deep copy, because `Analysis.report` finishes (mutates) its state.

Diagnoses inferred only from how the log ends (cut off, no terminal event) are left
out while the run is alive: a live log always "ends" in the middle. The full triage of
the capture when the run ends has the last word.
"""

from __future__ import annotations

import copy
import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from triage.engine import Analysis
from triage.engine.rules import Rule
from triage.ingest.normalize import SourceState, normalize
from triage.model import Diagnosis, Line, Report, SourceInfo
from triage.structure import tables as T
from triage.watch.follow import cap_line

BEFORE = 2  # lines before a trigger: the matcher's context, a chain marker
AFTER = 60  # lines after: a traceback's frames and message, a torchrun report's fields

# What the structure stage needs to see to build exceptions and events.
STRUCTURE_MARKERS = (
    "Traceback (most recent call last)", "Error", "Exception", "Interrupt", "SystemExit",
    "exitcode", "Root Cause", "terminate called", "what():",
)


def trigger_literals(rules: Iterable[Rule]) -> tuple[list[bytes], list[bytes]]:
    """(case-sensitive, lower-cased case-insensitive) byte literals whose presence in a
    line may matter to some rule. A literal that contains a shorter one is dropped: the
    shorter one's hits already cover it."""
    exact: set[str] = set(STRUCTURE_MARKERS)
    icase: set[str] = set()
    for r in rules:
        for c in r.clauses:
            if c.literals and c.kind in ("line", "exception"):
                (icase if c.icase else exact).update(c.literals)
        for u in r.unless:
            if u.scope == "log":
                (icase if u.icase else exact).update(u.literals)
    low = {s.lower() for s in icase}
    return _minimal(exact), _minimal(low)


def _minimal(lits: set[str]) -> list[bytes]:
    enc = sorted({s.encode() for s in lits if s}, key=len)
    keep: list[bytes] = []
    for s in enc:
        if not any(k in s for k in keep):
            keep.append(s)
    return keep


def find_hits(blob: bytes, literals: list[bytes]) -> list[int]:
    """Byte offsets of every literal occurrence in `blob` (unordered, may repeat lines)."""
    out: list[int] = []
    find = blob.find
    for lit in literals:
        pos = find(lit)
        while pos >= 0:
            out.append(pos)
            nl = blob.find(b"\n", pos)
            if nl < 0:
                break
            pos = find(lit, nl + 1)  # one hit per line and literal is enough
    return out


def hit_lines(blob: bytes, offsets: list[int]) -> list[int]:
    """0-based line indexes of byte offsets in a blob of lines."""
    out: list[int] = []
    last_off = 0
    idx = 0
    for off in sorted(set(offsets)):
        idx += blob.count(b"\n", last_off, off)
        last_off = off
        if not out or out[-1] != idx:
            out.append(idx)
    return out


@dataclass
class LiveDiagnoses:
    """The current live view: diagnoses inferred from lines, best first."""

    diagnoses: list[Diagnosis] = field(default_factory=list)
    report: Report | None = None


class LiveTriage:
    """Feed consecutive chunks of complete lines; ask `diagnoses()` when `dirty`."""

    def __init__(self, rules: list[Rule], source: str, facts: dict[str, Any] | None = None,
                 *, before: int = BEFORE, after: int = AFTER) -> None:
        self.rules = rules
        self.source = source
        self.facts = dict(facts or {})
        self.before = before
        self.after = after
        self.analysis = Analysis(rules, self.facts)
        self.exact, self.icase = trigger_literals(rules)
        self.state = SourceState()
        self.lines = 0  # physical lines seen (complete ones)
        self.fed_upto = 0  # the last lineno fed to the analysis
        self.window_end = 0  # feed every line up to here
        self.seq = 0
        self.fed = 0  # lines fed to the analysis (for the bench)
        self.dirty = False
        self.matched: deque[int] = deque(maxlen=4096)  # linenos that produced findings
        self._prev: deque[tuple[int, bytes]] = deque(maxlen=before)
        self._findings_seen = 0

    # -- feeding ------------------------------------------------------------------
    def feed(self, blob: bytes, lines: list[bytes]) -> None:
        """`lines` are the next complete lines (without \\n); `blob` is them joined,
        each followed by \\n, as LineSplitter returns them."""
        if not lines:
            return
        base = self.lines  # lineno of lines[i] is base + i + 1
        offsets = find_hits(blob, self.exact)
        if self.icase:
            offsets += find_hits(blob.lower(), self.icase)
        hits = hit_lines(blob, offsets) if offsets else []
        n = len(lines)
        # a window opened in an earlier chunk continues here
        if self.window_end > base:
            self._feed_range(lines, base, 0, min(n, self.window_end - base))
        for h in hits:
            lineno = base + h + 1
            if h < self.before:  # context from the previous chunk
                for ln, raw in self._prev:
                    if ln >= lineno - self.before and ln > self.fed_upto:
                        self._feed_one(ln, raw)
            start = max(0, h - self.before)
            self.window_end = max(self.window_end, lineno + self.after)
            self._feed_range(lines, base, start, min(n, self.window_end - base))
        self.lines = base + n
        for i in range(max(0, n - self.before), n):
            self._prev.append((base + i + 1, lines[i]))

    def feed_final(self, data: bytes) -> None:
        """The unfinished last line once the run is over: always fed (it is how the log
        ends)."""
        if not data:
            return
        self.lines += 1
        self._feed_one(self.lines, data)

    def _feed_range(self, lines: list[bytes], base: int, start: int, stop: int) -> None:
        for i in range(max(start, self.fed_upto - base), stop):
            self._feed_one(base + i + 1, lines[i])

    def _feed_one(self, lineno: int, raw: bytes) -> None:
        if lineno <= self.fed_upto:
            return
        self.fed_upto = lineno
        for p in normalize(cap_line(raw), self.state):
            self.seq += 1
            self.analysis.feed(Line(self.source, lineno, p.text, p.rank, self.seq, p.ts))
        self.fed += 1
        findings = self.analysis.matcher.findings
        if len(findings) > self._findings_seen:
            for f in findings[self._findings_seen:]:
                if f.evidence.line is not None:
                    self.matched.append(f.evidence.line)
            self._findings_seen = len(findings)
        self.dirty = True

    # -- reporting ----------------------------------------------------------------
    def report(self) -> Report:
        """A report over what was fed so far, leaving the live state untouched."""
        a = self.analysis
        # rules and the prefilter are immutable and large: share them, copy the rest
        memo: dict[int, Any] = {id(a.rules): a.rules, id(a.matcher.rules): a.matcher.rules,
                                id(a.matcher.prefilter): a.matcher.prefilter}
        for r in a.rules:
            memo[id(r)] = r
        snap: Analysis = copy.deepcopy(a, memo)
        src = SourceInfo(self.source, self.lines, tuple(sorted(self.state.seen_ranks)))
        return snap.report([src])

    def diagnoses(self) -> LiveDiagnoses:
        """Diagnoses that lines of the log support (inferences from the end are left
        for the final triage), best first; clears `dirty`."""
        self.dirty = False
        rep = self.report()
        live = [d for d in rep.diagnoses if math.isfinite(d.first_seen)]
        return LiveDiagnoses(live, rep)


def metrics_of(text: str) -> tuple[int | None, float | None, float | None]:
    """(step, loss, tok/s) read from one line with the structure stage's regexes."""
    step = loss = toks = None
    m = T.STEP_RE.search(text)
    if m:
        step = int(m.group(1))
    ml = T.LOSS_RE.search(text) if "oss" in text else None
    if ml:
        try:
            loss = float(ml.group(1))
        except ValueError:
            loss = None
    mt = T.TOKS_RE.search(text) if "/s" in text or "per_s" in text else None
    if mt:
        try:
            toks = float(mt.group(1))
        except ValueError:
            toks = None
    return step, loss, toks


def phase_of(text: str) -> str | None:
    """The phase a line marks (loading models, compiling, step N, ...), if any."""
    for phase, rx in T.PHASES:
        if rx.search(text):
            return phase
    return None
