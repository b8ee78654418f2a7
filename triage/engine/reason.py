"""reason: findings -> ranked diagnoses.

Root cause before consequence (rules declare what they explain), the earliest failure
across ranks first, confidence from the strongest clause and then from evidence, and
honest limits: an inference from a cut-off log is never `confirmed`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from triage.engine.predicates import all_hold
from triage.engine.rules import Rule
from triage.model import Confidence, Diagnosis, EndState, Evidence, Finding, RuledOut, Unknown

BASE_SCORE = {Confidence.CONFIRMED: 0.9, Confidence.LIKELY: 0.65, Confidence.POSSIBLE: 0.35}
MAX_EVIDENCE = 5


@dataclass
class _Cand:
    rule: Rule
    findings: list[Finding]
    confidence: Confidence
    evidence: list[Evidence] = field(default_factory=list)
    counter: list[Evidence] = field(default_factory=list)
    role: str = "root-cause"
    explained_by: str | None = None
    # (when its first finding was seen: its time, else its read order; that finding's read
    # order): lines of the same second keep the order they were written in
    seen: tuple[float, float] = (0.0, 0.0)
    inferred: bool = False  # only end-state or fact clauses fired: nothing in the log says so
    facts: Mapping[str, Any] = field(default_factory=dict)
    severity: str = "error"  # the rule's, or "error" when a clause that escalates fired


def diagnose(
    findings: list[Finding],
    rules: Mapping[str, Rule],
    end: EndState,
    facts: Mapping[str, Any],
    progress: Mapping[tuple[str, int | None], list[int]] | None = None,
) -> tuple[list[Diagnosis], list[RuledOut]]:
    """Rank the findings. `progress`: per (source, rank), the read order of its last loss
    lines (structure), to tell an error the run went on after."""
    cands = _group(findings, rules)
    for c in cands.values():
        # what the first matching line named ({match:module}) fills checks like a fact
        named = next((dict(f.groups) for f in c.findings if f.groups), {})
        c.facts = {**facts, **{f"match:{k}": v for k, v in named.items()}}
    ruled_out: list[RuledOut] = []
    recurrence = facts.get(RECURRENCE_FACT)
    for c in list(cands.values()):
        if _apply_evidence(c, facts, end, ruled_out):
            if isinstance(recurrence, Mapping) and (why := _recurred(c, recurrence)):
                ruled_out[-1] = RuledOut(c.rule.id, f"{why}; and now {ruled_out[-1].because}")
            del cands[c.rule.id]
        elif (
            isinstance(recurrence, Mapping)
            and not _supported(c, facts)
            and (c.confidence < Confidence.CONFIRMED or c.inferred)
            and (why := _recurred(c, recurrence))
        ):
            ruled_out.append(RuledOut(c.rule.id, why))
            del cands[c.rule.id]
        elif facts.get("run.exit_status") == 0 and end.kind != "clean-exit":
            # the watcher saw the process exit 0: not a crash, whatever the log's end says
            if c.inferred:
                ruled_out.append(RuledOut(c.rule.id, EXIT_0))
                del cands[c.rule.id]
            else:
                _handled(c, end, EXIT_0)
        elif end.kind == "clean-exit":
            _handled(c, end)
        elif end.kind not in ("traceback", "error") and progress:
            _went_on(c, progress)
    if isinstance(recurrence, Mapping):
        _suspected_before(recurrence, rules, cands, ruled_out)
    _fallbacks(cands)
    _explain(cands)
    ordered = sorted(cands.values(), key=_sort_key)
    return [_to_diagnosis(c) for c in ordered], ruled_out


def _group(findings: list[Finding], rules: Mapping[str, Rule]) -> dict[str, _Cand]:
    by: dict[str, list[Finding]] = {}
    for f in findings:
        by.setdefault(f.rule_id, []).append(f)
    all_ts = all(f.ts is not None for f in findings if f.kind not in ("end", "fact"))
    cands: dict[str, _Cand] = {}
    for rid, fs in by.items():

        def when(f: Finding) -> float:
            if f.kind in ("end", "fact"):
                return float("inf")
            return f.ts if all_ts and f.ts is not None else f.order

        fs.sort(key=when)
        conf = max(f.confidence for f in fs)
        inferred = all(f.kind in ("end", "fact") for f in fs)
        cands[rid] = _Cand(
            rules[rid],
            fs,
            conf,
            _pick_evidence(_inner_first(fs, rules[rid])),
            seen=(when(fs[0]), fs[0].order),
            inferred=inferred,
            severity=_severity(rules[rid], fs),
        )
    return cands


def _severity(rule: Rule, fs: list[Finding]) -> str:
    names = {f.clause for f in fs}
    for c in rule.clauses:
        if c.severity == "error" and (c.name or f"match[{c.index}]") in names:
            return "error"
    return rule.severity


LOG_KINDS = ("line", "exception")  # findings that point at a line the log holds


def _inner_first(fs: list[Finding], rule: Rule) -> list[Finding]:
    """The findings in time order, except that a wrapper clause's lines (a header or a
    re-raise that only carries the error) come after the rule's other log lines, when it
    has any: the error itself leads the evidence, not what wraps it."""
    wrappers = {c.name or f"match[{c.index}]" for c in rule.clauses if c.wrapper}
    if not wrappers:
        return fs

    def wraps(f: Finding) -> bool:
        return f.clause.removesuffix(" (cut)") in wrappers

    lead = [f for f in fs if f.kind in LOG_KINDS and not wraps(f)]
    if not lead or len(lead) == len(fs):
        return fs
    led = {id(f) for f in lead}
    return lead + [f for f in fs if id(f) not in led]


def _pick_evidence(fs: list[Finding]) -> list[Evidence]:
    """The first occurrence, then one per other rank, then later lines: at most 5."""
    out: list[Evidence] = []
    ranks: set[int | None] = set()
    for f in fs:
        if f.evidence.rank not in ranks:
            ranks.add(f.evidence.rank)
            out.append(f.evidence)
        if len(out) >= MAX_EVIDENCE:
            return out
    for f in fs:
        if len(out) >= MAX_EVIDENCE:
            break
        if f.evidence not in out:
            out.append(f.evidence)
    return out


def _apply_evidence(c: _Cand, facts: Mapping[str, Any], end: EndState, ruled_out: list[RuledOut]) -> bool:
    """Let snapshot facts confirm, support, weaken or rule out; True when ruled out."""
    for ev in c.rule.evidence:
        if not all_hold(ev.when, facts):
            continue
        because = fill_facts(ev.because, facts)
        fact_ev = Evidence(text=because, source="snapshot", fact=ev.when[0].fact)
        if ev.effect == "rule_out":
            # the log's own definitive message outranks a snapshot taken later
            if c.confidence < Confidence.CONFIRMED or c.inferred:
                ruled_out.append(RuledOut(c.rule.id, because))
                return True
            c.counter.append(fact_ev)
        elif ev.effect == "confirm":
            c.confidence = Confidence.CONFIRMED
            c.evidence.insert(0, fact_ev)
            c.inferred = False
        elif ev.effect == "support":
            c.confidence = Confidence(min(Confidence.CONFIRMED, c.confidence + 1))
            c.evidence.append(fact_ev)
        elif ev.effect == "note":
            c.evidence.append(fact_ev)  # shown, confidence unchanged
        elif ev.effect == "weaken":
            c.confidence = Confidence(max(Confidence.POSSIBLE, c.confidence - 1))
            c.counter.append(fact_ev)
    if c.inferred and end.truncated and c.confidence > Confidence.LIKELY:
        c.confidence = Confidence.LIKELY  # a cut-off log never confirms an inference
    return False


# The crash history's finding, as data (triage.history builds it; the engine knows no
# store): this run died with the same fingerprint before, and these facts differ between
# that crash and this one. {"previous": "crash #3 (2026-12-01 20:01 UTC, node-17)",
# "current": "this crash (...)", "fingerprint": "end-1a2b...", "changed": {fact: [old, new]},
# "suspected": [the signatures the earlier crash was diagnosed with]}
RECURRENCE_FACT = "history.recurrence"
# Facts that describe the crash itself, not the run's preconditions.
_PER_CRASH = ("log.", "run.")


def depends_on(rule: Rule) -> list[str]:
    """The facts a hypothesis depends on: those its evidence and its clauses test."""
    names: list[str] = []
    for preds in [ev.when for ev in rule.evidence] + [c.when for c in rule.clauses]:
        names += [p.fact for p in preds if not p.fact.startswith(_PER_CRASH)]
    return list(dict.fromkeys(names))


def _supported(c: _Cand, facts: Mapping[str, Any]) -> bool:
    """This crash's own evidence confirms or supports the hypothesis: a changed fact
    that now speaks for it (a kernel log that gained an OOM kill) rules nothing out."""
    return any(ev.effect in ("confirm", "support") and all_hold(ev.when, facts) for ev in c.rule.evidence)


def _suspected_before(
    recurrence: Mapping[str, Any],
    rules: Mapping[str, Rule],
    cands: Mapping[str, _Cand],
    ruled_out: list[RuledOut],
) -> None:
    """A hypothesis of the earlier crash that no longer even fires, because what it
    depends on changed (the cache is warm now), is ruled out by name too: the run died
    the same way without its precondition."""
    done = {x.signature for x in ruled_out}
    for sig in recurrence.get("suspected") or ():
        rule = rules.get(sig)
        if rule is None or sig in cands or sig in done or rule.fallback:
            continue
        why = _recurred(rule, recurrence)
        if why:
            ruled_out.append(RuledOut(sig, f"suspected in the earlier crash; {why}"))


def _recurred(c: _Cand | Rule, recurrence: Mapping[str, Any]) -> str:
    """Why the same failure after a change of what the hypothesis depends on rules it
    out, naming both crashes and the facts; "" when none of its facts changed."""
    changed = recurrence.get("changed") or {}
    rule = c.rule if isinstance(c, _Cand) else c
    # what was installed or swapped reads first (package.accelerate), derived facts after
    hit = sorted((f for f in depends_on(rule) if f in changed), key=_fact_order)
    if not hit:
        return ""
    shown = "; ".join(f"{f}: {_shown(changed[f][0])} -> {_shown(changed[f][1])}" for f in hit[:3])
    more = f"; {len(hit) - 3} more" if len(hit) > 3 else ""
    fp = recurrence.get("fingerprint")
    return (
        f"the run died the same way again after what it depends on changed ({shown}{more}): "
        f"{recurrence.get('previous', 'the last crash')} and "
        f"{recurrence.get('current', 'this crash')} have the same fingerprint"
        f"{f' {fp}' if fp else ''}"
    )


FACT_ORDER = ("package.", "torch.", "installed.", "inductor_cache.", "gpu.", "driver.")


def _fact_order(name: str) -> int:
    return next((i for i, p in enumerate(FACT_ORDER) if name.startswith(p)), len(FACT_ORDER))


def _shown(v: Any) -> str:
    if v is None:
        return "absent"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, list):
        text = ", ".join(str(x) for x in v)
        return f"[{text[:60]}{'...' if len(text) > 60 else ''}]"
    return str(v)[:80]


# A run that went on to finish cleanly survived its errors: handled, retried or harmless.
# A rule with `survivable = false` is the exception (a run can "finish" with a loss of
# nan all along), and warning-level rules (a recompile limit) describe the run, not a crash.


EXIT_0 = "the watched process exited with status 0 (run.exit_status): the run ended, it did not crash"


def _handled(c: _Cand, end: EndState, why: str | None = None) -> None:
    if not c.rule.survivable or c.severity == "warning" or c.confidence == Confidence.POSSIBLE:
        return  # warnings are what they are, crash or not
    c.confidence = Confidence.POSSIBLE
    if why is not None:
        c.counter.append(
            Evidence(text=f"{why}: handled, retried or harmless", source="snapshot", fact="run.exit_status")
        )
        return
    c.counter.append(
        Evidence(
            text=f"the run went on and ended cleanly after it ({end.last_text[-80:]!r}): "
            "handled, retried or harmless",
            source=end.source,
            line=end.line,
        )
    )


WENT_ON_MIN = 3  # loss lines of the same rank after an error: the run survived it


def _went_on(c: _Cand, progress: Mapping[tuple[str, int | None], list[int]]) -> None:
    """An error the same rank trained on after (a caught OOM that skipped a batch, a
    retried download), in a log that does not end in a failure: handled or harmless."""
    if not c.rule.survivable or c.severity == "warning" or c.inferred or c.confidence == Confidence.POSSIBLE:
        return
    seen = [f for f in c.findings if f.kind in ("line", "exception") and f.evidence.source]
    if not seen:
        return
    last = max(seen, key=lambda f: f.order)
    after = [q for q in progress.get((last.evidence.source or "", last.evidence.rank), ()) if q > last.order]
    if len(after) < WENT_ON_MIN:
        return
    c.confidence = Confidence.POSSIBLE
    rank = f" on rank {last.evidence.rank}" if last.evidence.rank is not None else ""
    c.counter.append(
        Evidence(
            text=f"training went on after it{rank} ({len(after)} more "
            "loss lines) and the log does not end in a failure: handled, retried or harmless",
            source=last.evidence.source,
            line=last.evidence.line,
            rank=last.evidence.rank,
        )
    )


def _fallbacks(cands: dict[str, _Cand]) -> None:
    """Fallback rules (truncated-unknown) stay only when nothing else is likely. A generic
    rule (unclassified-error: the root error, whatever it is) stays only when no specific
    rule names a cause it does not itself explain, and none matched its very line."""
    for g in [c for c in cands.values() if c.rule.generic]:
        lines = {(e.source, e.line) for e in g.evidence}
        for c in cands.values():
            if c is g or c.rule.generic or c.rule.fallback:
                continue
            on_line = any((e.source, e.line) in lines for e in c.evidence)
            names = {c.rule.id, *c.rule.aliases}
            causes = (
                not c.rule.yields
                and c.severity == "error"
                and c.confidence >= Confidence.LIKELY
                and not names & set(g.rule.explains)
                and not c.inferred
            )
            if on_line or causes:
                del cands[g.rule.id]
                break
    strong = any(not c.rule.fallback and c.confidence >= Confidence.LIKELY for c in cands.values())
    for rid in [r for r, c in cands.items() if c.rule.fallback]:
        if strong:
            del cands[rid]


def _explain(cands: dict[str, _Cand]) -> None:
    """Mark consequences: B is explained by A when A.explains names B (or its alias),
    and yielding rules (torchrun-child-failed) are explained by anything specific."""
    roots = sorted(cands.values(), key=lambda c: (-c.confidence, c.seen))
    for b in cands.values():
        names = {b.rule.id, *b.rule.aliases}
        for a in roots:
            if a is b or not names & set(a.rule.explains) or a.severity == "warning":
                continue  # a warning (a recompile limit that only slowed the run) explains nothing
            if a.rule.id in b.rule.explains and b.seen < a.seen:
                continue  # they explain each other: the earlier one leads
            if a.inferred and not b.inferred:
                continue  # an inference never demotes a failure the log shows
            if _weaker_guess(a, b) and not _root_error_before(a, b):
                continue
            b.role, b.explained_by = "consequence", a.rule.id
            break
        if b.role == "root-cause" and b.rule.yields:
            for a in roots:
                # the root error (generic) is what a launcher's report of a failed child
                # carries, however unsure its cause
                if (
                    a is not b
                    and not a.rule.yields
                    and not a.rule.fallback
                    and not a.inferred
                    and (a.rule.generic or not _weaker_guess(a, b))
                ):
                    b.role, b.explained_by = "consequence", a.rule.id
                    break
    # a warning-level finding next to a real root cause contributes, it does not lead
    has_error_root = any(
        c.role == "root-cause" and c.severity == "error" and not c.inferred for c in cands.values()
    )
    for c in cands.values():
        if c.role == "root-cause" and c.severity == "warning" and has_error_root:
            c.role = "contributing"


def _weaker_guess(a: _Cand, b: _Cand) -> bool:
    """A mere hint (a `possible` clause: a connect retry, a worker's "Received SIGTERM")
    never demotes a likely or confirmed finding to its consequence."""
    return a.confidence == Confidence.POSSIBLE and b.confidence > Confidence.POSSIBLE


def _root_error_before(a: _Cand, b: _Cand) -> bool:
    """The generic rule's root error is `possible` because no rule names why it happened, not
    because it is a guess: the run did fail there. One the log shows before what it explains
    (srun's SIGTERM to the other tasks after one raised, a peer's timeout) is that one's cause."""
    return a.rule.generic and not a.inferred and a.seen < b.seen


def _score(c: _Cand) -> float:
    s = BASE_SCORE[c.confidence] + min(len(c.findings), 5) * 0.01
    if c.rule.fallback:
        s = 0.45
    if c.role == "consequence":
        s *= 0.5
    elif c.role == "contributing":
        s *= 0.7
    return round(max(0.0, min(1.0, s)), 3)


def _to_diagnosis(c: _Cand) -> Diagnosis:
    r = c.rule
    return Diagnosis(
        signature=r.id,
        rule=r.path.rsplit("/", 2)[-2] + "/" + r.id if "/" in r.path else r.id,
        title=r.title,
        confidence=c.confidence,
        score=_score(c),
        role=c.role,
        summary=r.summary,
        evidence=tuple(c.evidence[: MAX_EVIDENCE + 2]),
        counter_evidence=tuple(c.counter),
        explains=r.explains,
        explained_by=c.explained_by,
        checks=tuple(fill_facts(x, c.facts) for x in r.checks),
        remedies=tuple(fill_facts(x, c.facts) for x in r.remedies),
        docs=r.docs,
        first_seen=c.seen[0],
        category=r.category,
        ranks=tuple(sorted({f.evidence.rank for f in c.findings if f.evidence.rank is not None})),
        occurrences=len(c.findings),
        fallback=r.fallback,
    )


ROLE_ORDER = {"root-cause": 0, "contributing": 1, "consequence": 2}


def _sort_key(c: _Cand) -> tuple[Any, ...]:
    """Roots first; then surer; then, at equal confidence, what a log line says before
    the honest "unknown", and that before inferences from how the log ends; then the
    earliest in time; then the stronger score."""
    return (
        ROLE_ORDER[c.role],
        -c.confidence,
        1 if c.rule.fallback else (2 if c.inferred else 0),
        c.seen,
        -_score(c),
    )


_FACT_REF = re.compile(r"\{((?:fact|match):[\w.\-]+)(?:\|([^}]*))?\}")


def fill_facts(text: str, facts: Mapping[str, Any]) -> str:
    """Fill the one template syntax of because, checks and remedies: `{fact:NAME|default}`
    with a known fact (the run's own interpreter, say) and `{match:GROUP|default}` with
    what the matched line said. A fact that is absent, unreadable or false gives the
    default; with no default, what is known of it ("unknown", "unknown (why)", "False").
    Shell braces (`${VAR:-x}`, awk's `{print}`) are left alone."""

    def one(m: re.Match[str]) -> str:
        key = m.group(1)
        v = facts.get(key[5:] if key.startswith("fact:") else key)
        if v is None or isinstance(v, Unknown) or v is False:
            if m.group(2) is not None:
                return m.group(2)
            return "unknown" if v is None else str(v)
        return str(v)

    return _FACT_REF.sub(one, text) if ("{fact:" in text or "{match:" in text) else text
