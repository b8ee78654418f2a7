"""end: how the log ends: each source's last lines and each rank's last output, and from
them (with the exceptions and the last progress) the log's end state."""

from __future__ import annotations

from collections import deque

import triage.structure.tables as T
from triage.model import EndState, ExceptionInfo, Line, SourceInfo

TAIL_LINES = 40
_ORDER = ("traceback", "error", "cut-mid-line", "no-terminal-event", "clean-exit")  # worst first


class EndReader:
    """The tail of every source and the last output of every rank (bounded)."""

    def __init__(self) -> None:
        self.tails: dict[str, deque[Line]] = {}
        self.last_by_rank: dict[int, Line] = {}

    def feed(self, line: Line) -> bool:
        """Read one line; True when it is not blank (it counts as output)."""
        tail = self.tails.get(line.source)
        if tail is None:
            tail = self.tails[line.source] = deque(maxlen=TAIL_LINES)
        if not line.text.strip():
            return False
        tail.append(line)
        if line.rank is not None:
            self.last_by_rank[line.rank] = line
        return True

    def end_state(
        self,
        sources: list[SourceInfo],
        exceptions: list[ExceptionInfo],
        phase: str | None,
        last_step_seq: int,
    ) -> EndState:
        """The worst ending of any source (a traceback over an error over a cut ...)."""
        if not any(s.lines for s in sources):
            return EndState("empty", phase)
        states: list[EndState] = []
        for src in sources:
            tail = list(self.tails.get(src.path, ()))
            if tail:
                excs = [e for e in exceptions if e.line.source == src.path]
                states.append(_source_end(src, tail, excs, phase, last_step_seq))
        if not states:
            return EndState("empty", phase)
        states.sort(key=lambda e: _ORDER.index(e.kind))
        return states[0]


def _source_end(
    src: SourceInfo, tail: list[Line], excs: list[ExceptionInfo], phase: str | None, last_step_seq: int
) -> EndState:
    """How one source ends, from its tail and its exceptions."""
    last = tail[-1]

    def st(kind: str) -> EndState:
        return EndState(kind, phase, last.lineno, src.path, last.text[-200:])

    if any(_finished_at(x, tail, excs) for x in _last_said(tail)):
        return st("clean-exit")
    if excs and any(x.seq > excs[-1].line.seq and T.BAR_DONE_RE.search(x.text) for x in tail):
        return st("clean-exit")  # the work finished after the error: it was handled
    if excs and excs[-1].has_traceback and excs[-1].line.seq > last_step_seq:
        return st("traceback")
    if any(T.ERROR_END_RE.search(x.text) for x in tail[-8:]) or (
        excs and excs[-1].line.seq > last_step_seq and excs[-1].line.seq >= tail[0].seq
    ):
        return st("error")
    if src.ends_without_newline:
        return st("cut-mid-line")
    return st("no-terminal-event")


def _last_said(tail: list[Line]) -> list[Line]:
    """The lines a clean exit may stand on: the last 5 with exit-time noise set aside
    (torch's per-rank "process group has NOT been destroyed"), and where several ranks
    share the source (each says it finished, then prints its teardown, their lines
    mixed), each rank's own last 5."""
    said = [x for x in tail if not T.EXIT_NOISE_RE.search(x.text)] or tail
    by_rank: dict[int | None, list[Line]] = {}
    for x in tail:
        by_rank.setdefault(x.rank, []).append(x)
    per_rank = [x for lines in by_rank.values() for x in lines[-5:]] if len(by_rank) > 1 else []
    return [*said[-5:], *per_rank]


def _finished_at(x: Line, tail: list[Line], excs: list[ExceptionInfo]) -> bool:
    """`x` says the run finished, and nothing after it ends like an error (Killed, a
    segfault, a scheduler's cancel) or raises."""
    return (
        T.CLEAN_EXIT_RE.search(x.text) is not None
        and not any(e.line.seq > x.seq for e in excs)
        and not any(y.seq > x.seq and T.ERROR_END_RE.search(y.text) for y in tail)
    )
