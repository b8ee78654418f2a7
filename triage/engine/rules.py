"""Rules are data: `rules/<category>/<signature>.toml`, validated at load.

Unknown keys, bad regexes, missing literals and missing examples are errors that name
the file and the key, and so is a name outside the declared vocabulary
(triage.vocabulary: events and their `where` keys, phases, end states, facts, the
category of the rule's folder), with the closest known name as a hint: a clause that
names what the pipeline never produces could never fire. Nothing in a rule file is
ever executed.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import regex

from triage.engine.codes import (
    CodeTable,
    code_table,
    compile_code_regex,
    known_tables,
    parse_select,
    row_selected,
)
from triage.engine.patterns import compile_rule_regex, save_checked
from triage.engine.predicates import Predicate, check_vocabulary, parse_predicates
from triage.errors import RuleError
from triage.model import Confidence
from triage.vocabulary import (
    END_FACTS,
    END_STATES,
    EVENTS,
    PHASES,
    categories,
    did_you_mean,
    fact_names,
    is_fact,
)

REGEX_TIMEOUT = 0.25  # seconds per regex call on one line; a ReDoS costs at most this
# A line cut inside a message matches when this much of the message is there (enough to
# be that message: "Watchdog caught collective operation t" is, "CUDA error: " is not)
CUT_MIN_CHARS = 24
_WILDCARD = regex.compile(r"(?<!\\)\.(?:[*+{])|\[\^[^\]]*\][*+{]")

TOP_KEYS = {
    "id",
    "title",
    "category",
    "severity",
    "summary",
    "explains",
    "yields",
    "fallback",
    "aliases",
    "remedies",
    "checks",
    "docs",
    "match",
    "unless",
    "evidence",
    "examples",
    "generic",
    "hint_in_phase",
    "survivable",
    "waits_on_peers",
}
MATCH_KEYS = {
    "name",
    "kind",
    "literal",
    "regex",
    "icase",
    "confidence",
    "type",
    "message",
    "frames",
    "raised_in",
    "event",
    "where",
    "end_state",
    "last_phase",
    "when",
    "severity",
    "phase",
    "table",
    "select",
    "unlisted",
    "near",
    "wrapper",
}
# Keys that once meant something (or nothing): rejected with what to write instead.
RETIRED_KEYS = {
    "priority": "retired: diagnoses rank by confidence, what explains what, and time",
    "note": "retired: write a TOML comment (# ...) above the clause",
}
UNLESS_KEYS = {"name", "literal", "regex", "icase", "scope"}
EVIDENCE_KEYS = {"when", "effect", "because"}
EXAMPLE_KEYS = {"fire", "quiet"}
# root-error: the log's root exception (structure.root_exception), whatever its type;
# the clause of a generic rule that names where a run failed when no rule names why
# code: a line clause whose regex reads a number (?P<code>) that a code table
# (triage/engine/codes.py) decodes and routes to the signature that owns it
KINDS = {"line", "exception", "event", "end", "fact", "root-error", "code"}
NEAR_KEYS = {"literal", "regex", "icase", "within"}
MAX_NEAR = 8  # lines back a companion may be: a message continued, not a story
EFFECTS = {"confirm", "support", "weaken", "rule_out", "note"}
SEVERITIES = {"error", "warning"}
# `{fact:NAME|default}` and `{match:GROUP|default}`: the one template syntax of because,
# checks and remedies (triage.engine.reason.fill_facts)
TEMPLATE_RE = regex.compile(r"\{(fact|match):([\w.\-]+)(?:\|[^}]*)?\}")
# the retired str.format form of a fact, `{package.accelerate}` (not `${VAR}` of a shell)
OLD_TEMPLATE_RE = regex.compile(r"(?<!\$)\{([a-z_][\w\-]*(?:\.[\w\-]+)+)\}")


@dataclass(frozen=True)
class Clause:
    """One way a rule can fire."""

    rule_id: str
    index: int
    kind: str
    confidence: Confidence
    literals: tuple[str, ...] = ()
    icase: bool = False
    pattern: regex.Pattern[str] | None = None
    type_pattern: regex.Pattern[str] | None = None
    frames_pattern: regex.Pattern[str] | None = None  # exception clauses: a frame that raised
    event: str | None = None
    where: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    end_states: tuple[str, ...] = ()
    last_phases: tuple[str, ...] = ()
    when: tuple[Predicate, ...] = ()
    name: str = ""
    severity: str | None = None  # overrides the rule's (a warning rule's hard-failure clause)
    phases: tuple[str, ...] = ()  # line clauses: only while the log is in one of these phases
    cut_ok: bool = False  # the pattern is a message template a cut line can be a prefix of
    # code clauses: the table the code is read through, the rows this clause owns, and
    # whether codes the table does not list are this clause's too
    table: CodeTable | None = None
    select: tuple[tuple[str, tuple[str, ...]], ...] = ()
    unlisted: bool = False
    near: Near | None = None  # line and code clauses: a companion line just before
    # exception clauses: the innermost frame (where it was raised) matches this
    raised_in: regex.Pattern[str] | None = None
    # the matched line only carries or echoes an error another clause's line states in
    # full (BackendCompilerFailed's header, the DataLoader re-raise, the watchdog's
    # "Timeout at NCCL work" summary): that line leads the evidence when there is one
    wrapper: bool = False

    def owns(self, code: int) -> bool:
        """A code clause: whether `code` is one of the rows it selects."""
        if self.table is None:
            return False
        row = self.table.rows.get(code)
        if row is None:
            return self.unlisted
        return row_selected(row, self.select)

    def __post_init__(self) -> None:
        # a pattern with an open-ended wildcard (.*, .+, .{0,80}, [^)]*) matches a prefix of
        # almost any line that holds its literal: no cut matching for it
        if self.pattern is not None:
            object.__setattr__(self, "cut_ok", _WILDCARD.search(self.pattern.pattern) is None)
        if self.table is not None or self.near is not None:
            # a cut code is a different number (": 7" of ": 79"), and a cut line cannot
            # prove its companion: code and multi-line clauses match whole lines only
            object.__setattr__(self, "cut_ok", False)

    def search(self, text: str) -> regex.Match[str] | None:
        """Full-regex check of a candidate text; a regex that times out is a miss."""
        if self.pattern is None:
            return None
        try:
            return self.pattern.search(text, timeout=REGEX_TIMEOUT)
        except TimeoutError:
            return None

    def search_cut(self, text: str) -> regex.Match[str] | None:
        """The text ends inside a match: at least CUT_MIN_CHARS of the pattern matched up
        to the very end of the text, and only more text could complete it."""
        if self.pattern is None or not self.cut_ok or len(text) < CUT_MIN_CHARS:
            return None
        try:
            m = self.pattern.search(text, partial=True, timeout=REGEX_TIMEOUT)
        except TimeoutError:
            return None
        if m is None or not m.partial or m.end() != len(text) or m.end() - m.start() < CUT_MIN_CHARS:
            return None
        return m


@dataclass(frozen=True)
class Near:
    """A multi-line message: the companion line that must be within `within` lines before
    the clause's line (the driver's message continued, the WARN before an error chain)."""

    literals: tuple[str, ...]
    pattern: regex.Pattern[str]
    icase: bool
    within: int

    def found(self, recent: tuple[str, ...]) -> bool:
        """Whether one of the recent lines (oldest first) is the companion."""
        for text in recent[-self.within :]:
            hay = text.lower() if self.icase else text
            if any((lit.lower() if self.icase else lit) in hay for lit in self.literals):
                try:
                    if self.pattern.search(text, timeout=REGEX_TIMEOUT):
                        return True
                except TimeoutError:
                    continue
        return False


@dataclass(frozen=True)
class Unless:
    literals: tuple[str, ...]
    pattern: regex.Pattern[str]
    icase: bool
    scope: str  # "line" | "log" | "frames" (a frame of the exception on that line)

    def search(self, text: str) -> bool:
        try:
            return self.pattern.search(text, timeout=REGEX_TIMEOUT) is not None
        except TimeoutError:
            return False


@dataclass(frozen=True)
class EvidenceRule:
    when: tuple[Predicate, ...]
    effect: str
    because: str


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    category: str
    severity: str
    summary: str
    path: str
    clauses: tuple[Clause, ...]
    unless: tuple[Unless, ...] = ()
    evidence: tuple[EvidenceRule, ...] = ()
    explains: tuple[str, ...] = ()
    yields: bool = False
    fallback: bool = False
    generic: bool = False  # names no cause, only the error: stands when no specific rule does
    # phases in which a line of this rule is only a hint (possible): a rendezvous failure
    # while training is a side channel's, not the run's start-up
    hint_in_phase: tuple[str, ...] = ()
    # false: a run that went on, or ended cleanly, after it did not survive it (a loss
    # of nan all along is still a failure); true for most errors (handled, retried)
    survivable: bool = True
    # the ranks that report it are waiting on a peer (a collective timeout, a hang): a
    # rank that does not report it is named as the likely straggler
    waits_on_peers: bool = False
    aliases: tuple[str, ...] = ()
    remedies: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    docs: tuple[str, ...] = ()
    fire: tuple[str, ...] = ()
    quiet: tuple[str, ...] = ()


def default_rules_dir() -> Path:
    """The shipped rules: `triage/_rules` in a wheel, `rules/` beside the package in a
    source checkout."""
    here = Path(__file__).resolve().parent.parent
    for cand in (here / "_rules", here.parent / "rules"):
        if cand.is_dir():
            return cand
    raise RuleError(str(here / "_rules"), "(folder)", "shipped rules not found")


def load_rules(dirs: list[Path] | None = None, *, include_default: bool = True) -> list[Rule]:
    """Load and validate every `*.toml` under the given folders (default: shipped).

    A user's folder adds rules; an id defined twice is an error naming both files.
    """
    folders: list[Path] = []
    if include_default:
        folders.append(default_rules_dir())
    folders.extend(dirs or [])
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    for folder in folders:
        if not folder.is_dir():
            raise RuleError(str(folder), "(folder)", "not a folder of rules")
        cats = categories(folder)
        for path in sorted(folder.rglob("*.toml")):
            rule = load_rule(path)
            _check_category(rule, path, folder, cats)
            if rule.id in seen:
                raise RuleError(str(path), "id", f"duplicate id {rule.id!r}, also in {seen[rule.id]}")
            seen[rule.id] = str(path)
            rules.append(rule)
    save_checked()  # the patterns that compiled: lazy from the next start-up on
    return rules


def _check_category(rule: Rule, path: Path, root: Path, cats: tuple[str, ...]) -> None:
    """A rule's category is the folder it sits in (`rules/<category>/<id>.toml`); a rule
    at the top of a user's folder names one of that folder's or the shipped categories."""
    parts = path.relative_to(root).parts
    if len(parts) > 1:
        if rule.category != parts[0]:
            raise RuleError(
                rule.path,
                "category",
                f"{rule.category!r} is not its folder {parts[0]!r} (rules/<category>/<id>.toml)",
            )
        return
    known = set(cats) | set(categories(default_rules_dir()))
    if rule.category not in known:
        raise RuleError(
            rule.path,
            "category",
            f"unknown category {rule.category!r}{did_you_mean(rule.category, known)}; "
            f"one of {', '.join(sorted(known))}, or put the rule in a folder named "
            f"after a new one",
        )


def load_rule(path: Path) -> Rule:
    """Read and validate one rule file."""
    p = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise RuleError(p, "(file)", f"cannot read: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise RuleError(p, "(toml)", str(e)) from None
    return parse_rule(data, p)


def parse_rule(data: dict[str, Any], p: str) -> Rule:
    """Validate a rule's parsed TOML (`p` names the file in errors)."""
    _no_unknown_keys(data, TOP_KEYS, p, "")
    rid = _req_str(data, "id", p)
    if not regex.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", rid):
        raise RuleError(p, "id", f"{rid!r} is not a signature id (lowercase words joined by -)")
    stem = os.path.splitext(os.path.basename(p))[0]
    if stem != rid:
        raise RuleError(p, "id", f"file must be named after its id ({rid}.toml)")
    severity = str(data.get("severity", "error"))
    if severity not in SEVERITIES:
        raise RuleError(p, "severity", f"must be one of {sorted(SEVERITIES)}")
    matches = data.get("match")
    if not isinstance(matches, list) or not matches:
        raise RuleError(p, "match", "at least one [[match]] clause is required")
    clauses = tuple(_clause(rid, i, m, p) for i, m in enumerate(matches))
    unless = tuple(_unless(u, p, i) for i, u in enumerate(_list_of_tables(data, "unless", p)))
    evidence = tuple(_evidence(e, p, i) for i, e in enumerate(_list_of_tables(data, "evidence", p)))
    ex = data.get("examples")
    if not isinstance(ex, dict):
        raise RuleError(p, "examples", "required: a table with fire = [...] and quiet = [...]")
    if set(ex) - EXAMPLE_KEYS:
        raise RuleError(p, "examples." + sorted(set(ex) - EXAMPLE_KEYS)[0], "unknown key")
    fire = _str_list(ex, "fire", p, "examples.")
    quiet = _str_list(ex, "quiet", p, "examples.")
    text_kinds = any(c.kind in ("line", "exception", "code") for c in clauses)
    if text_kinds and (not fire or not quiet):
        raise RuleError(p, "examples", "needs at least one 'fire' and one 'quiet' example")
    rule = Rule(
        id=rid,
        title=_req_str(data, "title", p),
        category=_req_str(data, "category", p),
        severity=severity,
        summary=str(data.get("summary", "")),
        path=p,
        clauses=clauses,
        unless=unless,
        evidence=evidence,
        explains=tuple(_str_list(data, "explains", p)),
        yields=bool(data.get("yields", False)),
        fallback=bool(data.get("fallback", False)),
        generic=bool(data.get("generic", False)),
        aliases=tuple(_str_list(data, "aliases", p)),
        hint_in_phase=_names(data, "hint_in_phase", PHASES, "phase", p, "(rule)"),
        survivable=_bool(data, "survivable", True, p),
        waits_on_peers=_bool(data, "waits_on_peers", False, p),
        remedies=tuple(_str_list(data, "remedies", p)),
        checks=tuple(_str_list(data, "checks", p)),
        docs=tuple(_str_list(data, "docs", p)),
        fire=tuple(fire),
        quiet=tuple(quiet),
    )
    _check_templates(rule, p)
    return rule


