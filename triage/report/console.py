"""The console view: a short doctor's note. Verdict first, then the evidence, what it
explains, what else it could be, the check that tells, and the fix."""

from __future__ import annotations

from typing import IO

from rich.console import Console
from rich.text import Text

from triage.model import Confidence, Diagnosis, Evidence, Report
from triage.report.common import END_WORDS, causes, plural, stop_state, verdict

CONF_STYLE = {Confidence.CONFIRMED: "bold red", Confidence.LIKELY: "bold yellow", Confidence.POSSIBLE: "cyan"}


def _where(e: Evidence, single: bool = False) -> str:
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


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _header(r: Report) -> Text:
    names = ", ".join(s.path for s in r.sources[:3]) + (" ..." if len(r.sources) > 3 else "")
    lines = sum(s.lines for s in r.sources)
    bits = [plural(lines, "line")]
    if r.ranks:
        bits.append(f"ranks {_ranges(r.ranks)}")
    end = END_WORDS.get(r.end_state.kind, r.end_state.kind)
    if r.end_state.last_phase and r.end_state.kind != "clean-exit":
        end += f" while {r.end_state.last_phase.replace('-', ' ')}"
    bits.append(end)
    t = Text()
    t.append("triage  ", style="bold")
    t.append(names, style="bold blue")
    t.append(f"  ({'; '.join(bits)})")
    return t


def _ranges(ranks: tuple[int, ...]) -> str:
    out: list[str] = []
    start = prev = ranks[0]
    for r in (*ranks[1:], None):
        if r is not None and r == prev + 1:
            prev = r
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if r is not None:
            start = prev = r
    return ",".join(out)


def _verdict(r: Report) -> Text:
    top = r.top
    t = Text()
    if stop_state(r) is not None and top is not None and top.confidence == Confidence.POSSIBLE:
        # how the log stops is a state, not a cause: say what is true, not "most likely"
        head, _, rest = verdict(r).partition(": ")
        t.append(head + ": ", style="bold")
        t.append(rest)
        return t
    if top is None:
        if r.end_state.kind == "clean-exit":
            t.append("No failure found: the run ended cleanly.", style="green")
        elif r.last_error is not None:
            t.append("No known failure signature matched. ", style="bold")
            t.append(
                f"The log ends with {_clip(r.last_error.text, 200)} "
                f"({_where(r.last_error, len(r.sources) == 1)})"
            )
            if r.root_error is not None:
                t.append(
                    f", caused by {_clip(r.root_error.text, 200)} "
                    f"({_where(r.root_error, len(r.sources) == 1)})"
                )
            t.append(".")
        else:
            t.append("No known failure signature matched.", style="green")
        return t
    if top.role != "root-cause" or top.confidence == Confidence.POSSIBLE:
        t.append("Not proven. ", style="bold")
        t.append(f"Most likely: {top.title} ({top.signature}), {top.confidence.label}.")
        return t
    if top.confidence == Confidence.LIKELY:
        t.append("Likely: ", style="bold")
    t.append(f"{top.title}", style=CONF_STYLE[top.confidence])
    t.append(f"  ({top.signature}, {top.confidence.label})")
    if top.summary:
        t.append("\n" + top.summary)
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
            more = f"  (+{n - 1} more" + (f", on ranks {_ranges(tuple(ranks))})" if ranks else ")")
            line.append("  " + _clip(e.text, 160) + (more if n > 1 else ""))
            out.append(line)
        return out
    shown = d.evidence if verbose else d.evidence[:3]
    for e in shown:
        if verbose or d.role == "root-cause":
            for c in e.context[-2:]:
                out.append(Text(f"      {c.strip()[:160]}", style="dim"))
        line = Text("    > ", style="bold")
        line.append(_where(e, single), style="blue")
        line.append("  " + _clip(e.text, 400 if verbose else 240))
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
    cons = [d for d in r.diagnoses if d.role == "consequence"]
    state = stop_state(r)
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
    if r.evidence_summary and verbose:
        console.print()
        console.print(Text("Environment (snapshot)", style="bold underline"))
        for k, v in r.evidence_summary.items():
            console.print(Text(f"  {k}: {v}"))
    if r.notes:
        console.print()
        for n in r.notes:
            console.print(Text("note: ", style="bold") + Text(n))
