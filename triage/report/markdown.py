"""The Markdown view: ready to paste into an issue or a CI job summary.

Verdict first, a table of the diagnoses, then for each cause its evidence (a code block
with source:line and rank), what it explains, the checks (a shell block to copy), the
fixes and docs; then consequences, what was ruled out, notes, and an environment table
when the report carries evidence facts. Log text only ever appears inside code, so a
log cannot inject Markdown, HTML or @-mentions into the issue.
"""

from __future__ import annotations

import re

from triage import __version__
from triage.model import Confidence, Diagnosis, Evidence, Report
from triage.report.common import (
    causes,
    clip,
    code_fence,
    code_span,
    describe_log,
    log_evidence,
    stop_state,
    verdict,
    where,
)

MAX_EVIDENCE_TEXT = 1000
ROLE_WORDS = {"root-cause": "root cause", "contributing": "contributing", "consequence": "consequence"}


_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def prose(text: str) -> str:
    """Rule-authored text (summaries, fixes, notes): keep it from being read as HTML.
    Code spans the author wrote (`2>&1 | tee`) stay verbatim: entities are not decoded
    inside code."""
    out: list[str] = []
    pos = 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_escape_html(text[pos : m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_escape_html(text[pos:]))
    return "".join(out)


def _escape_html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cell(text: str) -> str:
    """Text for a table cell: one line, pipes escaped."""
    return prose(text).replace("\n", " ").replace("|", "\\|")


def _title(r: Report) -> list[str]:
    top = r.top
    if stop_state(r) is not None and top is not None and top.confidence == Confidence.POSSIBLE:
        # how the log stops is a state, not a cause: say what is true, not "most likely"
        return [f"### triage: {prose(verdict(r).split(':', 1)[0].lower())}"]
    if top is None:
        head = (
            "No failure found" if r.end_state.kind == "clean-exit" else "No known failure signature matched"
        )
        return [f"### triage: {head}"]
    if top.role != "root-cause" or top.confidence == Confidence.POSSIBLE:
        return [
            f"### triage: not proven; most likely {prose(top.title)} "
            f"({code_span(top.signature)}, {top.confidence.label})"
        ]
    return [f"### triage: {prose(top.title)} ({code_span(top.signature)}, **{top.confidence.label}**)"]


def _sources(r: Report) -> str:
    names = ", ".join(code_span(s.path) for s in r.sources[:5])
    if len(r.sources) > 5:
        names += f" and {len(r.sources) - 5} more"
    return f"{names}: {describe_log(r)}" if names else describe_log(r)


def _table(r: Report) -> list[str]:
    rows = ["| # | Signature | Diagnosis | Confidence | Role |", "|--:|---|---|---|---|"]
    for i, d in enumerate([d for d in r.diagnoses if not d.fallback], 1):
        role = ROLE_WORDS.get(d.role, d.role)
        if d.role == "consequence" and d.explained_by:
            role = f"consequence of {code_span(d.explained_by)}"
        conf = (
            f"**{d.confidence.label}**"
            if d.confidence == Confidence.CONFIRMED and d.role != "consequence"
            else d.confidence.label
        )
        rows.append(f"| {i} | {code_span(d.signature)} | {cell(d.title)} | {conf} | {role} |")
    return rows


def _evidence_block(evidence: list[Evidence], context: bool) -> list[str]:
    lines: list[str] = []
    for e in evidence:
        if context:
            lines += [f"      {clip(c, 300)}" for c in e.context[-3:]]
        lines.append(f"{where(e)} | {clip(e.text, MAX_EVIDENCE_TEXT)}")
    body = "\n".join(lines)
    fence = code_fence(body)
    return [f"{fence}text", body, fence]


def _diagnosis(i: int, d: Diagnosis, r: Report) -> list[str]:
    out = ["", f"#### {i}. {code_span(d.signature)}: {prose(d.title)} ({d.confidence.label})"]
    if d.role == "contributing":
        out.append("_Contributing, not the root cause._")
    if d.summary:
        out += ["", prose(d.summary)]
    ev = log_evidence(d)
    if ev:
        out += ["", "**Evidence**", "", *_evidence_block(ev, context=True)]
    facts = [e for e in d.evidence if e not in ev]
    if facts:
        out += [""] + [f"- supports: {prose(e.text)}" for e in facts]
    if d.counter_evidence:
        out += [""] + [f"- against: {prose(e.text)}" for e in d.counter_evidence]
    explained = [x.signature for x in r.diagnoses if x.explained_by == d.signature]
    if explained:
        out += ["", "**Explains:** " + ", ".join(code_span(s) for s in explained)]
    if d.checks:
        body = "\n".join(d.checks)
        fence = code_fence(body)
        out += ["", "**Checks** (run first, best first)", "", f"{fence}sh", body, fence]
    if d.remedies:
        out += ["", "**Fixes**", ""] + [f"- {prose(x)}" for x in d.remedies]
    if d.docs:
        out += ["", "**Docs:** " + ", ".join(f"<{x}>" for x in d.docs)]
    return out


def _consequence(d: Diagnosis) -> list[str]:
    by = f", explained by {code_span(d.explained_by)}" if d.explained_by else ""
    out = ["", f"- {code_span(d.signature)}: {prose(d.title)} ({d.confidence.label}{by})"]
    ev = log_evidence(d)
    if ev:
        block = "\n".join(_evidence_block(ev[:3], context=False))
        out += ["", *("  " + x for x in block.split("\n"))]
    return out


def _environment(r: Report) -> list[str]:
    """Facts from the evidence snapshot: the engine's summary, else the facts that the
    diagnoses cite."""
    rows: list[tuple[str, str]] = list(r.evidence_summary.items())
    if not rows:
        seen: set[str] = set()
        for d in r.diagnoses:
            for e in (*d.evidence, *d.counter_evidence):
                if e.source == "snapshot" and e.text not in seen:
                    seen.add(e.text)
                    rows.append((e.fact or "snapshot", e.text))
    if not rows:
        return []
    out = ["", "### Environment", "", "| Fact | Value |", "|---|---|"]
    out += [f"| {code_span(k)} | {cell(str(v))} |" for k, v in rows]
    return out


def _tells(check: str, signature: str) -> str:
    """A check with the hypothesis it tests, as a shell comment."""
    return f"{check} ({signature})" if "#" in check else f"{check}   # {signature}"


def render(r: Report) -> str:
    """Markdown text for an issue or a job summary."""
    out = _title(r)
    out += ["", _sources(r)]
    top = r.top
    if top is not None and top.role == "root-cause" and top.summary and not top.fallback:
        out += ["", *("> " + line for line in prose(top.summary).splitlines())]
    state = stop_state(r)
    if state is not None:
        out += ["", prose(verdict(r))]
    if any(not d.fallback for d in r.diagnoses):
        out += ["", *_table(r)]
    elif r.last_error is not None:
        errs = [e for e in (r.root_error, r.last_error) if e is not None]
        out += ["", "No rule recognises it; the log ends with:", "", *_evidence_block(errs, context=True)]
    roots = causes(r)
    cons = [d for d in r.diagnoses if d.role == "consequence"]
    if roots:
        single = len(roots) == 1 and state is None
        out += ["", "### Diagnosis" if single else "### Possible causes, best first"]
        for i, d in enumerate(roots, 1):
            out += _diagnosis(i, d, r)
    if cons:
        out += ["", "### Consequences (explained by the cause above)"]
        for d in cons:
            out += _consequence(d)
    if len(roots) > 1 and any(d.checks for d in roots):
        body = "\n".join(_tells(d.checks[0], d.signature) for d in roots[:4] if d.checks)
        fence = code_fence(body)
        out += ["", "### To tell them apart, run first", "", f"{fence}sh", body, fence]
    if state is not None and state.checks:
        body = "\n".join(state.checks)
        fence = code_fence(body)
        out += ["", "### What would tell", "", f"{fence}sh", body, fence]
        out += [""] + [f"- {prose(x)}" for x in state.remedies]
    if r.ruled_out:
        out += ["", "### Ruled out", ""]
        out += [f"- {code_span(x.signature)}: {prose(x.because)}" for x in r.ruled_out]
    if r.notes:
        out += ["", "### Notes", ""] + [f"- {prose(n)}" for n in r.notes]
    out += _environment(r)
    out += ["", f"<sub>triage {__version__}</sub>"]
    return "\n".join(out) + "\n"
