"""Source `cgroup`: this process's cgroup v2 memory limit and OOM-kill counter.

A container's OOM kills are counted here even when the kernel log is not readable.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from triage.evidence.snapshot import unknown, value
from triage.evidence.sources.base import Context, Facts, Source
from triage.model import Unknown
from triage.vocabulary import SNAPSHOT_SOURCES

MIB = 1024 * 1024


def cgroup_memory() -> dict[str, Any]:
    """{path, memory_max_mib (None: no limit), oom_kill, oom}; what cannot be read is
    unknown."""
    base = Path("/sys/fs/cgroup")
    try:
        rel = Path("/proc/self/cgroup").read_text().strip().splitlines()
    except OSError as e:
        return unknown(f"/proc/self/cgroup: {e.strerror or e}")
    path = base
    for line in rel:
        if line.startswith("0::"):
            path = base / line[3:].lstrip("/")
    out: dict[str, Any] = {"path": str(path)}
    try:
        mx = (path / "memory.max").read_text().strip()
        out["memory_max_mib"] = None if mx == "max" else int(mx) // MIB
    except (OSError, ValueError) as e:
        out["memory_max_mib"] = unknown(f"memory.max: {getattr(e, 'strerror', None) or e}")
    try:
        lines = (path / "memory.events").read_text().splitlines()
        ev = dict(ln.split() for ln in lines if ln.strip())
        out["oom_kill"] = int(ev.get("oom_kill", 0))
        out["oom"] = int(ev.get("oom", 0))
    except (OSError, ValueError) as e:
        out["oom_kill"] = unknown(f"memory.events: {getattr(e, 'strerror', None) or e}")
    return out


def collect(ctx: Context) -> dict[str, Any]:
    return {"cgroup": cgroup_memory()}


def facts(snap: Mapping[str, Any], earlier: Mapping[str, Any]) -> Facts:
    """`cgroup.oom_kill`: how many processes the cgroup's OOM killer took."""
    cg = value(snap.get("cgroup"))
    kills = value(cg.get("oom_kill")) if isinstance(cg, dict) else Unknown("cgroup not recorded")
    return {"cgroup.oom_kill": kills if kills is not None else Unknown("not recorded")}


SOURCE = Source(
    name="cgroup",
    what="cgroup",
    sections=("cgroup",),
    provides=SNAPSHOT_SOURCES["cgroup"],
    facts=facts,
    collect=collect,
)
