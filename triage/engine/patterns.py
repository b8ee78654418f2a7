"""Rule regexes, compiled at their first use once they are known to compile.

The `regex` module parses a pattern in Python: the shipped rules' 260-odd patterns
took about 65 ms of every start-up (a fifth of it), while a run uses the few whose
literals its log holds. A pattern that compiled in an earlier run is listed in a small
cache (its text, flags and group names, per `regex` version); such a pattern is given
as a `LazyPattern`, which compiles on its first search. Any other pattern is compiled
at load, so a bad regex is still an error that names its rule file at once.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, cast

import regex

from triage.cache import cache_dir


class LazyPattern:
    """A `regex.Pattern` compiled on first use; its text, flags and group names are
    known without compiling (what loading and linting the rules read)."""

    __slots__ = ("_rx", "flags", "groupindex", "pattern")

    def __init__(self, pattern: str, flags: int, groupindex: dict[str, int]) -> None:
        self.pattern = pattern
        self.flags = flags
        self.groupindex = groupindex
        self._rx: regex.Pattern[str] | None = None

    def compiled(self) -> regex.Pattern[str]:
        if self._rx is None:
            self._rx = regex.compile(self.pattern, self.flags)
        return self._rx

    def search(self, *args: Any, **kw: Any) -> Any:
        return self.compiled().search(*args, **kw)

    def __getattr__(self, name: str) -> Any:  # match, finditer, ...: the compiled pattern's
        return getattr(self.compiled(), name)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyPattern):
            return (self.pattern, self.flags) == (other.pattern, other.flags)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.pattern, self.flags))

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r}, {self.flags})"


class _Checked:
    """The patterns that compiled before: key -> group names, read once per process and
    written back (atomically) when a load adds some."""

    def __init__(self) -> None:
        self._known: dict[str, dict[str, int]] | None = None
        self._added = False
        self.made: dict[str, regex.Pattern[str]] = {}  # this process's, by key: one per text

    @property
    def path(self) -> Path:
        return cache_dir() / f"regex-{regex.__version__}-patterns.json"

    def _load(self) -> dict[str, dict[str, int]]:
        if self._known is None:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = {}
            ok = isinstance(data, dict) and all(isinstance(v, dict) for v in data.values())
            self._known = data if ok else {}
        return self._known

    @staticmethod
    def key(src: str, flags: int) -> str:
        return hashlib.sha256(f"{flags}\0{src}".encode()).hexdigest()[:32]

    def groups(self, src: str, flags: int) -> dict[str, int] | None:
        return self._load().get(self.key(src, flags))

    def add(self, src: str, flags: int, groupindex: dict[str, int]) -> None:
        self._load()[self.key(src, flags)] = dict(groupindex)
        self._added = True

    def save(self) -> None:
        if not self._added or self._known is None:
            return
        self._added = False
        path = self.path
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(self._known, sort_keys=True), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:  # a read-only home: every start-up compiles, nothing else changes
            tmp.unlink(missing_ok=True)


CHECKED = _Checked()


def save_checked() -> None:
    """Write the patterns that compiled in this process to the cache (a load's end)."""
    CHECKED.save()


def compile_rule_regex(src: str, flags: int) -> regex.Pattern[str]:
    """`regex.compile(src, flags)`, lazily where the pattern compiled before (raises
    `regex.error` for a bad one, at once)."""
    key = CHECKED.key(src, flags)
    made = CHECKED.made.get(key)
    if made is not None:  # the same text in another clause: the same pattern
        return made
    groups = CHECKED.groups(src, flags)
    if groups is not None:
        rx = cast("regex.Pattern[str]", LazyPattern(src, flags, groups))
    else:
        rx = regex.compile(src, flags)
        CHECKED.add(src, flags, dict(rx.groupindex))
    CHECKED.made[key] = rx
    return rx