def _bool(data: dict[str, Any], key: str, default: bool, p: str) -> bool:
    """A true/false rule field (a string "false" is an error, not true)."""
    v = data.get(key, default)
    if not isinstance(v, bool):
        raise RuleError(p, key, "must be true or false")
    return v


def _clause(rid: str, i: int, m: Any, p: str) -> Clause:
    key = f"match[{i}]"
    if not isinstance(m, dict):
        raise RuleError(p, key, "must be a table")
    _no_unknown_keys(m, MATCH_KEYS, p, key + ".")
    kind = str(m.get("kind", "line"))
    if kind not in KINDS:
        raise RuleError(p, f"{key}.kind", f"must be one of {sorted(KINDS)}")
    try:
        conf = Confidence.parse(str(m.get("confidence", "confirmed")))
    except KeyError:
        raise RuleError(p, f"{key}.confidence", "must be confirmed, likely or possible") from None
    icase = bool(m.get("icase", False))
    literals, pattern, type_pattern, frames_pattern = _text_patterns(kind, m, p, key, icase)
    where: dict[str, tuple[Any, ...]] = {}
    if kind == "event":
        where = _event_where(m, p, key)
    end_states = _names(m, "end_state", END_STATES, "end state", p, key)
    if kind == "end" and not end_states:
        raise RuleError(p, f"{key}.end_state", "required for an end clause")
    last_phases = _names(m, "last_phase", PHASES, "phase", p, key)
    phases = _names(m, "phase", PHASES, "phase", p, key)
    when: tuple[Predicate, ...] = ()
    if "when" in m:
        when = _predicates(m["when"], p, f"{key}.when")
        _no_end_facts(when, p, f"{key}.when")
    if kind == "fact" and not when:
        raise RuleError(p, f"{key}.when", "required for a fact clause")
    sev = m.get("severity")
    if sev is not None and sev not in SEVERITIES:
        raise RuleError(p, f"{key}.severity", f"must be one of {sorted(SEVERITIES)}")
    clause = Clause(
        rid,
        i,
        kind,
        conf,
        literals,
        icase,
        pattern,
        type_pattern,
        frames_pattern,
        m.get("event"),
        where,
        end_states,
        last_phases,
        when,
        str(m.get("name", "")),
        sev,
        phases,
    )
    if "raised_in" in m:
        if kind != "exception":
            raise RuleError(p, f"{key}.raised_in", "only an exception clause has frames")
        clause = replace(
            clause, raised_in=_compile(m["raised_in"], p, f"{key}.raised_in", False, required=True)
        )
    return _code_and_near(_wrapper(clause, m, p, key), m, p, key)


