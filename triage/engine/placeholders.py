"""Placeholders in checks and remedies that only the whole report can fill.

Rules are written once for every log, so a check says `grep -n 'Tried to allocate' {log}`
and the report, which knows its sources, names the real file: the command then runs as
printed. Filled here (not in a view) so that every format says the same thing.

    {log}     the file(s) the diagnosis's evidence is in (else every source), shell-quoted
    {logs}    every source, shell-quoted
    {python}  the run's interpreter: a snapshot's python.executable, else the `binary:`
              torchrun names in the log, else `python`
    {rank}    "rank 3": the rank of the diagnosis's first evidence line, else "each rank"

What no report can know stays an obvious placeholder in the rule text itself
(`<your launch command>`, `<pid>`), never a plausible-looking default such as
`train.log` that a user would run as is.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from triage.model import Diagnosis, Event, SourceInfo

STDIN_NAMES = ("-", "<stdin>")
UNKNOWN_LOG = "<your log file>"
UNKNOWN_RANK = "each rank"
DEFAULT_PYTHON = "python"
MAX_LISTED = 8  # more sources than this, in one folder, read as a glob

# torchrun's per-child failure line: "failed (exitcode: 1) local_rank: 0 (pid: 7) of binary: X"
_BINARY = re.compile(r"\bof binary: (?P<path>\S+)")
_PLACEHOLDER = re.compile(r"\{(log|logs|python|rank)\}")


def shell_path(path: str) -> str:
    """A source as a shell word that reads its text: quoted, and decompressed on the fly
    for .gz/.zst so that grep sees lines, not compressed bytes (bash/zsh `<(...)`)."""
    if path in STDIN_NAMES:
        return UNKNOWN_LOG  # stdin is gone once read: the user has to name the file
    quoted = shlex.quote(path)
    if path.endswith(".gz"):
        return f"<(gzip -dc {quoted})"
    if path.endswith(".zst"):
        return f"<(zstd -dc {quoted})"
    return quoted


def shell_target(path: str) -> str:
    """A file to append a re-run's output to: the log itself when it is a plain file,
    else a new `rerun.log` (stdin has no name; a .gz/.zst cannot be appended as text)."""
    if path in STDIN_NAMES or path.endswith((".gz", ".zst")):
        return "rerun.log"
    return shlex.quote(path)


def shell_paths(paths: Iterable[str]) -> str:
    """Several sources as shell words, in order, without repeats; many plain files of one
    folder with one suffix (rank0.log ... rank63.log) as that folder's glob, so a check
    stays one readable line."""
    names = list(dict.fromkeys(paths))
    if len(names) > MAX_LISTED:
        parents = {os.path.dirname(p) for p in names}
        suffixes = {os.path.splitext(p)[1] for p in names}
        if len(parents) == 1 and len(suffixes) == 1 and not suffixes & {".gz", ".zst"}:
            parent, suffix = parents.pop(), suffixes.pop()
            return f"{shlex.quote(parent)}/*{shlex.quote(suffix) if suffix else ''}"
    words = list(dict.fromkeys(shell_path(p) for p in names))
    return " ".join(words) if words else UNKNOWN_LOG


def interpreter(facts: Mapping[str, Any], events: Iterable[Event]) -> str:
    """The run's python: what a snapshot recorded, else what torchrun says it launched."""
    known = facts.get("python.executable")
    if isinstance(known, str) and known:  # an Unknown (unreadable) is not a str
        return shlex.quote(known)
    for ev in events:
        if ev.kind == "child-exit":
            m = _BINARY.search(ev.line.text)
            if m:
                return shlex.quote(m.group("path"))
    return DEFAULT_PYTHON


def fill(text: str, values: Mapping[str, str]) -> str:
    """Replace the placeholders this module knows; other braces (shell, Python) stay."""
    if "{" not in text:
        return text
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


def fill_diagnoses(
    diags: Iterable[Diagnosis], sources: list[SourceInfo], facts: Mapping[str, Any], events: Iterable[Event]
) -> list[Diagnosis]:
    """Each diagnosis with its checks and remedies naming the real files, rank and
    interpreter."""
    everything = shell_paths(s.path for s in sources)
    python = interpreter(facts, events)
    out: list[Diagnosis] = []
    for d in diags:
        lines = [e for e in d.evidence if e.source not in (None, "snapshot")]
        rank = next((e.rank for e in lines if e.rank is not None), None)
        values = {
            "log": shell_paths(e.source for e in lines if e.source) if lines else everything,
            "logs": everything,
            "python": python,
            "rank": UNKNOWN_RANK if rank is None else f"rank {rank}",
        }
        out.append(
            replace(
                d,
                checks=tuple(fill(c, values) for c in d.checks),
                remedies=tuple(fill(x, values) for x in d.remedies),
            )
        )
    return out
