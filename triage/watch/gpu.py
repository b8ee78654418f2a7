"""A light GPU sample for the live panel and the stall check: memory and utilization
per device, from NVML. Never raises: without NVML the answer is N/A with the reason.
NVML is read by the evidence NVML reader (triage.evidence.sources.nvml), the same
queries the snapshot's `gpus` section makes, so the panel and the snapshot agree.

The full evidence snapshot (`triage.evidence.take_snapshot`) also probes packages in
the run's interpreter, too heavy to repeat every few seconds; it is taken once, when
the run ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from triage.evidence.snapshot import UNKNOWN_KEY, is_unknown
from triage.evidence.sources import nvml


@dataclass(frozen=True, slots=True)
class Gpu:
    index: int
    name: str
    memory_used_mib: int | None
    memory_total_mib: int | None
    utilization_pct: int | None


@dataclass(frozen=True, slots=True)
class GpuSample:
    """Devices now, or why there are none (`unknown`)."""

    devices: tuple[Gpu, ...] = ()
    unknown: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def busy(self) -> bool | None:
        """Any GPU doing work (>10% utilization)? None when that cannot be read."""
        utils = [d.utilization_pct for d in self.devices if d.utilization_pct is not None]
        if self.unknown is not None or not utils:
            return None
        return any(u > 10 for u in utils)


class GpuSampler:
    """Reads NVML on demand through the evidence NVML reader
    (triage.evidence.sources.nvml, the one place NVML is read; pynvml imported lazily
    there); remembers a failure so a machine without NVML costs one import attempt."""

    def __init__(self) -> None:
        self._nvml: Any = None
        self._failed: str | None = None

    def _init(self) -> Any:
        if self._nvml is not None or self._failed is not None:
            return self._nvml
        nv = nvml.import_nvml()
        if nv is None:
            self._failed = "NVML not available (pip install nvidia-ml-py)"
            return None
        failed = nvml.init(nv)  # no driver, no device, no permission: why, as an unknown
        if failed is not None:
            self._failed = failed[UNKNOWN_KEY]
            return None
        self._nvml = nv
        return nv

    def sample(self) -> GpuSample:
        """Memory used/total (MiB) and utilization (%) of every GPU, or N/A and why."""
        nv = self._init()
        if nv is None:
            return GpuSample(unknown=self._failed or "NVML not available")
        q = nvml.NvmlQuery(nv)
        count = q("nvmlDeviceGetCount")
        if not isinstance(count, int):  # an NVML error is a value, not a crash
            return GpuSample(unknown=f"NVML: {_reason(count)}")
        return GpuSample(tuple(_gpu(nvml.light(q, i), i) for i in range(count)))


def _reason(v: Any) -> str:
    return str(v[UNKNOWN_KEY]) if is_unknown(v) else str(v)


def _gpu(d: dict[str, Any], i: int) -> Gpu:
    """A device reading as the panel's Gpu: an unknown field is N/A (None)."""
    name = d.get("name")
    return Gpu(
        i,
        str(name) if isinstance(name, str) and name else f"GPU {i}",
        _num(d, "memory_used_mib"),
        _num(d, "memory_total_mib"),
        _num(d, "utilization_pct"),
    )


def _num(d: dict[str, Any], key: str) -> int | None:
    v = d.get(key)
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def from_snapshot(snap: dict[str, Any]) -> GpuSample:
    """The GPU part of an evidence snapshot ({"gpus": {"devices": [...]}} or
    {"gpus": {"unknown": reason}}) as a sample."""
    g = snap.get("gpus")
    if not isinstance(g, dict):
        return GpuSample(unknown="no GPU section in the snapshot")
    if UNKNOWN_KEY in g and "devices" not in g:
        return GpuSample(unknown=str(g[UNKNOWN_KEY]))
    out: list[Gpu] = []
    for d in g.get("devices") or []:
        if not isinstance(d, dict):
            continue
        idx = _num(d, "index")
        out.append(
            Gpu(
                len(out) if idx is None else idx,
                str(d.get("name", f"GPU {len(out)}")),
                _num(d, "memory_used_mib"),
                _num(d, "memory_total_mib"),
                _num(d, "utilization_pct"),
            )
        )
    return GpuSample(tuple(out))
