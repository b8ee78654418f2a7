"""Source `host_memory`: the host's RAM and swap, from /proc/meminfo.

Recorded for people to read (a host OOM kill next to a full RAM); no rule reads it yet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from triage.evidence.snapshot import unknown
from triage.evidence.sources.base import Context, Source, no_facts
from triage.vocabulary import SNAPSHOT_SOURCES


def host_memory() -> dict[str, Any]:
    """MemTotal / MemAvailable / SwapFree from /proc/meminfo, in MiB."""
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError as e:
        return unknown(f"/proc/meminfo: {e.strerror or e}")
    vals = {}
    for line in text.splitlines():
        k, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            vals[k] = int(parts[0]) // 1024
    return {
        "total_mib": vals.get("MemTotal", unknown("not in /proc/meminfo")),
        "available_mib": vals.get("MemAvailable", unknown("not in /proc/meminfo")),
        "swap_free_mib": vals.get("SwapFree", unknown("not in /proc/meminfo")),
    }


def collect(ctx: Context) -> dict[str, Any]:
    return {"host_memory": host_memory()}


SOURCE = Source(
    name="host_memory",
    what="host memory",
    sections=("host_memory",),
    provides=SNAPSHOT_SOURCES["host_memory"],
    facts=no_facts,
    collect=collect,
)
