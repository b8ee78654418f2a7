"""`triage rules lint`: speed (selective literals, no catastrophic regex shapes, a time
budget on hostile input) and precision (each rule's examples; quiet on healthy logs)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from triage.engine.rules import Rule, load_rules
from triage.errors import RuleError

# A group that repeats something itself repeated: (a+)+, (\w*)*, (.+)+{2,}
NESTED_QUANT = re.compile(r"\((?:[^()\\]|\\.)*[+*}]\)\??[+*{]")
# Adjacent unbounded wildcards that can split the same text many ways: .*.*, .+.*
ADJACENT_WILD = re.compile(r"\.[*+]\??(?:\s|\\s[*+]?)*\.[*+]")
BAITS = ("a" * 50_000, " " * 50_000, "=" * 50_000, "0" * 50_000, "x:" * 25_000)
BUDGET_S = 0.2


def lint_rule(rule: Rule, *, check_examples: bool = True) -> list[str]:
    """Problems of one rule, each naming the file and the key."""
    out: list[str] = []
    for c in rule.clauses:
        key = f"{rule.path}: match[{c.index}]"
        for src in (c.pattern, c.type_pattern):
            if src is None:
                continue
            pat = src.pattern
            if NESTED_QUANT.search(pat):
                out.append(f"{key}.regex: nested quantifier (catastrophic backtracking risk): {pat}")
            if ADJACENT_WILD.search(pat):
                out.append(f"{key}.regex: adjacent unbounded wildcards: {pat}")
            for bait in BAITS:
                t0 = time.perf_counter()
                c.search(bait + (c.literals[0] if c.literals else ""))
                dt = time.perf_counter() - t0
                if dt > BUDGET_S:
                    out.append(f"{key}.regex: {dt:.2f}s on {len(bait)} bytes of {bait[:2]!r}")
                    break
    if check_examples:
        out.extend(check_rule_examples(rule))
    return out


def check_rule_examples(rule: Rule) -> list[str]:
    from triage.engine import analyze_text

    out: list[str] = []
    for i, ex in enumerate(rule.fire):
        rep = analyze_text(ex, rules=[rule])
        if not any(d.signature == rule.id for d in rep.diagnoses):
            out.append(f"{rule.path}: examples.fire[{i}]: the rule does not fire on it")
    for i, ex in enumerate(rule.quiet):
        rep = analyze_text(ex, rules=[rule])
        if any(d.signature == rule.id for d in rep.diagnoses):
            out.append(f"{rule.path}: examples.quiet[{i}]: the rule fires on it")
    return out


COMMON_WORDS = {
    "error",
    "warning",
    "exception",
    "failed",
    "info",
    "step",
    "loss",
    "rank",
    "cuda",
    "nccl",
    "torch",
    "with",
    "from",
    "that",
    "this",
    "true",
    "false",
    "none",
}
MAX_HEALTHY_HIT_RATE = 0.02


def lint(extra: list[Path], *, include_default: bool = True) -> list[str]:
    try:
        rules = load_rules(extra, include_default=include_default)
    except RuleError as e:
        return [e.message]
    problems: list[str] = []
    for r in rules:
        problems.extend(lint_rule(r))
    problems.extend(_selectivity(rules))
    problems.extend(noise_selectivity(rules, include_structure=include_default))
    problems.extend(_healthy_corpus(rules))
    return problems


# The fast path reads a window of about 90 lines around every candidate line: a literal
# (or confirmed pattern) on more than one healthy line in 10,000 turns a big log into
# Python's per-line path, at a few MB/s instead of the scan's hundreds.
MAX_NOISE_RATE = 1e-4


def noise_selectivity(
    rules: list[Rule], lines: list[str] | None = None, *, include_structure: bool = True
) -> list[str]:
    """How often each literal makes a fast-path window on the noise corpus of healthy
    logs (triage/engine/noise.py): a clause whose regex has a native form
    (`native_superset`) makes one only where that pattern matches too, so a common
    literal with a selective regex passes; the structure triggers and the literals of a
    regex with no native form are counted as they are. Over MAX_NOISE_RATE is an error
    naming the rule, the clause and the literal."""
    from triage.engine.noise import noise_lines
    from triage.structure.tables import STRUCTURE_LITERALS

    text = lines if lines is not None else noise_lines()
    noise = _Noise(text)
    out: list[str] = []
    if include_structure:
        for lit in STRUCTURE_LITERALS:
            n = len(noise.starts(lit, False))
            if n > noise.limit:
                out.append(
                    f"triage/structure/tables.py: STRUCTURE_LITERALS: {lit!r} is on {n} of "
                    f"{len(text)} noise lines ({_rate(n, len(text))}; at most 1 in 10,000)"
                )
    for r in rules:
        items = [
            (f"match[{c.index}]", c.literals, c.icase, c.pattern)
            for c in r.clauses
            if c.kind in ("line", "code")
        ]
        items += [
            (f"unless[{i}]", u.literals, u.icase, u.pattern)
            for i, u in enumerate(r.unless)
            if u.scope == "log"
        ]
        for key, lits, icase, pattern in items:
            out += noise.clause(f"{r.path}: {key}", lits, icase, pattern)
    return out


class _Noise:
    """The noise corpus as one buffer, with the lines each literal is on (cached)."""

    def __init__(self, text: list[str]) -> None:
        self.n = len(text)
        self.buf = "\n".join(text).encode()
        self.low = self.buf.lower()
        self.limit = max(1, int(len(text) * MAX_NOISE_RATE))
        self._cache: dict[tuple[bytes, bool], list[int]] = {}

    def starts(self, lit: str, icase: bool) -> list[int]:
        key = (lit.encode(), icase)
        if key not in self._cache:
            hay = self.low if icase else self.buf
            self._cache[key] = _hit_lines(hay, key[0].lower() if icase else key[0])
        return self._cache[key]

    def clause(self, where: str, lits: tuple[str, ...], icase: bool, pattern: Any) -> list[str]:
        """The errors of one clause's literals: each on too many noise lines (counted
        where the clause's native regex matches too, when it has one)."""
        from triage.ingest.supersets import native_superset

        buf = self.buf
        native = native_superset(pattern.pattern) if pattern is not None else None
        confirm = None
        if native is not None:
            try:
                confirm = re.compile(native.encode(), re.IGNORECASE if icase else 0)
            except re.error:
                confirm = None
        out: list[str] = []
        for lit in lits:
            hits = self.starts(lit, icase)
            if confirm is not None:
                hits = [s for s in hits if confirm.search(buf, s, _line_end(buf, s))]
                what = "with its regex matching"
            else:
                what = (
                    "(its regex has no native form, so every hit is a window)" if pattern is not None else ""
                )
            if len(hits) > self.limit:
                first = buf[hits[0] : _line_end(buf, hits[0])].decode(errors="replace")[:120]
                out.append(
                    f"{where}.literal: {lit!r} is on {len(hits)} of {self.n} "
                    f"noise lines {what} ({_rate(len(hits), self.n)}; at most 1 in "
                    f"10,000), e.g. {first!r}".replace("  ", " ")
                )
        return out


