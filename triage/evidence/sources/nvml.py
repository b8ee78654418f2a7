"""The one NVML reader (nvidia-ml-py), for the snapshot's `gpus` section and for the
watcher's live GPU panel (triage.watch.gpu).

Every query goes through `NvmlQuery`, which turns an NVML error into the snapshot's
unknown ({"unknown": reason}) instead of raising (nvitop's nvmlQuery style); "GPU is
lost" is remembered per device. pynvml is imported lazily, by `import_nvml()` only:
importing triage.evidence never loads it.
"""

from __future__ import annotations

import contextlib
from typing import Any

from triage.evidence.snapshot import is_unknown, unknown

MIB = 1024 * 1024
THROTTLE_BITS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)
# The fields a device that cannot even be opened still reports (as its error).
UNOPENED_FIELDS = ("memory_used_mib", "memory_total_mib", "utilization_pct", "ecc_uncorrected")


def import_nvml() -> Any | None:
    """The pynvml module (nvidia-ml-py), or None when it is not installed."""
    try:
        import pynvml  # lazily: triage core never imports it
    except ImportError:
        return None
    return pynvml


def nvml_reason(nv: Any, e: Exception) -> str:
    """NVML's own words for an error ('GPU is lost', 'Not Supported', ...)."""
    try:
        return str(nv.nvmlErrorString(e.value)) if hasattr(e, "value") else str(e)
    except Exception:
        return str(e) or type(e).__name__


def _is_nvml_error(nv: Any, e: Exception) -> bool:
    err = getattr(nv, "NVMLError", None)
    return isinstance(err, type) and isinstance(e, err)


def init(nv: Any) -> dict[str, str] | None:
    """Start NVML; None when it started, else the unknown that says why not."""
    try:
        nv.nvmlInit()
    except Exception as e:
        if _is_nvml_error(nv, e):
            return unknown(f"NVML: {nvml_reason(nv, e)} (no NVIDIA driver or GPU visible)")
        return unknown(f"NVML init failed: {type(e).__name__}: {e}")
    return None


class NvmlQuery:
    """Call NVML functions, turning every error into {"unknown": reason}."""

    def __init__(self, nv: Any) -> None:
        self.nv = nv
        self.lost = False

    def __call__(self, name: str, *args: Any, **kw: Any) -> Any:
        fn = getattr(self.nv, name, None)
        if fn is None:
            return unknown(f"{name} not in this nvidia-ml-py")
        try:
            return fn(*args, **kw)
        except Exception as e:
            if not _is_nvml_error(self.nv, e):
                return unknown(f"{name}: {type(e).__name__}: {e}")
            reason = nvml_reason(self.nv, e)
            if reason == "GPU is lost":
                self.lost = True
            return unknown(reason)


def text(v: Any) -> Any:
    """NVML strings are bytes in older bindings."""
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


# ---------------------------------------------------------------- the readings


def memory(q: NvmlQuery, h: Any) -> tuple[Any, Any]:
    """(used, total) in MiB, each an int or an unknown. The v2 query counts
    driver-reserved memory apart from "used"; older drivers answer only v1."""
    mem: Any = unknown("no memory info")
    if hasattr(q.nv, "nvmlMemory_v2"):
        mem = q("nvmlDeviceGetMemoryInfo", h, version=q.nv.nvmlMemory_v2)
    if is_unknown(mem):
        mem = q("nvmlDeviceGetMemoryInfo", h)
    if is_unknown(mem):
        return mem, mem
    return int(mem.used) // MIB, int(mem.total) // MIB


def utilization(q: NvmlQuery, h: Any) -> Any:
    """NVML's utilization rates (`.gpu`, `.memory` in %), or an unknown."""
    return q("nvmlDeviceGetUtilizationRates", h)


def light(q: NvmlQuery, i: int) -> dict[str, Any]:
    """Device `i` in brief: name, memory used/total (MiB), utilization (%): what the
    live panel shows every few seconds. A value that cannot be read is an unknown."""
    q.lost = False
    d: dict[str, Any] = {"index": i}
    h = q("nvmlDeviceGetHandleByIndex", i)
    if is_unknown(h):
        d.update(name=h, memory_used_mib=h, memory_total_mib=h, utilization_pct=h)
        return d
    d["name"] = text(q("nvmlDeviceGetName", h))
    d["memory_used_mib"], d["memory_total_mib"] = memory(q, h)
    util = utilization(q, h)
    d["utilization_pct"] = util if is_unknown(util) else int(util.gpu)
    return d


def system(q: NvmlQuery) -> dict[str, Any]:
    """Driver, CUDA driver API and NVML versions."""
    out: dict[str, Any] = {"driver_version": text(q("nvmlSystemGetDriverVersion"))}
    cuda = q("nvmlSystemGetCudaDriverVersion_v2")
    if is_unknown(cuda):
        cuda = q("nvmlSystemGetCudaDriverVersion")
    out["cuda_driver_version"] = f"{cuda // 1000}.{(cuda % 1000) // 10}" if isinstance(cuda, int) else cuda
    out["nvml_version"] = text(q("nvmlSystemGetNVMLVersion"))
    return out


def gpus(nv: Any) -> dict[str, Any]:
    """The snapshot's `gpus` section: every device in full, between init and shutdown."""
    failed = init(nv)
    if failed is not None:
        return failed
    try:
        q = NvmlQuery(nv)
        out: dict[str, Any] = {"source": "nvml", **system(q)}
        count = q("nvmlDeviceGetCount")
        out["devices"] = [device(q, i) for i in range(count)] if isinstance(count, int) else count
        return out
    finally:
        with contextlib.suppress(Exception):
            nv.nvmlShutdown()