def _wrapper(c: Clause, m: dict[str, Any], p: str, key: str) -> Clause:
    """`wrapper = true`: a line or exception clause whose line gives way, as evidence, to
    the rule's other lines (the inner error it carries)."""
    if "wrapper" not in m:
        return c
    if not isinstance(m["wrapper"], bool):
        raise RuleError(p, f"{key}.wrapper", "must be true or false")
    if c.kind not in ("line", "exception"):
        raise RuleError(p, f"{key}.wrapper", "only a line or exception clause wraps another error")
    return replace(c, wrapper=m["wrapper"])


def _text_patterns(
    kind: str, m: dict[str, Any], p: str, key: str, icase: bool
) -> tuple[tuple[str, ...], Any, Any, Any]:
    """A clause's literals and its patterns over the line, or over an exception's
    message, type and frames: (literals, pattern, type_pattern, frames_pattern)."""
    literals: tuple[str, ...] = ()
    pattern = type_pattern = frames_pattern = None
    if kind in ("line", "exception"):
        # an exception clause that names the frames it was raised from is selective by
        # them (anything raised inside torch.save): its literal is optional
        frames_only = kind == "exception" and ("frames" in m or "raised_in" in m) and "literal" not in m
        literals = () if frames_only else tuple(_literals(m, p, key))
        if kind == "line":
            pattern = _compile(m.get("regex"), p, f"{key}.regex", icase, required=True)
            _literal_in_regex(literals, m.get("regex", ""), p, key)
        else:
            type_pattern = _compile(m.get("type"), p, f"{key}.type", False, required=False)
            pattern = _compile(m.get("message"), p, f"{key}.message", icase, required=False)
            frames_pattern = _compile(m.get("frames"), p, f"{key}.frames", False, required=False)
            if type_pattern is None and pattern is None:
                raise RuleError(p, key, "an exception clause needs 'type' or 'message'")
    if kind == "root-error":
        type_pattern = _compile(m.get("type"), p, f"{key}.type", False, required=False)
    return literals, pattern, type_pattern, frames_pattern


