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

    said = [x for x in tail if not T.EXIT_NOISE_RE.search(x.text)] or tail  # exit-time noise aside
    if any(_clean_exit_at(x, tail) and not _raised_after(x, excs) for x in said[-5:]):
        return st("clean-exit")
    if _a_rank_ended_clean(tail, excs):
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


def _clean_exit_at(x: Line, tail: list[Line]) -> bool:
    """`x` says the run finished, and nothing after it ends like an error (Killed, a
    segfault, a scheduler's cancel)."""
    return bool(T.CLEAN_EXIT_RE.search(x.text)) and not any(
        y.seq > x.seq and T.ERROR_END_RE.search(y.text) for y in tail
    )


def _raised_after(x: Line, excs: list[ExceptionInfo]) -> bool:
    return any(e.line.seq > x.seq for e in excs)


def _a_rank_ended_clean(tail: list[Line], excs: list[ExceptionInfo]) -> bool:
    """Several ranks in one source each end their own output (each says it finished, then
    prints its teardown warnings, their lines mixed): a rank's clean exit among its own
    last 5 lines counts where nothing after it in the source looks like an error (no
    exception read after it, no error ending)."""
    by_rank: dict[int | None, list[Line]] = {}
    for x in tail:
        by_rank.setdefault(x.rank, []).append(x)
    if len(by_rank) < 2:
        return False
    for lines in by_rank.values():
        for x in lines[-5:]:
            if _clean_exit_at(x, tail) and not _raised_after(x, excs):
                return True
    return False
