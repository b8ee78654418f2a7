"""The console view: a short doctor's note. Verdict first, then the evidence, what it
explains, what else it could be, the check that tells, and the fix.

The verdict and the description of the log are worded by report/common.py, as in every
other view; only their styling and the short evidence locations are the console's."""

from __future__ import annotations

from typing import IO

from rich.console import Console
from rich.text import Text

from triage.model import Confidence, Diagnosis, Evidence, Report
from triage.report.common import causes, clip, describe_log, ranges, stop_state, verdict_of

CONF_STYLE = {Confidence.CONFIRMED: "bold red", Confidence.LIKELY: "bold yellow", Confidence.POSSIBLE: "cyan"}


def _where(e: Evidence, single: bool = False) -> str:
    """Where an evidence line is, short for a terminal: `line N` when the report reads one
    file (the header names it), else `file.log:N`; then `rank N`. The CI formats write
    the whole path (common.where), which a terminal line has no room for."""
    if e.source == "snapshot":
        return "snapshot"
    src = e.source or ""
    if single or not src:
        loc = f"line {e.line}" if e.line is not None else src
    else:
        loc = f"{src.rsplit('/', 1)[-1]}:{e.line}" if e.line is not None else src
    if e.rank is not None:
        loc += f" rank {e.rank}"
    return loc


def _header(r: Report) -> Text:
    """`triage  FILES  (N lines; ranks ...; how it ends)`: the log described as every
    view describes it."""
    names = ", ".join(s.path for s in r.sources[:3]) + (" ..." if len(r.sources) > 3 else "")
    t = Text()
    t.append("triage  ", style="bold")
    t.append(names, style="bold blue")
    t.append(f"  ({describe_log(r)})")
    return t


def _verdict(r: Report) -> Text:
    """The verdict in the words of every other view (common.verdict_of), styled: a proven
    cause's title in its confidence's colour with its summary under it, nothing found in
    green, otherwise the kind of answer ("Not proven. ") in bold."""
    v = verdict_of(r)
    top = r.top
    t = Text()
    if v.kind == "cause" and top is not None:
        t.append(v.head, style=CONF_STYLE[top.confidence])
        t.append(v.rest)
        if top.summary:
            t.append("\n" + top.summary)
    elif v.kind == "clear":
        t.append(str(v), style="green")
    else:
        t.append(v.head, style="bold")
        t.append(v.rest)
    return t


def _diagnosis(i: int, d: Diagnosis, r: Report, verbose: bool) -> list[Text]:
    out: list[Text] = []
    head = Text()
    head.append(f"{i} ", style="bold")
    head.append(d.signature, style="bold")
    head.append(f"  {d.title}  ")
    head.append(d.confidence.label, style=CONF_STYLE[d.confidence])
    if d.role == "consequence" and d.explained_by:
        head.append(f"  consequence of {d.explained_by}", style="dim")
    elif d.role == "contributing":
        head.append("  contributing", style="dim")
    out.append(head)
    single = len(r.sources) == 1
    if d.role == "consequence" and not verbose:
        e = d.evidence[0] if d.evidence else None
        ranks = d.ranks or tuple(sorted({x.rank for x in d.evidence if x.rank is not None}))
        n = max(d.occurrences, len(d.evidence))
        if e is not None:
            line = Text("    > ", style="bold")
            line.append(_where(e, single), style="blue")
            more = f"  (+{n - 1} more" + (f", on ranks {ranges(ranks)})" if ranks else ")")
            line.append("  " + clip(e.text, 160) + (more if n > 1 else ""))
            out.append(line)
        return out
    shown = d.evidence if verbose else d.evidence[:3]
    for e in shown:
        if verbose or d.role == "root-cause":
            for c in e.context[-2:]:
                out.append(Text(f"      {c.strip()[:160]}", style="dim"))
        line = Text("    > ", style="bold")
        line.append(_where(e, single), style="blue")
        line.append("  " + clip(e.text, 400 if verbose else 240))
        out.append(line)
    for e in d.counter_evidence:
        out.append(Text(f"    against: {e.text}", style="yellow"))
    if d.role == "consequence":
        return out
    explained = [x.signature for x in r.diagnoses if x.explained_by == d.signature]
    if explained:
        out.append(Text(f"    explains: {', '.join(explained)}"))
    for c in d.checks[: (None if verbose else 2)]:
        out.append(Text("    check: ", style="bold") + Text(c))
    for fix in d.remedies[: (None if verbose else 2)]:
        out.append(Text("    fix:   ", style="bold green") + Text(fix))
    if verbose:
        for doc in d.docs:
            out.append(Text(f"    docs:  {doc}", style="dim"))
    return out


