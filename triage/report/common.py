"""Small helpers shared by every view (console, Markdown, SARIF, JUnit, GitHub, HTML):
where a diagnosis points in the log, how severe it is for a CI system, the one-line
description of the log and the verdict, so each is worded once. No formatting of any
one view lives here."""

from __future__ import annotations

import re
from dataclasses import dataclass

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
    """A cause that a CI gate should fail on: a root cause at likely or confirmed (never
    the state of a log that just stops, which is not a cause)."""
    return d.role != "consequence" and not d.fallback and d.confidence >= Confidence.LIKELY


def causes(r: Report) -> list[Diagnosis]:
    """The diagnoses ranked as causes: roots and contributors, without the state of a log
    that just stops (truncated-unknown), which views say apart."""
    return [d for d in r.diagnoses if d.role != "consequence" and not d.fallback]


def stop_state(r: Report) -> Diagnosis | None:
    """The fallback diagnosis that says the log stops with nothing wrong in it, if any."""
    return next((d for d in r.diagnoses if d.fallback), None)


def how_it_stops(r: Report) -> str:
    """ "ends while training (still running, or cut off)": what is true of a log that
    stops with no failure in it, and the two readings that only the machine can tell."""
    phase = r.end_state.last_phase
    during = f" while {phase.replace('-', ' ')}" if phase else ""
    if r.end_state.kind == "cut-mid-line":
        return f"stops mid-line{during} (still being written, or cut off)"
    return f"ends{during} (still running, or cut off)"


def plural(n: int, word: str) -> str:
    """ "1 line", "2 lines"."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


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
    """ "104 lines; ranks 0-7; ends in a traceback while training"."""
    bits = [plural(sum(s.lines for s in r.sources), "line")]
    if r.ranks:
        bits.append(f"ranks {ranges(r.ranks)}")
    end = END_WORDS.get(r.end_state.kind, r.end_state.kind)
    if r.end_state.last_phase and r.end_state.kind != "clean-exit":
        end += f" while {r.end_state.last_phase.replace('-', ' ')}"
    bits.append(end)
    return "; ".join(bits)


@dataclass(frozen=True)
class Verdict:
    """The one verdict every view words the same way, in two parts so a view can style
    them apart: `head` says what kind of answer it is (a proven cause's title, "Not
    proven. ", "No known failure signature matched. "), `rest` the details.

    `kind` is "cause" when the top diagnosis is proven (a root cause at likely or
    confirmed), "clear" when nothing wrong was found and nothing more is said, and
    "open" otherwise (not proven, an unrecognised error, a log that just stops)."""

    kind: str
    head: str
    rest: str = ""

    def __str__(self) -> str:
        return self.head + self.rest


def verdict(r: Report) -> str:
    """One sentence: the top diagnosis and how sure it is, or that nothing matched (and
    then the error the log ends with, recognised or not)."""
    return str(verdict_of(r))


def verdict_of(r: Report) -> Verdict:
    """The verdict of `verdict`, in parts (see `Verdict`)."""
    stops = _stops_with_nothing_proven(r)
    if stops is not None:
        return stops
    top = r.top
    if top is None:
        return _nothing_matched(r)
    if top.role != "root-cause" or top.confidence == Confidence.POSSIBLE:
        return Verdict(
            "open", "Not proven. ", f"Most likely: {top.title} ({top.signature}), {top.confidence.label}."
        )
    return Verdict("cause", top.title, f" ({top.signature}, {top.confidence.label}).")


def _stops_with_nothing_proven(r: Report) -> Verdict | None:
    """A log that just stops, with no cause surer than possible: say what is true of it
    (how the log stops is a state, not a cause), not "most likely"."""
    roots = causes(r)
    if stop_state(r) is None or any(d.confidence > Confidence.POSSIBLE for d in roots):
        return None
    if not roots:
        return Verdict("open", "No failure is in this log: ", f"it {how_it_stops(r)}.")
    named = ", ".join(d.signature for d in roots[:3]) + (", ..." if len(roots) > 3 else "")
    return Verdict(
        "open",
        "No error is in this log: ",
        f"it {how_it_stops(r)}; nothing in it proves a cause. Possible: {named}.",
    )


def _nothing_matched(r: Report) -> Verdict:
    """No diagnosis: a clean end, or the error the log ends with (and its cause) quoted."""
    if r.end_state.kind == "clean-exit":
        return Verdict("clear", "No failure found: the run ended cleanly.")
    if r.last_error is None:
        return Verdict("clear", "No known failure signature matched.")
    rest = f"The log ends with {clip(r.last_error.text, 200)} ({where(r.last_error)})"
    if r.root_error is not None:
        rest += f", caused by {clip(r.root_error.text, 200)} ({where(r.root_error)})"
    return Verdict("open", "No known failure signature matched. ", rest + ".")


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
