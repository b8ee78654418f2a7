"""The GitHub Actions view: workflow commands that annotate the run.

    ::error file=train.log,line=45,title=cuda-oom%3A CUDA out of memory (confirmed)::...

One annotation per diagnosis: `error` for a confirmed cause, `warning` for a likely
one, `notice` for a possible one and for consequences; notes become notices. GitHub
unescapes `%25 %0D %0A` in the message, and also `%3A %2C` in properties (where `:`
and `,` would end a property), so those are escaped here.
"""

from __future__ import annotations

from triage.model import Diagnosis, Report
from triage.report.common import clip, describe_log, level, location, log_evidence, verdict

COMMAND = {"error": "error", "warning": "warning", "note": "notice"}
MAX_MESSAGE = 4000  # GitHub truncates long annotations; keep the head


def escape_data(text: str) -> str:
    """Escape a workflow-command message (what follows `::`)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow-command property value (file=, title=)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, **props: str | int | None) -> str:
    """One workflow command line: `::kind k=v,k=v::message`."""
    given = [f"{k}={escape_property(str(v))}" for k, v in props.items() if v not in (None, "")]
    head = f"::{kind} {','.join(given)}" if given else f"::{kind}"
    return f"{head}::{escape_data(clip(message, MAX_MESSAGE))}"


def _message(d: Diagnosis) -> str:
    lines = []
    if d.role == "consequence" and d.explained_by:
        lines.append(f"A consequence of {d.explained_by}.")
    if d.summary:
        lines.append(d.summary)
    ev = log_evidence(d)
    if ev:
        rank = f" (rank {ev[0].rank})" if ev[0].rank is not None else ""
        lines.append(f"Evidence{rank}: {clip(ev[0].text, 500)}")
    lines += [f"Evidence: {e.text}" for e in d.evidence if e.source == "snapshot"][:3]
    lines += [f"Against: {e.text}" for e in d.counter_evidence][:3]
    if d.role != "consequence":
        lines += [f"Check: {c}" for c in d.checks[:2]]
        lines += [f"Fix: {x}" for x in d.remedies[:2]]
    return "\n".join(lines)


def render(r: Report) -> str:
    """Workflow command lines, one per diagnosis and note."""
    out: list[str] = []
    for d in r.diagnoses:
        path, line = location(d, r)
        title = f"{d.signature}: {d.title} ({d.confidence.label})"
        out.append(command(COMMAND[level(d)], _message(d), file=path, line=line, title=title))
    for note in r.notes:
        out.append(command("notice", note, title="triage note"))
    if not r.diagnoses:
        err = r.last_error
        if err is not None and err.source not in (None, "snapshot"):
            # an error no rule recognises still deserves a look: a warning at its line
            out.append(
                command(
                    "warning",
                    f"{verdict(r)} ({describe_log(r)})",
                    file=err.source,
                    line=err.line,
                    title="triage: unrecognised error",
                )
            )
        else:
            out.append(command("notice", f"{verdict(r)} ({describe_log(r)})", title="triage"))
    return "\n".join(out) + "\n"
