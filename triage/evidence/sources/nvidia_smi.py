"""The `gpus` section from `nvidia-smi`, for a triage without nvidia-ml-py: fewer
fields than NVML, the same names."""

from __future__ import annotations

import re
import shutil
from typing import Any

from triage.evidence.snapshot import unknown
from triage.evidence.sources.base import run_cmd

SMI_FIELDS = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "memory.used",
    "memory.total",
    "utilization.gpu",
    "temperature.gpu",
    "power.draw",
    "ecc.errors.uncorrected.volatile.total",
    "driver_version",
    "compute_cap",
)


def gpus() -> dict[str, Any] | None:
    """The GPU section, an unknown when nvidia-smi fails, None when it is not installed."""
    if not shutil.which("nvidia-smi"):
        return None
    rc, out, err = run_cmd(
        ["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits"]
    )
    if rc != 0:
        return unknown(f"nvidia-smi failed: {(err or out).strip()[:200]}")
    devices = []
    driver: Any = unknown("not reported")
    for row in out.strip().splitlines():
        vals = [v.strip() for v in row.split(",")]
        if len(vals) != len(SMI_FIELDS):
            continue
        r = dict(zip(SMI_FIELDS, vals, strict=True))
        driver = r["driver_version"]
        devices.append(_device(r))
    rc2, banner, _ = run_cmd(["nvidia-smi"])
    m = re.search(r"CUDA Version:\s*(\d+\.\d+)", banner) if rc2 == 0 else None
    return {
        "source": "nvidia-smi",
        "driver_version": driver,
        "cuda_driver_version": m.group(1) if m else unknown("not in nvidia-smi output"),
        "devices": devices,
    }


def _device(r: dict[str, str]) -> dict[str, Any]:
    """One CSV row as a device, named as the NVML reader names its fields."""
    return {
        "index": _num(r["index"]),
        "name": r["name"],
        "uuid": r["uuid"],
        "pci_bus_id": r["pci.bus_id"],
        "cuda_capability": _smi_val(r["compute_cap"]),
        "memory_used_mib": _num(r["memory.used"]),
        "memory_total_mib": _num(r["memory.total"]),
        "utilization_pct": _num(r["utilization.gpu"]),
        "temperature_c": _num(r["temperature.gpu"]),
        "power_w": _num(r["power.draw"]),
        "ecc_uncorrected": _num(r["ecc.errors.uncorrected.volatile.total"]),
    }


def _smi_val(v: str) -> Any:
    """nvidia-smi's '[N/A]', '[Not Supported]', 'N/A' are unknowns."""
    return unknown(v) if v.startswith("[") or v in ("N/A", "") else v


def _num(v: str) -> Any:
    try:
        f = float(v)
    except ValueError:
        return _smi_val(v)
    return int(f) if f.is_integer() else f
