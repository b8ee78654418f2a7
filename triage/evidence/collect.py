"""Take an evidence snapshot (`triage.snapshot/1`) of this machine and a run's interpreter.

Every source (triage/evidence/sources/, listed in registry.py) is collected on its own
and never takes the snapshot down: a source that fails becomes unknown sections
({"unknown": "what: reason"}), so a machine with no GPU, no driver or no permission to
read the kernel log still gets a complete snapshot. Side effects stay in the sources'
`collect`; turning a snapshot into facts is facts.py's (pure).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from triage.evidence.registry import SOURCES
from triage.evidence.snapshot import SNAPSHOT_SCHEMA, unknown
from triage.evidence.sources.base import PROBE_TIMEOUT_S, Context, Source
from triage.evidence.sources.interpreter import resolve_python

__all__ = ["PROBE_TIMEOUT_S", "collect", "resolve_python"]


def collect(
    python: str | None = None,
    tmux_target: str | None = None,
    *,
    probe_timeout: float = PROBE_TIMEOUT_S,
    kernel: bool = True,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A complete snapshot. `python`: the run's interpreter (or its venv folder);
    default this one. `tmux_target`: a pane to describe (session[:window.pane])."""
    ctx = Context(python=python, tmux_target=tmux_target, probe_timeout=probe_timeout, kernel=kernel, env=env)
    t0 = time.monotonic()
    snap: dict[str, Any] = {"schema": SNAPSHOT_SCHEMA}
    for source in SOURCES:
        snap.update(_collect_one(source, ctx))
    snap["collect_seconds"] = round(time.monotonic() - t0, 2)
    return snap


def _collect_one(source: Source, ctx: Context) -> dict[str, Any]:
    """One source's sections; a source that fails leaves each of its sections unknown."""
    if source.collect is None:
        return {}
    try:
        return source.collect(ctx)
    except Exception as e:  # collecting evidence must never take triage down
        return dict.fromkeys(source.sections, unknown(f"{source.what}: {type(e).__name__}: {e}"))