def _code_and_near(c: Clause, m: dict[str, Any], p: str, key: str) -> Clause:
    """The parts of a code clause (table, select, unlisted, its own or the table's
    literal and regex) and of a multi-line one (near); misplaced keys are errors."""
    if c.kind != "code":
        for k in ("table", "select", "unlisted"):
            if k in m:
                raise RuleError(p, f"{key}.{k}", 'only a kind = "code" clause reads a code table')
        if "near" in m and c.kind != "line":
            raise RuleError(p, f"{key}.near", "only line and code clauses have a companion line")
        return replace(c, near=_near(m["near"], p, f"{key}.near")) if "near" in m else c
    name = m.get("table")
    if not isinstance(name, str) or not name:
        raise RuleError(p, f"{key}.table", f"required: one of {', '.join(known_tables())}")
    if name not in known_tables():
        raise RuleError(
            p, f"{key}.table", f"unknown code table {name!r} (known: {', '.join(known_tables())})"
        )
    table = code_table(name)
    if "regex" in m or table.pattern is None:
        # a clause of its own: `NCCL INFO x.cc:NNN -> (?P<code>N)`
        if "regex" not in m:
            raise RuleError(p, f"{key}.regex", f"required: table {name} has no shared pattern")
        literals = tuple(_literals(m, p, key))
        pattern = compile_code_regex(m["regex"], p, f"{key}.regex", c.icase)
        _literal_in_regex(literals, m["regex"], p, key)
    else:
        # the table's shared reading of its lines (every Xid spelling, read once)
        if "literal" in m:
            raise RuleError(
                p,
                f"{key}.literal",
                f"table {name}'s pattern has its own literals; give a regex with the literal",
            )
        literals, pattern = table.literals, table.pattern
    unlisted = m.get("unlisted", False)
    if not isinstance(unlisted, bool):
        raise RuleError(p, f"{key}.unlisted", "must be true or false")
    near = _near(m["near"], p, f"{key}.near") if "near" in m else None
    return replace(
        c,
        literals=literals,
        pattern=pattern,
        table=table,
        select=parse_select(m.get("select"), table, p, f"{key}.select"),
        unlisted=unlisted,
        near=near,
    )


