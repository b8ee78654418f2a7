"""evidence: what the machine and the run's interpreter say, as a versioned snapshot.

Collecting never raises: a value that cannot be read is recorded as unknown with the
reason. One module per source under sources/ (collection and facts together), listed
in registry.py. pynvml is imported lazily, only when a snapshot is taken.
"""

from __future__ import annotations

from typing import Any

from triage.evidence.facts import facts_from_snapshot
from triage.evidence.snapshot import SNAPSHOT_SCHEMA, load_snapshot

__all__ = ["SNAPSHOT_SCHEMA", "facts_from_snapshot", "load_snapshot", "take_snapshot"]


def take_snapshot(python: str | None = None, tmux_target: str | None = None) -> dict[str, Any]:
    """Collect a snapshot now (the probe runs in `python`, default: this interpreter)."""
    from triage.evidence.collect import collect

    return collect(python=python, tmux_target=tmux_target)
