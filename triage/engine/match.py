"""match: rules against lines (prefilter on literals, then the full regex), then
against exceptions, events, the end state and snapshot facts."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from triage.engine.predicates import all_hold
from triage.engine.rules import Clause, Rule, Unless
from triage.ingest.literals import LinesWith
from triage.ingest.scan import Confirm
from triage.ingest.supersets import native_superset
from triage.model import Confidence, EndState, Event, Evidence, ExceptionInfo, Finding, Line
from triage.structure import root_exception

MAX_FINDINGS_PER_RULE = 200
CONTEXT = 2
CONTEXT_CHARS = 300  # of a line kept as another line's context
WRAP_MIN = 60  # a line this long that goes on in the next one may be a hard-wrapped paste
_BAR_START = re.compile(r"(?:[^|]{0,40}:\s*)?\d{1,3}%\|")  # a tqdm frame drawn over a line


class _Automaton(NamedTuple):
    """The prefilter's native form: one automaton over the lower-cased literals, per
    literal its (order, exact literal or None, targets), and the same literals for a
    batch of lines at once."""

    ac: Any
    entries: list[list[tuple[int, str | None, list[Any]]]]
    batch: LinesWith


class Prefilter:
    """One pass over a line finds which literals it holds.

    With ahocorasick_rs (a core dependency) one automaton over the lower-cased line
    finds every literal at once, overlapping ones too; a case-sensitive literal is then
    checked against the line itself. Without it, a combined alternation answers "any
    literal here?" for the common, healthy line, and only then are the literals tested
    one by one. Either way the targets come out in the same order: the case-sensitive
    literals' first, then the caseless ones', each in the order the rules gave them.
    """

    def __init__(self, literals: dict[str, list[Any]], icase_literals: dict[str, list[Any]]) -> None:
        self.literals = literals
        self.icase = icase_literals
        parts = sorted(literals, key=len, reverse=True)
        iparts = sorted(icase_literals, key=len, reverse=True)
        self._any = re.compile("|".join(map(re.escape, parts))) if parts else None
        self._iany = re.compile("|".join(map(re.escape, iparts)), re.IGNORECASE) if iparts else None
        self._ilow = {k.lower(): v for k, v in icase_literals.items()}
        self._ac = self._automaton()

    def _automaton(self) -> _Automaton | None:
        """The automaton of every literal, or None without ahocorasick-rs (or literals)."""
        try:
            import ahocorasick_rs
        except ImportError:  # the re alternation below does the same, slower
            return None
        entries: dict[str, list[tuple[int, str | None, list[Any]]]] = {}
        order = 0
        for lit, targets in self.literals.items():
            entries.setdefault(lit.lower(), []).append((order, lit, targets))
            order += 1
        for low, targets in self._ilow.items():
            entries.setdefault(low, []).append((order, None, targets))
            order += 1
        keys = [k for k in entries if k]
        if not keys:
            return None
        return _Automaton(
            ahocorasick_rs.AhoCorasick(keys), [entries[k] for k in keys], LinesWith(keys, caseless=True)
        )

    def batch(self, texts: list[str]) -> dict[int, list[Any]] | None:
        """`hits` of each line of a batch that has any, by index (None: ask each line)."""
        if self._ac is None:
            return None
        found = self._ac.batch.of(texts)
        out = {}
        for i, lits in found.items():
            hits = self._pick(lits, texts[i])
            if hits:
                out[i] = hits
        return out

    def hits(self, text: str) -> list[Any]:
        """The targets of every literal in `text`."""
        if self._ac is not None:
            # only which literals occur matters, not where: offsets in the lower-cased
            # line (which may differ in length) are never used
            found = {i for i, _s, _e in self._ac.ac.find_matches_as_indexes(text.lower(), overlapping=True)}
            return self._pick(found, text) if found else []
        return self._scan(text)

    def _pick(self, found: set[int], text: str) -> list[Any]:
        """The targets of the automaton's literals `found` in `text`, in rule order (a
        case-sensitive literal only where it occurs as written)."""
        assert self._ac is not None  # only called with the automaton's hits
        entries = self._ac.entries
        picked = [
            (order, targets)
            for i in found
            for order, exact, targets in entries[i]
            if exact is None or exact in text
        ]
        picked.sort(key=lambda x: x[0])
        return [t for _o, targets in picked for t in targets]

    def _scan(self, text: str) -> list[Any]:
        """`hits` without ahocorasick-rs: the alternations, then each literal."""
        out: list[Any] = []
        if self._any is not None and self._any.search(text):
            for lit, targets in self.literals.items():
                if lit in text:
                    out.extend(targets)
        if self._iany is not None and self._iany.search(text):
            low = text.lower()
            for lit, targets in self._ilow.items():
                if lit in low:
                    out.extend(targets)
        return out

    @property
    def patterns(self) -> list[str]:
        return list(self.literals) + list(self.icase)


_PREFILTERS: dict[tuple[int, ...], tuple[tuple[Rule, ...], Prefilter]] = {}


def prefilter_of(rules: list[Rule]) -> Prefilter:
    """The prefilter of the rules' line clauses and log-scope unlesses, built once per
    set of rules (its automata cost milliseconds, more than a small log takes to read;
    it keeps no state, so every analysis of those rules shares it)."""
    key = tuple(map(id, rules))
    got = _PREFILTERS.get(key)
    if got is not None:
        return got[1]
    lits: dict[str, list[Any]] = {}
    ilits: dict[str, list[Any]] = {}
    for r in rules:
        for c in r.clauses:
            if c.kind in ("line", "code"):
                for lit in c.literals:
                    (ilits if c.icase else lits).setdefault(lit, []).append(c)
        for u in r.unless:
            if u.scope == "log":
                for lit in u.literals:
                    (ilits if u.icase else lits).setdefault(lit, []).append((r.id, u))
    pre = Prefilter(lits, ilits)
    if len(_PREFILTERS) >= 8:  # a few rule sets at most (tests load their own)
        _PREFILTERS.pop(next(iter(_PREFILTERS)))
    _PREFILTERS[key] = (tuple(rules), pre)  # the rules held: their ids stay theirs
    return pre


class Found:
    """Findings, one per rule and log line (two clauses of a rule on the same line, the
    watchdog's words and its whole message, are one occurrence: the surer one kept),
    counted per rule."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.count: dict[str, int] = {}
        self._at: dict[tuple[str, str | None, int], int] = {}  # (rule, source, line) -> finding

    def copy(self) -> Found:
        """An independent copy (the findings themselves are immutable and shared)."""
        out = Found()
        out.findings = list(self.findings)
        out.count = dict(self.count)
        out._at = dict(self._at)
        return out

    def full(self, rule_id: str) -> bool:
        """The rule has made as many findings as one rule may."""
        return self.count.get(rule_id, 0) >= MAX_FINDINGS_PER_RULE

    def add(self, f: Finding) -> None:
        at = (f.rule_id, f.evidence.source, f.evidence.line) if f.evidence.line is not None else None
        if at is not None:
            i = self._at.get(at)
            if i is not None:
                if f.confidence > self.findings[i].confidence:
                    self.findings[i] = f
                return
            self._at[at] = len(self.findings)
        self.count[f.rule_id] = self.count.get(f.rule_id, 0) + 1
        self.findings.append(f)


class Matcher:
    """Feed every line; then `finish` with the structure's results and the facts
    (`finish` is pure: lines may be fed on after it)."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = {r.id: r for r in rules}
        self.prefilter = prefilter_of(rules)
        # lines kept per source: the evidence's context, and as far back as a multi-line
        # clause looks for its companion
        self._window = max(
            [CONTEXT] + [c.near.within for r in rules for c in r.clauses if c.near is not None]
        )
        self.found = Found()  # the findings of the lines fed so far
        self._suppressed: set[str] = set()
        self._ctx: dict[str, deque[str]] = {}
        # per source: clauses whose pattern the last line ends inside (cut-aware matching)
        self._cut_pending: dict[str, list[tuple[Clause, Line, tuple[str, ...], Any]]] = {}
        self.candidate_lines = 0

    @property
    def findings(self) -> list[Finding]:
        """The findings of the lines fed so far (line clauses only)."""
        return self.found.findings

    def scan_literals(self) -> tuple[list[str], list[str], list[Confirm]]:
        """What the fast path's raw-bytes scan looks for: plain literals (case-sensitive,
        caseless), and the literals whose hits are confirmed natively by the native
        superset of their clause's regex. A regex with no native form keeps its literals
        plain, so the scan never finds fewer lines than the prefilter would."""
        plain: set[str] = set()
        iplain: set[str] = set()
        confirm: list[Confirm] = []
        for r in self.rules.values():
            items: list[tuple[tuple[str, ...], bool, Any]] = [
                (c.literals, c.icase, c.pattern) for c in r.clauses if c.kind in ("line", "code")
            ]
            items += [(u.literals, u.icase, u.pattern) for u in r.unless if u.scope == "log"]
            for lits, icase, pattern in items:
                native = native_superset(pattern.pattern) if pattern is not None else None
                if native is None:
                    (iplain if icase else plain).update(lits)
                else:
                    confirm.append(Confirm(tuple(lits), icase, native))
        return sorted(plain), sorted(iplain), confirm

    def feed(
        self, line: Line, phase: str | None = None, *, quoted: bool = False, hits: list[Any] | None = None
    ) -> None:
        """Match one line; `phase` is the phase the log is in (for clauses that need one);
        `quoted`: the line is source code a traceback quotes, which no line clause reads;
        `hits`: the prefilter's for the line, where a batch found them (`Prefilter.batch`)."""
        text = line.text
        if self._cut_pending:
            self._resolve_cut(line.source, line)
        ctx = self._ctx.get(line.source)
        if ctx is None:
            ctx = self._ctx[line.source] = deque(maxlen=self._window)
        if quoted or not text:
            hits = []
        elif hits is None:
            hits = self.prefilter.hits(text)
        if hits:
            self.candidate_lines += 1
            seen: set[int] = set()
            for target in hits:
                if id(target) in seen:
                    continue
                seen.add(id(target))
                if isinstance(target, tuple):  # a log-scope `unless`
                    rid, u = target
                    if u.search(text):
                        self._suppressed.add(rid)
                    continue
                self._line_clause(target, line, tuple(ctx), phase)
        if text.strip():
            ctx.append(text[:CONTEXT_CHARS])

    def note(self, line: Line) -> None:
        """`feed` of a line the prefilter found no literal on (hits []): it only goes into
        its source's context window (and resolves a cut line waiting for it)."""
        if self._cut_pending:
            self._resolve_cut(line.source, line)
        ctx = self._ctx.get(line.source)
        if ctx is None:
            ctx = self._ctx[line.source] = deque(maxlen=self._window)
        text = line.text
        if text.strip():
            ctx.append(text[:CONTEXT_CHARS])

    def _line_clause(self, c: Clause, line: Line, ctx: tuple[str, ...], phase: str | None) -> None:
        recent, ctx = ctx, ctx[-CONTEXT:]
        if self.found.full(c.rule_id):
            return
        if c.phases and phase not in c.phases:
            return
        m = c.search(line.text)
        if not m:
            # cut-aware: a line that stops inside a known message matches by a long enough
            # prefix, once the next line shows it really was cut (see _resolve_cut)
            cut = c.search_cut(line.text)
            if cut is not None:
                self._cut_pending.setdefault(line.source, []).append((c, line, ctx, cut))
            return
        rule = self.rules[c.rule_id]
        if _unless_line(rule.unless, line.text):
            return
        if c.kind == "code" or c.near is not None:
            self._code_or_near(c, line, ctx, recent, m)
            return
        conf = Confidence.POSSIBLE if phase is not None and phase in rule.hint_in_phase else c.confidence
        self.found.add(
            Finding(
                c.rule_id,
                conf,
                Evidence.from_line(line, ctx),
                _order(line),
                c.name or f"match[{c.index}]",
                line.ts,
                "line",
                _groups(m),
            )
        )

    def _code_or_near(
        self, c: Clause, line: Line, ctx: tuple[str, ...], recent: tuple[str, ...], m: Any
    ) -> None:
        """A code clause fires for the codes it owns in its table, no more sure than the
        code says, and its evidence names what the code means; a multi-line clause fires
        only with its companion line just before."""
        if c.near is not None and not c.near.found(recent):
            return
        conf, text, groups = c.confidence, line.text, _groups(m)
        if c.table is not None:
            try:
                code = int(m.group("code"))
            except (IndexError, TypeError, ValueError):
                return
            if not c.owns(code):
                return  # another rule's code (79 is gpu-fell-off-bus's, not xid-error's)
            cap = c.table.cap(code)
            conf = conf if cap is None else min(conf, cap)
            text = f"{text}  [{c.table.describe(code)}]"
            row = c.table.rows.get(code, {})
            groups += (("code_name", str(row.get("name", code))),)
        ev = Evidence(text=text, source=line.source, line=line.lineno, rank=line.rank, context=ctx)
        self.found.add(
            Finding(c.rule_id, conf, ev, _order(line), c.name or f"match[{c.index}]", line.ts, "line", groups)
        )

    def _resolve_cut(self, source: str, nxt: Line) -> None:
        """Accept the cut matches of `source`'s previous line when it was cut: a progress
        bar was drawn over it, or a long line goes on in the next one (a hard-wrapped
        terminal copy). At most `likely`: the rest of the message is not there to prove
        it. (A source that ends on such a line: `finish`.)"""
        pending = self._cut_pending.pop(source, None)
        if not pending:
            return
        if _BAR_START.match(nxt.text.lstrip()) is None:
            # not a bar drawn over it: a hard-wrapped paste, when the two lines joined are
            # the whole message, and it starts on the cut line (a message wholly on the
            # next line is that line's own)
            pending = [
                (c, line, ctx, m2)
                for c, line, ctx, _ in pending
                if len(line.text) >= WRAP_MIN
                and (m2 := c.search(f"{line.text} {nxt.text.lstrip()}")) is not None
                and m2.start() < len(line.text)
            ]
        self._add_cut(self.found, pending)

    def _add_cut(self, found: Found, pending: list[tuple[Clause, Line, tuple[str, ...], Any]]) -> None:
        for c, line, ctx, m in pending:
            if found.full(c.rule_id):
                continue
            if _unless_line(self.rules[c.rule_id].unless, line.text):
                continue
            found.add(
                Finding(
                    c.rule_id,
                    min(c.confidence, Confidence.LIKELY),
                    Evidence.from_line(line, ctx),
                    _order(line),
                    f"{c.name or f'match[{c.index}]'} (cut)",
                    line.ts,
                    "line",
                    _groups(m),
                )
            )

    def finish(
        self,
        exceptions: list[ExceptionInfo],
        events: list[Event],
        end: EndState,
        facts: Mapping[str, Any],
        cut_sources: Iterable[str] = (),
        secondary: set[int] | frozenset[int] = frozenset(),
    ) -> list[Finding]:
        """Match the structured clauses and return all findings (minus suppressed rules).
        `cut_sources`: the sources whose last line stops without a newline; `secondary`:
        errors a launcher's report lists as other failures (structure.root_exception).
        Pure: the findings are made in a copy, the matcher is left as it was."""
        found = self.found.copy()
        ends_cut = set(cut_sources)
        for source, pending in self._cut_pending.items():
            if source in ends_cut:  # the source ends on a line cut inside a message
                self._add_cut(found, pending)
        root = root_exception(exceptions, secondary)
        for rule in self.rules.values():
            for c in rule.clauses:
                if c.kind == "root-error":
                    self._root_error(found, rule, c, root, end)
                elif c.kind == "exception":
                    self._exceptions(found, rule, c, exceptions)
                elif c.kind == "event":
                    self._events(found, c, events)
                elif c.kind == "end":
                    self._end(found, c, end, facts)
                elif c.kind == "fact" and end.kind != "clean-exit" and all_hold(c.when, facts):
                    self._fact(found, c, facts)
        frames: dict[tuple[str | None, int | None], tuple[str, ...]] = {
            (e.line.source, e.line.lineno): e.frames for e in exceptions if e.frames
        }
        kept = [f for f in found.findings if f.rule_id not in self._suppressed]
        return [f for f in kept if not self._raised_from(f, frames)]

    @staticmethod
    def _fact(found: Found, c: Clause, facts: Mapping[str, Any]) -> None:
        """A fact clause that holds: its finding names the facts' values."""
        names = ", ".join(f"{p.fact} = {_show(facts.get(p.fact))}" for p in c.when)
        found.add(
            Finding(
                c.rule_id,
                c.confidence,
                Evidence(text=names, source="snapshot", fact=c.when[0].fact),
                float("inf"),
                c.name or "fact",
                None,
                "fact",
            )
        )

    def _raised_from(self, f: Finding, frames: dict[tuple[str | None, int | None], tuple[str, ...]]) -> bool:
        """An `unless` with scope "frames": the exception on the finding's line was raised
        from a frame the rule leaves to another (e.g. ENOSPC inside torch.save)."""
        rule = self.rules[f.rule_id]
        fr = frames.get((f.evidence.source, f.evidence.line))
        if not fr:
            return False
        return any(
            u.scope == "frames"
            and any(
                any((lit.lower() in x.lower()) if u.icase else (lit in x) for lit in u.literals)
                and u.search(x)
                for x in fr
            )
            for u in rule.unless
        )

    def _exceptions(self, found: Found, rule: Rule, c: Clause, exceptions: list[ExceptionInfo]) -> None:
        for e in exceptions:
            full = f"{e.type}: {e.message}"
            if c.literals and not any(
                (lit.lower() in full.lower()) if c.icase else (lit in full) for lit in c.literals
            ):
                continue
            if c.type_pattern is not None and not c.type_pattern.search(e.type):
                continue
            if c.pattern is not None and not c.search(e.message):
                continue
            if c.raised_in is not None and not (e.frames and c.raised_in.search(e.frames[-1])):
                continue
            frames_re = c.frames_pattern
            if frames_re is not None and not any(frames_re.search(f) for f in e.all_kept_frames):
                continue
            if _unless_line(rule.unless, full):
                continue
            found.add(
                Finding(
                    c.rule_id,
                    c.confidence,
                    Evidence.from_exception(e),
                    _order(e.line),
                    c.name or f"match[{c.index}]",
                    e.line.ts,
                    "exception",
                )
            )

    def _root_error(
        self, found: Found, rule: Rule, c: Clause, root: ExceptionInfo | None, end: EndState
    ) -> None:
        if root is None or (c.end_states and end.kind not in c.end_states):
            return
        if not root.has_traceback and end.kind not in ("traceback", "error"):
            return  # an error named in passing, with the run going on after it
        if c.type_pattern is not None and not c.type_pattern.search(root.type):
            return
        if _unless_line(rule.unless, f"{root.type}: {root.message}"):
            return
        # the innermost frames say where it was raised
        ctx = tuple(root.frames[-3:])
        found.add(
            Finding(
                c.rule_id,
                c.confidence,
                Evidence.from_exception(root, ctx),
                _order(root.line),
                c.name or f"match[{c.index}]",
                root.line.ts,
                "exception",
            )
        )

    @staticmethod
    def _events(found: Found, c: Clause, events: list[Event]) -> None:
        for ev in events:
            if ev.kind != c.event:
                continue
            if all(ev.data.get(k) in vals for k, vals in c.where.items()):
                text = ev.line.text
                detail = ", ".join(
                    f"{k}={ev.data.get(k)}"
                    for k in ("root_rank", "exitcode", "signal")
                    if ev.data.get(k) is not None
                )
                ev_line = Evidence(
                    text=f"{text}  [{detail}]" if detail else text,
                    source=ev.line.source,
                    line=ev.line.lineno,
                    rank=ev.data.get("root_rank", ev.line.rank),
                )
                found.add(
                    Finding(
                        c.rule_id,
                        c.confidence,
                        ev_line,
                        _order(ev.line),
                        c.name or f"match[{c.index}]",
                        ev.line.ts,
                        "event",
                    )
                )

    @staticmethod
    def _end(found: Found, c: Clause, end: EndState, facts: Mapping[str, Any]) -> None:
        if end.kind not in c.end_states:
            return
        if c.last_phases and end.last_phase not in c.last_phases:
            return
        if c.when and not all_hold(c.when, facts):
            return
        where = f" in phase {end.last_phase}" if end.last_phase else ""
        text = f"log ends ({end.kind}{where}): {end.last_text[-120:]}"
        found.add(
            Finding(
                c.rule_id,
                c.confidence,
                Evidence(text=text, source=end.source, line=end.line),
                float("inf"),
                c.name or f"match[{c.index}]",
                None,
                "end",
            )
        )


def _unless_line(unless: tuple[Unless, ...], text: str) -> bool:
    for u in unless:
        if u.scope != "line":
            continue  # "log" is checked as lines stream by, "frames" after structure
        hay = text.lower() if u.icase else text
        if any((lit.lower() if u.icase else lit) in hay for lit in u.literals) and u.search(text):
            return True
    return False


def _groups(m: Any) -> tuple[tuple[str, str], ...]:
    return tuple((k, v) for k, v in m.groupdict().items() if v)


def _show(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(str(x) for x in v[:8]) + ("...]" if len(v) > 8 else "]")
    return str(v)


def _order(line: Line) -> float:
    return float(line.seq)
