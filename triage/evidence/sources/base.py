"""What an evidence source is, and the helpers every source shares.

A source owns one kind of evidence end to end: how it is collected into the snapshot
(side effects, never raising) and how the snapshot becomes facts for the rules (pure).
It declares the snapshot sections it writes and the facts it provides, so the registry
(`triage.evidence.sources.SOURCES`) can say where every fact comes from.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Facts = dict[str, Any]
CMD_TIMEOUT_S = 15.0
PROBE_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Context:
    """What a snapshot is taken for: the run's interpreter, a tmux pane, and limits."""

    python: str | None = None
    tmux_target: str | None = None
    probe_timeout: float = PROBE_TIMEOUT_S
    kernel: bool = True
    env: Mapping[str, str] | None = None

    @property
    def environ(self) -> Mapping[str, str]:
        """The environment the run sees (default: triage's own)."""
        return os.environ if self.env is None else self.env


Collect = Callable[[Context], dict[str, Any]]
ReadFacts = Callable[[Mapping[str, Any], Mapping[str, Any]], Facts]


@dataclass(frozen=True)
class Source:
    """One evidence source.

    `collect(ctx)` returns the snapshot sections it read ({section: value}); None when
    another source's collection writes them (the packages come from the interpreter
    probe). `facts(snapshot, earlier)` turns the snapshot into this source's facts;
    `earlier` holds the facts of the sources before it in the registry (for facts that
    compare two readings). `provides` names every fact it may return; a name ending in
    "." is a family prefix (`package.` for `package.torch`, ...)."""

    name: str
    what: str  # how a failed collection names it: "GPUs: RuntimeError: ..."
    sections: tuple[str, ...]
    provides: tuple[str, ...]
    facts: ReadFacts
    collect: Collect | None = None

    def declares(self, fact: str) -> bool:
        """Does this source provide the fact (by name or by family)?"""
        return any(fact == p or (p.endswith(".") and fact.startswith(p)) for p in self.provides)


def no_facts(snap: Mapping[str, Any], earlier: Mapping[str, Any]) -> Facts:
    """For a source recorded for people to read, not for rules."""
    return {}


def run_cmd(cmd: list[str], timeout: float = CMD_TIMEOUT_S) -> tuple[int, str, str]:
    """Run a command: (exit status, stdout, stderr); a missing or hanging command is a
    status (127, 124, 126), never an exception."""
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return 127, "", f"{cmd[0]}: not installed"
    except subprocess.TimeoutExpired:
        return 124, "", f"{cmd[0]}: timed out after {timeout:.0f} s"
    except OSError as e:
        return 126, "", f"{cmd[0]}: {e.strerror or e}"
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def first_line(s: str) -> str:
    """The first non-blank line, cut to 200 characters (a command's error)."""
    for ln in s.strip().splitlines():
        if ln.strip():
            return ln.strip()[:200]
    return ""


def iso(ts: float) -> str:
    """A Unix time as a local ISO 8601 timestamp, to the second."""
    return dt.datetime.fromtimestamp(ts, dt.UTC).astimezone().isoformat(timespec="seconds")
