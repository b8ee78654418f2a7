"""Source `host`: which machine, when, and which triage took the snapshot."""

from __future__ import annotations

import datetime as dt
import socket
import sys
from collections.abc import Callable, Mapping
from typing import Any

from triage.evidence.snapshot import unknown, value
from triage.evidence.sources.base import Context, Facts, Source
from triage.model import Unknown
from triage.vocabulary import SNAPSHOT_SOURCES


def collect(ctx: Context) -> dict[str, Any]:
    """The snapshot's header: host name, local time, the collecting triage."""
    from triage import __version__

    return {
        "host": _safe(socket.gethostname),
        "time": dt.datetime.now(dt.UTC).astimezone().isoformat(timespec="seconds"),
        "collector": {"triage": __version__, "python": sys.executable},
    }


def _safe(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as e:  # an unreadable host name is an unknown, not a failed snapshot
        return unknown(f"{type(e).__name__}: {e}")


def facts(snap: Mapping[str, Any], earlier: Mapping[str, Any]) -> Facts:
    """`host`: the machine's name (history compares crashes per host)."""
    return {"host": value(snap.get("host", Unknown("not recorded")))}


SOURCE = Source(
    name="host",
    what="host",
    sections=("host", "time", "collector"),
    provides=SNAPSHOT_SOURCES["host"],
    facts=facts,
    collect=collect,
)
