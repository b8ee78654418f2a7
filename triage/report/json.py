"""The `triage.report/1` JSON view (../shared/schemas/report.schema.json)."""

from __future__ import annotations

import json
import math
from typing import Any

from triage.model import Diagnosis, Evidence, Report

SCHEMA = "triage.report/1"


def evidence_dict(e: Evidence) -> dict[str, Any]:
    d: dict[str, Any] = {"source": e.source, "line": e.line, "rank": e.rank, "text": e.text}
    if e.fact is not None:
        d["fact"] = e.fact
    if e.context:
        d["context"] = list(e.context)
    return d


def diagnosis_dict(d: Diagnosis) -> dict[str, Any]:
    return {
        "signature": d.signature,
        "rule": d.rule,
        "title": d.title,
        "category": d.category,
        "confidence": d.confidence.label,
        "score": d.score,
        "role": d.role,
        "summary": d.summary,
        "evidence": [evidence_dict(e) for e in d.evidence],
        "counter_evidence": [evidence_dict(e) for e in d.counter_evidence],
        "explains": list(d.explains),
        "explained_by": d.explained_by,
        "checks": list(d.checks),
        "remedies": list(d.remedies),
        "docs": list(d.docs),
        "ranks": list(d.ranks),
        "occurrences": d.occurrences,
    }


def report_dict(r: Report) -> dict[str, Any]:
    d = _report_dict(r)
    if r.history:  # the crash history's run, fingerprint and recurrences (absent: --no-history)
        d["history"] = r.history
    return d


def _report_dict(r: Report) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "sources": [
            {"path": s.path, "lines": s.lines, "ranks": list(s.ranks), "truncated": s.truncated}
            for s in r.sources
        ],
        "end_state": {
            "kind": r.end_state.kind,
            "last_phase": r.end_state.last_phase,
            "line": r.end_state.line,
            "source": r.end_state.source,
        },
        "diagnoses": [diagnosis_dict(d) for d in r.diagnoses],
        "ruled_out": [{"signature": x.signature, "because": x.because} for x in r.ruled_out],
        "notes": list(r.notes),
        "metrics": {k: _clean(v) for k, v in r.metrics.items() if _scalar(v)},
        "last_error": evidence_dict(r.last_error) if r.last_error else None,
        "root_error": evidence_dict(r.root_error) if r.root_error else None,
        "environment": dict(r.evidence_summary),
    }


def _scalar(v: Any) -> bool:
    return isinstance(v, str | int | float | bool | type(None))


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def render(r: Report) -> str:
    return json.dumps(report_dict(r), indent=2, ensure_ascii=False, allow_nan=False, default=str) + "\n"