def _hit_lines(hay: bytes, needle: bytes) -> list[int]:
    """Start offsets of the lines of `hay` that hold `needle`."""
    out: list[int] = []
    i = hay.find(needle)
    while i >= 0:
        out.append(hay.rfind(b"\n", 0, i) + 1)
        nl = hay.find(b"\n", i)
        if nl < 0:
            break
        i = hay.find(needle, nl + 1)
    return out


def _line_end(buf: bytes, start: int) -> int:
    nl = buf.find(b"\n", start)
    return len(buf) if nl < 0 else nl


def _rate(n: int, total: int) -> str:
    return f"1 in {total // n:,}" if n else "none"


def _healthy_lines() -> list[str]:
    from triage.engine.catalog import fixtures_dir

    root = fixtures_dir()
    if root is None:
        return []
    lines: list[str] = []
    for log in sorted((root / "none").glob("*/input.log")):
        lines.extend(log.read_text(encoding="utf-8", errors="replace").splitlines())
    return lines


def _selectivity(rules: list[Rule]) -> list[str]:
    """A literal is the prefilter's only chance to skip a line: a common word, or one
    found on many lines of healthy logs, makes every line a candidate."""
    healthy = _healthy_lines()
    out: list[str] = []
    for r in rules:
        for c in r.clauses:
            for lit in c.literals:
                if lit.strip().lower() in COMMON_WORDS:
                    out.append(f"{r.path}: match[{c.index}].literal: {lit!r} is a common word, not selective")
                    continue
                if healthy:
                    hay = (x.lower() for x in healthy) if c.icase else iter(healthy)
                    needle = lit.lower() if c.icase else lit
                    hits = sum(1 for x in hay if needle in x)
                    if hits > 3 and hits / len(healthy) > MAX_HEALTHY_HIT_RATE:
                        out.append(
                            f"{r.path}: match[{c.index}].literal: {lit!r} is on {hits} of "
                            f"{len(healthy)} healthy lines (> {MAX_HEALTHY_HIT_RATE:.0%})"
                        )
    return out


def _healthy_corpus(rules: list[Rule]) -> list[str]:
    """Rules must stay quiet (nothing likely or confirmed) on the shipped healthy logs."""
    from triage.engine import analyze
    from triage.engine.catalog import fixtures_dir

    root = fixtures_dir()
    if root is None or not (root / "none").is_dir():
        return []
    out: list[str] = []
    for log in sorted((root / "none").glob("*/input.log")):
        rep = analyze([str(log)], rules=rules)
        for d in rep.diagnoses:
            if d.confidence.label in ("likely", "confirmed"):
                out.append(f"{d.rule}: fires ({d.confidence.label}) on healthy log {log}")
    return out


def grep_patterns(rules: list[Rule]) -> list[str]:
    """The rules' line regexes as POSIX ERE for `grep -E -f` (approximate where the
    regex module's syntax has no ERE form)."""
    pats: list[str] = []
    for r in rules:
        for c in r.clauses:
            if c.kind == "line" and c.pattern is not None:
                pats.append(_to_ere(c.pattern.pattern))
    return list(dict.fromkeys(pats))


def _to_ere(p: str) -> str:
    p = re.sub(r"\(\?:", "(", p)
    p = re.sub(r"\(\?P<\w+>", "(", p)
    p = re.sub(r"\(\?i\)", "", p)
    p = p.replace(r"\d", "[0-9]").replace(r"\s", "[[:space:]]").replace(r"\w", "[[:alnum:]_]")
    p = p.replace(r"\b", "")
    p = re.sub(r"\(\?[=!<][^)]*\)", "", p)
    return p
