"""A light GPU sample for the live panel and the stall check: memory and utilization
per device, from NVML. Never raises: without NVML the answer is N/A with the reason.

The full evidence snapshot (`triage.evidence.take_snapshot`) also probes packages in
the run's interpreter, too heavy to repeat every few seconds; it is taken once, when
the run ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
    """Reads NVML (nvidia-ml-py, imported lazily) on demand; remembers a failure so a
    machine without NVML costs one import attempt."""

    def __init__(self) -> None:
        self._nvml: Any = None
        self._failed: str | None = None

    def _init(self) -> Any:
        if self._nvml is not None or self._failed is not None:
            return self._nvml
        try:
            import pynvml  # nvidia-ml-py

            pynvml.nvmlInit()
        except ImportError:
            self._failed = "NVML not available (pip install nvidia-ml-py)"
            return None
        except Exception as e:  # NVMLError_*: no driver, no device, no permission
            self._failed = f"NVML: {type(e).__name__}: {e}"
            return None
        self._nvml = pynvml
        return pynvml

    def sample(self) -> GpuSample:
        """Memory used/total (MiB) and utilization (%) of every GPU, or N/A and why."""
        nv = self._init()
        if nv is None:
            return GpuSample(unknown=self._failed or "NVML not available")
        try:
            count = nv.nvmlDeviceGetCount()
        except Exception as e:  # an NVML error is a value, not a crash
            return GpuSample(unknown=f"NVML: {e}")
        devices = []
        for i in range(count):
            devices.append(_device(nv, i))
        return GpuSample(tuple(devices))


def _device(nv: Any, i: int) -> Gpu:
    name = f"GPU {i}"
    used = total = util = None
    try:
        h = nv.nvmlDeviceGetHandleByIndex(i)
    except Exception:  # this device is unreadable; show it as N/A
        return Gpu(i, name, None, None, None)
    try:
        n = nv.nvmlDeviceGetName(h)
        name = n.decode() if isinstance(n, bytes) else str(n)
    except Exception:  # keep the generic name
        pass
    try:
        mem = nv.nvmlDeviceGetMemoryInfo(h)
        used, total = int(mem.used) >> 20, int(mem.total) >> 20
    except Exception:  # N/A for this field only
        used = total = None
    try:
        util = int(nv.nvmlDeviceGetUtilizationRates(h).gpu)
    except Exception:  # N/A for this field only
        util = None
    return Gpu(i, name, used, total, util)


def from_snapshot(snap: dict[str, Any]) -> GpuSample:
    """The GPU part of an evidence snapshot ({"gpus": {"devices": [...]}} or
    {"gpus": {"unknown": reason}}) as a sample."""
    g = snap.get("gpus")
    if not isinstance(g, dict):
        return GpuSample(unknown="no GPU section in the snapshot")
    if "unknown" in g and "devices" not in g:
        return GpuSample(unknown=str(g["unknown"]))
    out: list[Gpu] = []
    for d in g.get("devices") or []:
        if not isinstance(d, dict):
            continue

        def num(key: str, d: dict[str, Any] = d) -> int | None:
            v = d.get(key)
            return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

        idx = num("index")
        out.append(
            Gpu(
                len(out) if idx is None else idx,
                str(d.get("name", f"GPU {len(out)}")),
                num("memory_used_mib"),
                num("memory_total_mib"),
                num("utilization_pct"),
            )
        )
    return GpuSample(tuple(out))
