"""Rules are data: `rules/<category>/<signature>.toml`, validated at load.

Unknown keys, bad regexes, missing literals and missing examples are errors that name
the file and the key. Nothing in a rule file is ever executed.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex

from triage.engine.predicates import Predicate, parse_predicates
from triage.errors import RuleError
from triage.model import Confidence

REGEX_TIMEOUT = 0.25  # seconds per regex call on one line; a ReDoS costs at most this
# A line cut inside a message matches when this much of the message is there (enough to
# be that message: "Watchdog caught collective operation t" is, "CUDA error: " is not)
CUT_MIN_CHARS = 24
_WILDCARD = regex.compile(r"(?<!\\)\.(?:[*+{])|\[\^[^\]]*\][*+{]")

TOP_KEYS = {"id", "title", "category", "severity", "summary", "explains", "yields", "fallback",
            "aliases", "remedies", "checks", "docs", "match", "unless", "evidence", "examples",
            "priority", "generic"}
MATCH_KEYS = {"name", "kind", "literal", "regex", "icase", "confidence", "type", "message",
              "frames", "event", "where", "end_state", "last_phase", "when", "note", "severity",
              "phase"}
UNLESS_KEYS = {"name", "literal", "regex", "icase", "scope"}
EVIDENCE_KEYS = {"when", "effect", "because"}
EXAMPLE_KEYS = {"fire", "quiet"}
# root-error: the log's root exception (structure.root_exception), whatever its type;
# the clause of a generic rule that names where a run failed when no rule names why
KINDS = {"line", "exception", "event", "end", "fact", "root-error"}
EFFECTS = {"confirm", "support", "weaken", "rule_out", "note"}
SEVERITIES = {"error", "warning"}
END_KINDS = {"clean-exit", "traceback", "error", "cut-mid-line", "no-terminal-event", "empty"}


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

    def __post_init__(self) -> None:
        # a pattern with an open-ended wildcard (.*, .+, .{0,80}, [^)]*) matches a prefix of
        # almost any line that holds its literal: no cut matching for it
        if self.pattern is not None:
            object.__setattr__(self, "cut_ok", _WILDCARD.search(self.pattern.pattern) is None)

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
    aliases: tuple[str, ...] = ()
    remedies: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    docs: tuple[str, ...] = ()
    fire: tuple[str, ...] = ()
    quiet: tuple[str, ...] = ()
    priority: float = 0.0


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
        for path in sorted(folder.rglob("*.toml")):
            rule = load_rule(path)
            if rule.id in seen:
                raise RuleError(str(path), "id", f"duplicate id {rule.id!r}, also in {seen[rule.id]}")
            seen[rule.id] = str(path)
            rules.append(rule)
    return rules


def load_rule(path: Path) -> Rule:
    p = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise RuleError(p, "(file)", f"cannot read: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise RuleError(p, "(toml)", str(e)) from None
    return parse_rule(data, p)


def parse_rule(data: dict[str, Any], p: str) -> Rule:
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise RuleError(p, sorted(unknown)[0], "unknown key")
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
    text_kinds = any(c.kind in ("line", "exception") for c in clauses)
    if text_kinds and (not fire or not quiet):
        raise RuleError(p, "examples", "needs at least one 'fire' and one 'quiet' example")
    return Rule(
        id=rid, title=_req_str(data, "title", p), category=_req_str(data, "category", p),
        severity=severity, summary=str(data.get("summary", "")), path=p, clauses=clauses,
        unless=unless, evidence=evidence,
        explains=tuple(_str_list(data, "explains", p)), yields=bool(data.get("yields", False)),
        fallback=bool(data.get("fallback", False)), generic=bool(data.get("generic", False)),
        aliases=tuple(_str_list(data, "aliases", p)),
        remedies=tuple(_str_list(data, "remedies", p)), checks=tuple(_str_list(data, "checks", p)),
        docs=tuple(_str_list(data, "docs", p)), fire=tuple(fire), quiet=tuple(quiet),
        priority=float(data.get("priority", 0.0)),
    )


def _clause(rid: str, i: int, m: Any, p: str) -> Clause:
    key = f"match[{i}]"
    if not isinstance(m, dict):
        raise RuleError(p, key, "must be a table")
    unknown = set(m) - MATCH_KEYS
    if unknown:
        raise RuleError(p, f"{key}.{sorted(unknown)[0]}", "unknown key")
    kind = str(m.get("kind", "line"))
    if kind not in KINDS:
        raise RuleError(p, f"{key}.kind", f"must be one of {sorted(KINDS)}")
    try:
        conf = Confidence.parse(str(m.get("confidence", "confirmed")))
    except KeyError:
        raise RuleError(p, f"{key}.confidence", "must be confirmed, likely or possible") from None
    icase = bool(m.get("icase", False))
    literals: tuple[str, ...] = ()
    pattern = type_pattern = frames_pattern = None
    if kind in ("line", "exception"):
        # an exception clause that names the frames it was raised from is selective by
        # them (anything raised inside torch.save): its literal is optional
        frames_only = kind == "exception" and "frames" in m and "literal" not in m
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
    where: dict[str, tuple[Any, ...]] = {}
    if kind == "event":
        if not isinstance(m.get("event"), str):
            raise RuleError(p, f"{key}.event", "required: the event kind (e.g. torchrun-failure)")
        w = m.get("where", {})
        if not isinstance(w, dict):
            raise RuleError(p, f"{key}.where", "must be a table")
        where = {k: tuple(v) if isinstance(v, list) else (v,) for k, v in w.items()}
    end_states = tuple(_str_list(m, "end_state", p, key + "."))
    bad = set(end_states) - END_KINDS
    if bad:
        raise RuleError(p, f"{key}.end_state", f"unknown end state {sorted(bad)[0]!r}")
    if kind == "end" and not end_states:
        raise RuleError(p, f"{key}.end_state", "required for an end clause")
    when: tuple[Predicate, ...] = ()
    if "when" in m:
        when = _predicates(m["when"], p, f"{key}.when")
    if kind == "fact" and not when:
        raise RuleError(p, f"{key}.when", "required for a fact clause")
    sev = m.get("severity")
    if sev is not None and sev not in SEVERITIES:
        raise RuleError(p, f"{key}.severity", f"must be one of {sorted(SEVERITIES)}")
    return Clause(rid, i, kind, conf, literals, icase, pattern, type_pattern, frames_pattern,
                  m.get("event"), where, end_states,
                  tuple(_str_list(m, "last_phase", p, key + ".")), when, str(m.get("name", "")),
                  sev, tuple(_str_list(m, "phase", p, key + ".")))


def _literals(m: dict[str, Any], p: str, key: str) -> list[str]:
    lit = m.get("literal")
    lits = [lit] if isinstance(lit, str) else lit
    if not isinstance(lits, list) or not lits or not all(isinstance(x, str) for x in lits):
        raise RuleError(p, f"{key}.literal",
                        "required: a selective literal (or a list) the text must contain")
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
        return regex.compile(src, regex.IGNORECASE if icase else 0)
    except regex.error as e:
        raise RuleError(p, key, f"bad regex: {e}") from None


def _unless(u: Any, p: str, i: int) -> Unless:
    key = f"unless[{i}]"
    if set(u) - UNLESS_KEYS:
        raise RuleError(p, f"{key}.{sorted(set(u) - UNLESS_KEYS)[0]}", "unknown key")
    scope = str(u.get("scope", "line"))
    if scope not in ("line", "log", "frames"):
        raise RuleError(p, f"{key}.scope", "must be line, log or frames")
    icase = bool(u.get("icase", False))
    pat = _compile(u.get("regex"), p, f"{key}.regex", icase, required=True)
    assert pat is not None
    return Unless(tuple(_literals(u, p, key)), pat, icase, scope)


def _evidence(e: Any, p: str, i: int) -> EvidenceRule:
    key = f"evidence[{i}]"
    if set(e) - EVIDENCE_KEYS:
        raise RuleError(p, f"{key}.{sorted(set(e) - EVIDENCE_KEYS)[0]}", "unknown key")
    effect = str(e.get("effect", ""))
    if effect not in EFFECTS:
        raise RuleError(p, f"{key}.effect", f"must be one of {sorted(EFFECTS)}")
    because = e.get("because")
    if not isinstance(because, str) or not because:
        raise RuleError(p, f"{key}.because", "required: say which fact does it")
    return EvidenceRule(_predicates(e.get("when"), p, f"{key}.when"), effect, because)


def _predicates(src: Any, p: str, key: str) -> tuple[Predicate, ...]:
    try:
        return tuple(parse_predicates(src))
    except ValueError as e:
        raise RuleError(p, key, str(e)) from None


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
