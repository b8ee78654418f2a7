"""Source `gpus`: the node's GPUs and driver, read through NVML (nvml.py), else
`nvidia-smi` (nvidia_smi.py), else unknown; and the `gpu.*` / `driver.*` facts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from triage.evidence.snapshot import section, unknown, value
from triage.evidence.sources import nvidia_smi, nvml
from triage.evidence.sources.base import Context, Facts, Source
from triage.model import Unknown
from triage.vocabulary import GPU_FIELDS, SNAPSHOT_SOURCES

BUSY_MIB = 1024  # a GPU holding at least this much (or any process) is in use
# What stays unknown, all with one reason, when there is no list of GPUs at all.
NO_LIST_FACTS = (
    "gpu.count",
    "gpu.all.memory_used_mib",
    "gpu.any.memory_used_mib",
    "gpu.all.utilization_pct",
    "gpu.any.utilization_pct",
    "gpu.any.ecc_uncorrected",
    "driver.version",
    "driver.cuda",
)


def read_gpus() -> dict[str, Any]:
    """GPU state through NVML (nvidia-ml-py), else nvidia-smi, else unknown."""
    nv = nvml.import_nvml()
    if nv is not None:
        return nvml.gpus(nv)
    smi = nvidia_smi.gpus()
    if smi is not None:
        return smi
    return unknown(
        "nvidia-ml-py is not installed for triage (pip install nvidia-ml-py) and nvidia-smi is not available"
    )


def collect(ctx: Context) -> dict[str, Any]:
    return {"gpus": read_gpus()}


def facts(snap: Mapping[str, Any], earlier: Mapping[str, Any]) -> Facts:
    """`gpu.count`, `driver.*`, per-field `gpu.all.X` / `gpu.any.X` lists, and the
    node's summaries (lost, busy, idle, capabilities, throttling)."""
    g, why = section(snap, "gpus")
    devices = g.get("devices")
    if why is not None or not isinstance(devices, list):
        return dict.fromkeys(NO_LIST_FACTS, why or Unknown("no GPU list"))
    f: Facts = {
        "gpu.count": len(devices),
        "driver.version": value(g.get("driver_version", Unknown("not recorded"))),
        "driver.cuda": value(g.get("cuda_driver_version", Unknown("not recorded"))),
    }
    for field in GPU_FIELDS:
        vals = [value(d.get(field)) for d in devices if isinstance(d, dict)]
        known = [v for v in vals if v is not None and not isinstance(v, Unknown)]
        f[f"gpu.all.{field}"] = (
            known if len(known) == len(vals) and vals else Unknown(f"{field} unreadable on some GPU")
        )
        f[f"gpu.any.{field}"] = known if known else Unknown(f"{field} unreadable")
    f["gpu.names"] = [d.get("name") for d in devices if isinstance(d, dict)]
    f.update(_node_facts([d for d in devices if isinstance(d, dict)]))
    return f


def _node_facts(devices: list[dict[str, Any]]) -> Facts:
    """Per-node summaries: lost GPUs, busy vs idle, compute capabilities, throttling."""
    busy: list[int] = []
    idle: list[int] = []
    for i, d in enumerate(devices):
        idx = d.get("index", i)
        mem = value(d.get("memory_used_mib"))
        procs = value(d.get("processes"))
        if (isinstance(mem, int | float) and mem >= BUSY_MIB) or (isinstance(procs, list) and procs):
            busy.append(idx)
        elif isinstance(mem, int | float):
            idle.append(idx)
    caps = [value(d.get("cuda_capability")) for d in devices]
    reasons = {
        r
        for d in devices
        if isinstance(d.get("throttle_reasons"), list)
        for r in d["throttle_reasons"]
        if r != "gpu_idle"
    }
    return {
        "gpu.lost": sum(1 for d in devices if d.get("lost") is True),
        "gpu.busy": busy,
        "gpu.idle": idle,
        "gpu.busy_count": len(busy),
        "gpu.idle_count": len(idle),
        "gpu.capabilities": (
            [c for c in caps if isinstance(c, str)]
            if caps and all(isinstance(c, str) for c in caps)
            else Unknown("compute capability unreadable")
        ),
        "gpu.throttle_reasons": sorted(reasons),
    }


SOURCE = Source(
    name="gpus",
    what="GPUs",
    sections=("gpus",),
    provides=SNAPSHOT_SOURCES["gpus"],
    facts=facts,
    collect=collect,
)