def device(q: NvmlQuery, i: int) -> dict[str, Any]:
    """Device `i` in full: identity, memory, load, power, memory errors, throttling,
    processes, and whether it was lost while being read."""
    q.lost = False
    d: dict[str, Any] = {"index": i}
    h = q("nvmlDeviceGetHandleByIndex", i)
    if is_unknown(h):
        d["error"] = h["unknown"]
        d["lost"] = q.lost
        d.update(dict.fromkeys(UNOPENED_FIELDS, h))
        return d
    d.update(_identity(q, h))
    d["memory_used_mib"], d["memory_total_mib"] = memory(q, h)
    d.update(_load(q, h))
    d.update(_memory_errors(q, h))
    d["throttle_reasons"] = _throttle(q, h)
    d["processes"] = _processes(q, h)
    d["lost"] = q.lost
    return d


def _identity(q: NvmlQuery, h: Any) -> dict[str, Any]:
    pci = q("nvmlDeviceGetPciInfo", h)
    cc = q("nvmlDeviceGetCudaComputeCapability", h)
    return {
        "name": text(q("nvmlDeviceGetName", h)),
        "uuid": text(q("nvmlDeviceGetUUID", h)),
        "pci_bus_id": text(getattr(pci, "busId", None)) if not is_unknown(pci) else pci,
        "cuda_capability": f"{cc[0]}.{cc[1]}" if isinstance(cc, tuple) else cc,
    }


def _load(q: NvmlQuery, h: Any) -> dict[str, Any]:
    """Utilization, temperature, power draw and limit (W)."""
    util = utilization(q, h)
    power = q("nvmlDeviceGetPowerUsage", h)
    limit = q("nvmlDeviceGetEnforcedPowerLimit", h)
    return {
        "utilization_pct": util if is_unknown(util) else int(util.gpu),
        "memory_utilization_pct": util if is_unknown(util) else int(util.memory),
        "temperature_c": q("nvmlDeviceGetTemperature", h, getattr(q.nv, "NVML_TEMPERATURE_GPU", 0)),
        "power_w": round(power / 1000, 1) if isinstance(power, int | float) else power,
        "power_limit_w": round(limit / 1000, 1) if isinstance(limit, int | float) else limit,
    }


def _memory_errors(q: NvmlQuery, h: Any) -> dict[str, Any]:
    """Uncorrected ECC errors (volatile, aggregate), retired pages, remapped rows."""
    nv = q.nv
    unc = getattr(nv, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
    d: dict[str, Any] = {
        "ecc_uncorrected": q("nvmlDeviceGetTotalEccErrors", h, unc, getattr(nv, "NVML_VOLATILE_ECC", 0)),
        "ecc_uncorrected_aggregate": q(
            "nvmlDeviceGetTotalEccErrors", h, unc, getattr(nv, "NVML_AGGREGATE_ECC", 1)
        ),
    }
    retired: Any = 0
    for cause in (
        getattr(nv, "NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS", 0),
        getattr(nv, "NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR", 1),
    ):
        pages = q("nvmlDeviceGetRetiredPages", h, cause)
        retired = (
            pages if is_unknown(pages) else (retired + len(pages) if isinstance(retired, int) else retired)
        )
    d["retired_pages"] = retired
    pending = q("nvmlDeviceGetRetiredPagesPendingStatus", h)
    d["retired_pages_pending"] = bool(pending) if isinstance(pending, int) else pending
    rows = q("nvmlDeviceGetRemappedRows", h)  # (corrected, uncorrected, pending, failed)
    if isinstance(rows, tuple | list) and len(rows) >= 4:
        d["remapped_rows_uncorrectable"] = int(rows[1])
        d["remapped_rows_pending"] = bool(rows[2])
        d["remapped_rows_failed"] = bool(rows[3])
    else:
        d.update(remapped_rows_uncorrectable=rows, remapped_rows_pending=rows, remapped_rows_failed=rows)
    return d


def _throttle(q: NvmlQuery, h: Any) -> Any:
    """Why the clocks are held down now, by name."""
    reasons = q("nvmlDeviceGetCurrentClocksEventReasons", h)
    if is_unknown(reasons):
        reasons = q("nvmlDeviceGetCurrentClocksThrottleReasons", h)
    if isinstance(reasons, int):
        return [name for bit, name in THROTTLE_BITS if reasons & bit]
    return reasons


def _processes(q: NvmlQuery, h: Any) -> Any:
    """The compute and graphics processes on the device, with their memory."""
    procs: dict[int, dict[str, Any]] = {}
    got_any = False
    reason = "no process list"
    for fn in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        res = q(fn, h)
        if is_unknown(res):
            reason = res["unknown"]
            continue
        got_any = True
        for p in res:
            pid = int(p.pid)
            used = getattr(p, "usedGpuMemory", None)
            entry = procs.setdefault(pid, {"pid": pid})
            entry["memory_mib"] = (
                int(used) // MIB
                if isinstance(used, int)
                else unknown("not reported (another container or no permission)")
            )
            name = q("nvmlSystemGetProcessName", pid)
            entry["name"] = text(name) if not is_unknown(name) else _comm(pid)
    return list(procs.values()) if got_any else unknown(reason)


def _comm(pid: int) -> Any:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return unknown("process not visible from here")
