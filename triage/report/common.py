"""Small helpers shared by the text views (Markdown, SARIF, JUnit, GitHub): where a
diagnosis points in the log, how severe it is for a CI system, and the one-line
description of the log. No formatting of any one view lives here."""

from __future__ import annotations

import re

from triage.model import Confidence, Diagnosis, Evidence, Report

END_WORDS = {
    "clean-exit": "ended cleanly",
    "traceback": "ends in a traceback",
    "error": "ends in an error",
    "cut-mid-line": "cut off mid-line",
    "no-terminal-event": "stops with no terminal event",
    "empty": "empty",
}

# CI severity of a diagnosis: only what the log proves (or makes likely) fails a build.
LEVEL = {Confidence.CONFIRMED: "error", Confidence.LIKELY: "warning", Confidence.POSSIBLE: "note"}


def level(d: Diagnosis) -> str:
    """error / warning / note: by confidence; a consequence is a note (its cause leads)."""
    return "note" if d.role == "consequence" else LEVEL[d.confidence]


def is_failure(d: Diagnosis) -> bool:
    """A cause that a CI gate should fail on: a root cause at likely or confirmed."""
    return d.role != "consequence" and d.confidence >= Confidence.LIKELY


def log_evidence(d: Diagnosis) -> list[Evidence]:
    """The evidence lines that are lines of a log (not facts from a snapshot)."""
    return [e for e in d.evidence if e.source not in (None, "snapshot") and e.line is not None]


def location(d: Diagnosis, r: Report) -> tuple[str | None, int | None]:
    """Where a diagnosis points: its first log line, else the end of the log (an inference
    from a cut-off log points at where the log stops), else the first source."""
    ev = log_evidence(d)
    if ev:
        return ev[0].source, ev[0].line
    if r.end_state.source and r.end_state.line:
        return r.end_state.source, r.end_state.line
    return (r.sources[0].path, None) if r.sources else (None, None)


def where(e: Evidence) -> str:
    """`path:line rank N`, or `snapshot` for a fact."""
    if e.source == "snapshot" or e.source is None:
        return "snapshot" if e.fact or e.source == "snapshot" else ""
    loc = f"{e.source}:{e.line}" if e.line is not None else e.source
    if e.rank is not None:
        loc += f" rank {e.rank}"
    return loc


def ranges(ranks: tuple[int, ...] | list[int]) -> str:
    """0,1,2,3,5 -> "0-3,5"."""
    out: list[str] = []
    items = sorted(ranks)
    i = 0
    while i < len(items):
        j = i
        while j + 1 < len(items) and items[j + 1] == items[j] + 1:
            j += 1
        out.append(str(items[i]) if i == j else f"{items[i]}-{items[j]}")
        i = j + 1
    return ",".join(out)


def describe_log(r: Report) -> str:
    """"104 lines; ranks 0-7; ends in a traceback while training"."""
    bits = [f"{sum(s.lines for s in r.sources)} lines"]
    if r.ranks:
        bits.append(f"ranks {ranges(r.ranks)}")
    end = END_WORDS.get(r.end_state.kind, r.end_state.kind)
    if r.end_state.last_phase and r.end_state.kind != "clean-exit":
        end += f" while {r.end_state.last_phase.replace('-', ' ')}"
    bits.append(end)
    return "; ".join(bits)


def verdict(r: Report) -> str:
    """One sentence: the top diagnosis and how sure it is, or that nothing matched (and
    then the error the log ends with, recognised or not)."""
    top = r.top
    if top is None:
        if r.end_state.kind == "clean-exit":
            return "No failure found: the run ended cleanly."
        if r.last_error is None:
            return "No known failure signature matched."
        text = (f"No known failure signature matched. The log ends with "
                f"{clip(r.last_error.text, 200)} ({where(r.last_error)})")
        if r.root_error is not None:
            text += f", caused by {clip(r.root_error.text, 200)} ({where(r.root_error)})"
        return text + "."
    if top.role != "root-cause" or top.confidence == Confidence.POSSIBLE:
        return f"Not proven. Most likely: {top.title} ({top.signature}), {top.confidence.label}."
    return f"{top.title} ({top.signature}, {top.confidence.label})."


def code_span(text: str) -> str:
    """Markdown inline code that survives backticks inside the text."""
    text = text.replace("\n", " ")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest else ""  # CommonMark strips one space each side
    return f"{fence}{pad}{text}{pad}{fence}"


def code_fence(text: str) -> str:
    """A fence longer than any backtick run in `text`, for a fenced code block."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=0)
    return "`" * max(3, longest + 1)


def clip(text: str, limit: int) -> str:
    """At most `limit` characters, with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