def _near(src: Any, p: str, key: str) -> Near:
    if not isinstance(src, dict):
        raise RuleError(p, key, "must be a table: { literal = ..., regex = ..., within = N }")
    if set(src) - NEAR_KEYS:
        raise RuleError(p, f"{key}.{sorted(set(src) - NEAR_KEYS)[0]}", "unknown key")
    within = src.get("within", 3)
    if not isinstance(within, int) or isinstance(within, bool) or not 1 <= within <= MAX_NEAR:
        raise RuleError(p, f"{key}.within", f"must be 1 to {MAX_NEAR} (lines before)")
    icase = bool(src.get("icase", False))
    pat = _compile(src.get("regex"), p, f"{key}.regex", icase, required=True)
    assert pat is not None
    return Near(tuple(_literals(src, p, key)), pat, icase, within)


def _no_unknown_keys(table: dict[str, Any], allowed: set[str], p: str, prefix: str) -> None:
    unknown = sorted(set(table) - allowed)
    if not unknown:
        return
    k = unknown[0]
    raise RuleError(p, prefix + k, RETIRED_KEYS.get(k) or f"unknown key{did_you_mean(k, allowed)}")


def _event_where(m: dict[str, Any], p: str, key: str) -> dict[str, tuple[Any, ...]]:
    """An event clause's event kind and `where` table, against the declared events."""
    event = m.get("event")
    if not isinstance(event, str):
        raise RuleError(p, f"{key}.event", "required: the event kind (e.g. torchrun-failure)")
    if event not in EVENTS:
        raise RuleError(
            p,
            f"{key}.event",
            f"unknown event {event!r}{did_you_mean(event, EVENTS)}; one of {', '.join(sorted(EVENTS))}",
        )
    w = m.get("where", {})
    if not isinstance(w, dict):
        raise RuleError(p, f"{key}.where", "must be a table")
    carries = EVENTS[event]
    for k in w:
        if k not in carries:
            raise RuleError(
                p,
                f"{key}.where.{k}",
                f"a {event} event carries no {k!r}{did_you_mean(k, carries)}; "
                f"it carries {', '.join(sorted(carries))}",
            )
    return {k: tuple(v) if isinstance(v, list) else (v,) for k, v in w.items()}


