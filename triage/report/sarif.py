"""The SARIF 2.1.0 view: for GitHub code scanning and other SARIF consumers.

One rule per signature present (id, name, descriptions, helpUri from the rule's docs,
the category), one result per diagnosis at its first evidence line. Levels: confirmed
-> error, likely -> warning, possible -> note; a consequence is a note. Fingerprints
hash the signature and the evidence text with numbers masked, so the same failure
seen again (another step, another rank, another line of the log) is the same alert.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import quote

from triage import __version__
from triage.model import Diagnosis, Evidence, Report
from triage.report.common import clip, code_span, describe_log, level, location, log_evidence

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
VERSION = "2.1.0"
MAX_RELATED = 10


def rule_name(signature: str) -> str:
    """SARIF rule names are identifiers: cuda-oom -> CudaOom."""
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", signature) if p)


def artifact_uri(path: str) -> str:
    """A path as a URI reference: relative paths stay relative (SARIF viewers resolve
    them against the repository); absolute paths become file:// URIs."""
    if PureWindowsPath(path).drive:
        return PureWindowsPath(path).as_uri()
    p = PurePosixPath(path)
    if p.is_absolute():
        return p.as_uri()
    return quote(str(p), safe="/._-~")


def fingerprint(d: Diagnosis) -> str:
    """Stable across runs and across line shifts: signature + evidence text, digits
    masked (a new rank, step or address is still the same failure)."""
    ev = log_evidence(d)
    text = ev[0].text if ev else d.summary
    norm = re.sub(r"\d+", "0", re.sub(r"\s+", " ", text)).strip()
    return hashlib.sha256(f"{d.signature}\0{d.role}\0{norm}".encode()).hexdigest()[:32]


def _rule(d: Diagnosis) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "id": d.signature,
        "name": rule_name(d.signature),
        "shortDescription": {"text": d.title or d.signature},
        "fullDescription": {"text": d.summary or d.title or d.signature},
        "defaultConfiguration": {"level": "error"},
        "properties": {"category": d.category, "tags": [t for t in ("triage", d.category) if t]},
    }
    if d.docs:
        rule["helpUri"] = d.docs[0]
    if d.remedies or d.checks:
        text = [f"Fix: {x}" for x in d.remedies] + [f"Check: {x}" for x in d.checks]
        md = [f"- Fix: {x}" for x in d.remedies] + [f"- Check: {code_span(x)}" for x in d.checks]
        rule["help"] = {"text": "\n".join(text), "markdown": "\n".join(md)}
    return rule


def _location(path: str | None, line: int | None, snippet: str | None = None) -> dict[str, Any]:
    phys: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(path or "<unknown>")}}
    if line is not None and line >= 1:
        region: dict[str, Any] = {"startLine": line}
        if snippet:
            region["snippet"] = {"text": snippet}
        phys["region"] = region
    return {"physicalLocation": phys}


def _message(d: Diagnosis) -> str:
    bits = [f"{d.title} ({d.signature}, {d.confidence.label})"]
    if d.role == "consequence" and d.explained_by:
        bits.append(f"A consequence of {d.explained_by}.")
    elif d.role == "contributing":
        bits.append("Contributing, not the root cause.")
    if d.summary:
        bits.append(d.summary)
    ev = log_evidence(d)
    if ev:
        bits.append(f"Evidence: {clip(ev[0].text, 300)}")
    facts = [e.text for e in d.evidence if e.source == "snapshot"]
    bits += [f"Evidence: {f}" for f in facts[:3]]
    bits += [f"Against: {e.text}" for e in d.counter_evidence[:3]]
    if d.role == "consequence":
        return " ".join(_sentence(b) for b in bits)  # checks and fixes belong to the cause
    if d.checks:
        bits.append(f"Check: {d.checks[0]}")
    if d.remedies:
        bits.append(f"Fix: {d.remedies[0]}")
    return " ".join(_sentence(b) for b in bits)


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?", ":")) else text + "."


def _result(d: Diagnosis, r: Report, index: int) -> dict[str, Any]:
    path, line = location(d, r)
    ev = log_evidence(d)
    res: dict[str, Any] = {
        "ruleId": d.signature,
        "ruleIndex": index,
        "level": level(d),
        "message": {"text": _message(d)},
        "locations": [_location(path, line, ev[0].text if ev else None)],
        "partialFingerprints": {"triageSignature/v1": fingerprint(d)},
        "properties": {
            "confidence": d.confidence.label,
            "role": d.role,
            "score": d.score,
            "category": d.category,
            "rank": ev[0].rank if ev else None,
            "explainedBy": d.explained_by,
        },
    }
    related = [
        _location(e.source, e.line, e.text) | {"id": i, "message": {"text": clip(e.text, 300)}}
        for i, e in enumerate(ev[1 : MAX_RELATED + 1], 1)
    ]
    if related:
        res["relatedLocations"] = related
    return res


def _error(e: Evidence | None) -> dict[str, Any] | None:
    if e is None:
        return None
    return {"text": e.text, "source": e.source, "line": e.line, "rank": e.rank}


def sarif_dict(r: Report) -> dict[str, Any]:
    """The SARIF log as a dict (render() serialises it)."""
    rules: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    for d in r.diagnoses:
        if d.signature not in index:
            index[d.signature] = len(rules)
            rules.append(_rule(d))
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "triage",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": rules,
            }
        },
        "results": [_result(d, r, index[d.signature]) for d in r.diagnoses],
        "artifacts": [{"location": {"uri": artifact_uri(s.path)}} for s in r.sources],
        "columnKind": "unicodeCodePoints",
        "properties": {
            "log": describe_log(r),
            "endState": r.end_state.kind,
            "lastPhase": r.end_state.last_phase,
            "notes": list(r.notes),
            "ruledOut": [{"signature": x.signature, "because": x.because} for x in r.ruled_out],
            "lastError": _error(r.last_error),
            "rootError": _error(r.root_error),
            "environment": dict(r.evidence_summary),
        },
    }
    return {"$schema": SCHEMA_URI, "version": VERSION, "runs": [run]}


def render(r: Report) -> str:
    """SARIF 2.1.0 JSON text."""
    return json.dumps(sarif_dict(r), indent=2, ensure_ascii=False, default=str) + "\n"
