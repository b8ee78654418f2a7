"""ingest: bytes from files, folders, stdin, gz/zst -> clean `Line`s, streaming."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from triage.ingest.normalize import SourceState, normalize
from triage.ingest.reader import TruncatedInput, expand_paths, iter_raw
from triage.model import Line, SourceInfo

__all__ = ["Ingest", "expand_paths"]

_RANK_IN_NAME = re.compile(r"(?:rank|local_rank|proc|worker|node)[_-]?(\d+)|^(\d+)\.(?:log|txt|out|err)$",
                           re.IGNORECASE)


@dataclass
class _Stats:
    lines: int = 0
    ends_without_newline: bool = False
    last_line_text: str = ""
    damaged: bool = False


@dataclass
class Ingest:
    """Streams `Line`s from several sources and remembers per-source facts.

    Iterate it once; afterwards `sources` and `notes` describe what was read.
    """

    paths: list[str]
    sources: list[SourceInfo] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __iter__(self) -> Iterator[Line]:
        seq = 0
        for path in self.paths:
            name = "<stdin>" if path == "-" else path
            state = SourceState()
            stats = _Stats()
            file_rank = _rank_from_name(path)
            try:
                for raw in iter_raw(path):
                    stats.lines = raw.lineno
                    stats.ends_without_newline = not raw.complete
                    for p in normalize(raw.data, state):
                        seq += 1
                        rank = p.rank if p.rank is not None else file_rank
                        yield Line(name, raw.lineno, p.text, rank, seq, p.ts)
                    if raw.cut_bytes:
                        self.notes.append(
                            f"{name}:{raw.lineno}: a line of {raw.cut_bytes + 64 * 1024} bytes "
                            "was cut to its head and tail")
            except TruncatedInput as e:
                stats.damaged = True
                self.notes.append(str(e) + "; the lines before the damage were read")
            ranks = set(state.seen_ranks)
            if file_rank is not None:
                ranks.add(file_rank)
            self.sources.append(SourceInfo(
                path=name, lines=stats.lines, ranks=tuple(sorted(ranks)),
                truncated=stats.ends_without_newline or stats.damaged,
                ends_without_newline=stats.ends_without_newline))


def _rank_from_name(path: str) -> int | None:
    base = path.rsplit("/", 1)[-1]
    m = _RANK_IN_NAME.search(base)
    if not m:
        return None
    return int(m.group(1) or m.group(2))