def _names(
    m: dict[str, Any], field_: str, allowed: tuple[str, ...], what: str, p: str, key: str
) -> tuple[str, ...]:
    """A list of declared names (phases, end states): an unknown one is an error."""
    names = tuple(_str_list(m, field_, p, key + "."))
    for n in names:
        if n not in allowed:
            raise RuleError(
                p,
                f"{key}.{field_}",
                f"unknown {what} {n!r}{did_you_mean(n, allowed)}; one of {', '.join(allowed)}",
            )
    return names


def _no_end_facts(when: tuple[Predicate, ...], p: str, key: str) -> None:
    """How the log ends is said one way: an end clause's `end_state` and `last_phase`,
    with `when` for the facts beside it. The log's end facts in a clause's `when` (a fact
    clause on `log.truncated and log.last_phase == X`) are the retired second way."""
    for pred in when:
        if pred.fact in END_FACTS:
            raise RuleError(
                p,
                key,
                f'{pred.fact!r} says how the log ends: write kind = "end" '
                f"with end_state = [...] and last_phase = [...], and keep only "
                f"the other facts in when",
            )


def _check_templates(rule: Rule, p: str) -> None:
    """because, checks and remedies name facts as `{fact:NAME|default}` and what the
    matched line said as `{match:GROUP|default}`: each name must exist."""
    groups = {g for c in rule.clauses if c.pattern is not None for g in c.pattern.groupindex}
    texts = [(f"evidence[{i}].because", e.because) for i, e in enumerate(rule.evidence)]
    texts += [(f"checks[{i}]", t) for i, t in enumerate(rule.checks)]
    texts += [(f"remedies[{i}]", t) for i, t in enumerate(rule.remedies)]
    for key, text in texts:
        old = OLD_TEMPLATE_RE.search(text)
        if old:
            raise RuleError(
                p,
                key,
                f"{{{old.group(1)}}} is the retired template form: "
                f"write {{fact:{old.group(1)}}} (or {{fact:NAME|default}})",
            )
        for m in TEMPLATE_RE.finditer(text):
            kind, name = m.group(1), m.group(2)
            if kind == "fact" and not is_fact(name):
                raise RuleError(p, key, f"unknown fact {name!r}{did_you_mean(name, fact_names())}")
            if kind == "match" and name not in groups:
                raise RuleError(
                    p, key, f"no clause's regex has a group named {name!r}{did_you_mean(name, groups)}"
                )


