"""Evidence predicates: a small declarative vocabulary over snapshot facts.

    package.accelerate absent          package.transformers >= 5.0
    gpu.all.memory_used_mib == 0       kernel.xid contains 79
    log.truncated                      log.last_phase == model-loading

A fact's value is a string, number, bool, list, None (absent) or `Unknown` (could not
be read). A predicate over an unknown fact is never true: unknown proves nothing, and a
fact the pipeline never produces is an error at load (`check_vocabulary`), not a
predicate that silently never holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from triage.model import Unknown
from triage.vocabulary import FACT_VALUES, did_you_mean, fact_names, is_fact

OPS = ("==", "!=", ">=", "<=", ">", "<", "contains", "absent", "present", "unknown", "known")
_PRED_RE = re.compile(
    r"^\s*(?P<fact>[a-z][\w.\-]*)\s*"
    r"(?:(?P<op>==|!=|>=|<=|>|<|contains|absent|present|unknown|known)\s*(?P<value>.*?))?\s*$"
)
_VERSION_RE = re.compile(r"^\d+(?:\.\d+)*")


@dataclass(frozen=True)
class Predicate:
    fact: str
    op: str
    value: str = ""

    def __str__(self) -> str:
        return f"{self.fact} {self.op} {self.value}".strip()


def parse_predicates(src: Any) -> list[Predicate]:
    """A string ("a and b") or a list of strings -> predicates, all of which must hold."""
    if isinstance(src, str):
        parts = [s for s in re.split(r"\s+and\s+", src) if s.strip()]
    elif isinstance(src, list) and all(isinstance(x, str) for x in src):
        parts = list(src)
    else:
        raise ValueError("must be a predicate string or a list of them")
    if not parts:
        raise ValueError("empty predicate")
    out = []
    for part in parts:
        m = _PRED_RE.match(part)
        if not m:
            raise ValueError(f"cannot parse predicate {part!r}")
        op = m.group("op") or "true"
        value = (m.group("value") or "").strip()
        if op in ("absent", "present", "unknown", "known", "true") and value:
            raise ValueError(f"{op!r} takes no value in {part!r}")
        if op not in ("absent", "present", "unknown", "known", "true") and not value:
            raise ValueError(f"{op!r} needs a value in {part!r}")
        out.append(Predicate(m.group("fact"), op, value))
    return out


def check_vocabulary(preds: list[Predicate] | tuple[Predicate, ...]) -> None:
    """Every predicate names a declared fact (triage.vocabulary), and a fact whose values
    are vocabulary (a phase, an end state) is compared with a declared value; ValueError
    with the closest name otherwise."""
    for pred in preds:
        if not is_fact(pred.fact):
            raise ValueError(f"unknown fact {pred.fact!r}{did_you_mean(pred.fact, fact_names())}")
        values = FACT_VALUES.get(pred.fact)
        if values and pred.op in ("==", "!=") and pred.value not in values:
            raise ValueError(
                f"{pred.fact} is never {pred.value!r}"
                f"{did_you_mean(pred.value, values)}; one of {', '.join(values)}"
            )


def version_tuple(v: Any) -> tuple[int, ...] | None:
    m = _VERSION_RE.match(str(v).strip())
    if not m:
        return None
    return tuple(int(x) for x in m.group(0).split("."))


def _cmp(actual: Any, op: str, want: str) -> bool:
    if isinstance(actual, Unknown) or actual is None:
        return False
    if op == "contains":
        if isinstance(actual, list | tuple | set):
            return any(_eq(a, want) for a in actual)
        return want in str(actual)
    if op in ("==", "!="):
        res = _eq(actual, want)
        return res if op == "==" else not res
    a, w = _ordered(actual, want)
    if a is None or w is None:
        return False
    return {">=": a >= w, "<=": a <= w, ">": a > w, "<": a < w}[op]


def _eq(actual: Any, want: str) -> bool:
    if isinstance(actual, bool):
        return str(actual).lower() == want.lower()
    if isinstance(actual, int | float):
        try:
            return float(actual) == float(want)
        except ValueError:
            return False
    a, w = version_tuple(actual), version_tuple(want)
    if a is not None and w is not None and _VERSION_RE.fullmatch(want):
        n = len(w)
        return a[:n] == w
    return str(actual) == want


def _ordered(actual: Any, want: str) -> tuple[Any, Any]:
    if isinstance(actual, int | float) and not isinstance(actual, bool):
        try:
            return float(actual), float(want)
        except ValueError:
            return None, None
    a, w = version_tuple(actual), version_tuple(want)
    if a is None or w is None:
        return None, None
    n = max(len(a), len(w))
    return a + (0,) * (n - len(a)), w + (0,) * (n - len(w))


def holds(pred: Predicate, facts: Mapping[str, Any]) -> bool:
    """Does the predicate hold on these facts? `gpu.all.X` / `gpu.any.X` quantify over
    the list the fact holds."""
    if pred.op in ("unknown", "known"):
        v = facts.get(pred.fact, Unknown("not collected"))
        return isinstance(v, Unknown) == (pred.op == "unknown")
    if pred.fact not in facts:
        return False
    value = facts[pred.fact]
    if isinstance(value, Unknown):
        return False
    if pred.op == "absent":
        return value is None or value is False
    if pred.op == "present":
        return value is not None and value is not False
    if pred.op == "true":
        if isinstance(value, list):
            return bool(value)
        return bool(value)
    if ".all." in pred.fact or ".any." in pred.fact:
        if not isinstance(value, list) or not value:
            return False
        test = all if ".all." in pred.fact else any
        return test(_cmp(v, pred.op, pred.value) for v in value)
    return _cmp(value, pred.op, pred.value)


def all_hold(preds: tuple[Predicate, ...], facts: Mapping[str, Any]) -> bool:
    return all(holds(p, facts) for p in preds)
