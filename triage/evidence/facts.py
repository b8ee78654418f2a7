"""Snapshot JSON (`triage.snapshot/1`) -> flat facts for rule predicates.

A fact's value: a string/number/bool/list, None when the thing is absent, or
`Unknown(reason)` when it could not be read (in the snapshot: {"unknown": "reason"};
see snapshot.py). Each source reads its own facts (triage/evidence/sources/); this is
the loop over the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from triage.evidence.registry import SOURCES
from triage.evidence.snapshot import SNAPSHOT_SCHEMA, load_snapshot

__all__ = ["SNAPSHOT_SCHEMA", "facts_from_snapshot", "load_snapshot"]


def facts_from_snapshot(snap: Mapping[str, Any]) -> dict[str, Any]:
    """Flatten a snapshot into the predicate vocabulary (see engine/predicates.py): each
    source in registry order, each seeing the facts of those before it."""
    f: dict[str, Any] = {}
    for source in SOURCES:
        f.update(source.facts(snap, f))
    return f