def _literals(m: dict[str, Any], p: str, key: str) -> list[str]:
    lit = m.get("literal")
    lits = [lit] if isinstance(lit, str) else lit
    if not isinstance(lits, list) or not lits or not all(isinstance(x, str) for x in lits):
        raise RuleError(
            p, f"{key}.literal", "required: a selective literal (or a list) the text must contain"
        )
    for x in lits:
        if len(x) < 4:
            raise RuleError(p, f"{key}.literal", f"{x!r} is too short to be selective (>= 4 chars)")
    return lits


def _literal_in_regex(literals: tuple[str, ...], rx: str, p: str, key: str) -> None:
    """Each literal must be something the regex requires, or the prefilter would hide
    matches. We check the cheap, common case: every regex match contains a literal is
    verified by the examples; here we only reject literals absent from the pattern text
    when the pattern has no alternation at all."""
    if "|" in rx or "(?i" in rx:
        return
    plain = regex.sub(r"\\(.)", r"\1", rx)
    if not any(lit in plain for lit in literals):
        raise RuleError(p, f"{key}.literal", "no literal occurs in the regex")


def _compile(src: Any, p: str, key: str, icase: bool, *, required: bool) -> regex.Pattern[str] | None:
    if src is None:
        if required:
            raise RuleError(p, key, "required")
        return None
    if not isinstance(src, str) or not src:
        raise RuleError(p, key, "must be a non-empty string")
    try:
        return compile_rule_regex(src, regex.IGNORECASE if icase else 0)
    except regex.error as e:
        raise RuleError(p, key, f"bad regex: {e}") from None


def _unless(u: Any, p: str, i: int) -> Unless:
    key = f"unless[{i}]"
    _no_unknown_keys(u, UNLESS_KEYS, p, key + ".")
    scope = str(u.get("scope", "line"))
    if scope not in ("line", "log", "frames"):
        raise RuleError(p, f"{key}.scope", "must be line, log or frames")
    icase = bool(u.get("icase", False))
    pat = _compile(u.get("regex"), p, f"{key}.regex", icase, required=True)
    assert pat is not None
    return Unless(tuple(_literals(u, p, key)), pat, icase, scope)


def _evidence(e: Any, p: str, i: int) -> EvidenceRule:
    key = f"evidence[{i}]"
    _no_unknown_keys(e, EVIDENCE_KEYS, p, key + ".")
    effect = str(e.get("effect", ""))
    if effect not in EFFECTS:
        raise RuleError(p, f"{key}.effect", f"must be one of {sorted(EFFECTS)}")
    because = e.get("because")
    if not isinstance(because, str) or not because:
        raise RuleError(p, f"{key}.because", "required: say which fact does it")
    return EvidenceRule(_predicates(e.get("when"), p, f"{key}.when"), effect, because)


def _predicates(src: Any, p: str, key: str) -> tuple[Predicate, ...]:
    try:
        preds = parse_predicates(src)
        check_vocabulary(preds)
    except ValueError as e:
        raise RuleError(p, key, str(e)) from None
    return tuple(preds)


def _list_of_tables(data: dict[str, Any], key: str, p: str) -> list[dict[str, Any]]:
    v = data.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
        raise RuleError(p, key, "must be an array of tables ([[...]])")
    return v


def _req_str(data: dict[str, Any], key: str, p: str) -> str:
    v = data.get(key)
    if not isinstance(v, str) or not v.strip():
        raise RuleError(p, key, "required (a non-empty string)")
    return v


def _str_list(data: dict[str, Any], key: str, p: str, prefix: str = "") -> list[str]:
    v = data.get(key, [])
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise RuleError(p, prefix + key, "must be a list of strings")
    return v