def _state(console: Console, d: Diagnosis, verbose: bool) -> None:
    """The checks that tell whether a log that just stops is a run still going or one
    that died, and why: shown apart, since how a log ends is not a cause."""
    console.print()
    console.print(Text("What would tell", style="bold underline"))
    for c in d.checks[: (None if verbose else 3)]:
        _print(console, Text("    check: ", style="bold") + Text(c))
    for fix in d.remedies if verbose else ():
        _print(console, Text("    fix:   ", style="bold green") + Text(fix))


def _print(console: Console, t: Text) -> None:
    """Print with a hanging indent: wrapped lines align under the text, not column 0."""
    plain = t.plain
    lead = len(plain) - len(plain.lstrip(" "))
    if not lead:
        console.print(t)
        return
    for piece in t[lead:].wrap(console, max(20, console.width - lead)):
        piece.rstrip()
        console.print(Text(" " * lead) + piece)


def render(
    r: Report,
    file: IO[str] | None = None,
    *,
    width: int | None = None,
    color: bool | None = None,
    verbose: bool = False,
) -> None:
    """Write the note for `r` to `file` (stdout by default): `color` None means colour
    when `file` is a terminal; `verbose` shows every evidence line, check, fix and doc."""
    console = Console(
        file=file,
        width=width,
        force_terminal=color,
        no_color=color is False,
        highlight=False,
        soft_wrap=False,
    )
    console.print(_header(r))
    console.print()
    console.print(_verdict(r))
    roots = causes(r)
    state = stop_state(r)
    _diagnoses(console, r, roots, state, verbose)
    if r.ruled_out:
        console.print()
        console.print(Text("Ruled out", style="bold underline"))
        for x in r.ruled_out:
            console.print(Text(f"  {x.signature}: {x.because}"))
    if len(roots) > 1:
        console.print()
        console.print(Text("To tell them apart, run first:", style="bold"))
        for d in roots[:4]:
            if d.checks:
                _print(console, Text(f"  {d.checks[0]}   ") + Text(f"({d.signature})", style="dim"))
    if state is not None:
        _state(console, state, verbose)
    _footer(console, r, verbose)


def _diagnoses(
    console: Console, r: Report, roots: list[Diagnosis], state: Diagnosis | None, verbose: bool
) -> None:
    """The causes, best first, then the consequences they explain, numbered on."""
    cons = [d for d in r.diagnoses if d.role == "consequence"]
    if roots:
        console.print()
        single = len(roots) == 1 and state is None
        label = "Diagnosis" if single else "Possible causes, best first"
        console.print(Text(label, style="bold underline"))
        for i, d in enumerate(roots, 1):
            for t in _diagnosis(i, d, r, verbose):
                _print(console, t)
    if cons:
        console.print()
        console.print(Text("Consequences (explained by the cause above)", style="bold underline"))
        for i, d in enumerate(cons, len(roots) + 1):
            for t in _diagnosis(i, d, r, verbose):
                _print(console, t)


def _footer(console: Console, r: Report, verbose: bool) -> None:
    """The environment the snapshot read (verbose only), then the engine's notes."""
    if r.evidence_summary and verbose:
        console.print()
        console.print(Text("Environment (snapshot)", style="bold underline"))
        for k, v in r.evidence_summary.items():
            console.print(Text(f"  {k}: {v}"))
    if r.notes:
        console.print()
        for n in r.notes:
            console.print(Text("note: ", style="bold") + Text(n))
