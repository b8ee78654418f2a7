"""exceptions: what the log says failed, for the report: the last exception with a
traceback and the root of its chain (recognised by a rule or not), their frames, and
the findings that mark where a rank failed (for the timeline)."""

from __future__ import annotations

from triage.engine.rules import Rule
from triage.model import Diagnosis, Evidence, ExceptionInfo, Finding
from triage.structure import Structure, chain_root


def error_frames(st: Structure) -> tuple[str, ...]:
    """The frames of the exception `log_errors` names: the root's, else the last one's."""
    last, root = _last_and_root(st)
    for e in (root, last):
        if e is not None and e.frames:
            return e.frames
    return ()


def _last_and_root(st: Structure) -> tuple[ExceptionInfo | None, ExceptionInfo | None]:
    excs = [e for e in st.exceptions if e.has_traceback] or st.exceptions
    if not excs:
        return None, None
    last = excs[-1]
    return last, chain_root(excs, last)


def log_errors(st: Structure) -> tuple[Evidence | None, Evidence | None]:
    """The last exception with a traceback (else the last one named), and the first
    exception of its chain: what the log says failed, recognised or not."""
    last, root = _last_and_root(st)
    if last is None or root is None:
        return None, None

    def ev(e: ExceptionInfo) -> Evidence:
        msg = e.message.split("\n", 1)[0]
        return Evidence(
            text=f"{e.type}: {msg}" if msg else e.type,
            source=e.line.source,
            line=e.line.lineno,
            rank=e.line.rank,
            context=e.frames[-2:],
        )

    return ev(last), (ev(root) if root is not last else None)


def error_findings(findings: list[Finding], rules: list[Rule], diags: list[Diagnosis]) -> list[Finding]:
    """The findings that mark where a rank failed, for the timeline: those of an
    error-level rule that made it into the diagnoses (a warning, or a finding the reasoner
    dropped, is not a failure)."""
    kept = {d.rule for d in diags if not d.fallback} | {d.signature for d in diags if not d.fallback}
    errors = {r.id for r in rules if r.severity == "error"}
    return [f for f in findings if f.rule_id in kept and f.rule_id in errors]
