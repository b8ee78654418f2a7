"""Snapshot JSON (`triage.snapshot/1`) -> flat facts for rule predicates.

A fact's value: a string/number/bool/list, None when the thing is absent, or
`Unknown(reason)` when it could not be read. In the snapshot an unreadable value is
written as {"unknown": "reason"}.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from triage.errors import TriageError
from triage.model import Unknown

SNAPSHOT_SCHEMA = "triage.snapshot/1"


def load_snapshot(path: str) -> dict[str, Any]:
    """Read a recorded snapshot; a bad file is a one-line error."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TriageError(f"{path}: no such snapshot file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise TriageError(f"{path}: cannot read snapshot ({e})") from None
    except json.JSONDecodeError as e:
        raise TriageError(f"{path}: not a JSON snapshot ({e.msg} at line {e.lineno})") from None
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith("triage.snapshot/"):
        raise TriageError(f"{path}: not a triage snapshot (no \"schema\": \"{SNAPSHOT_SCHEMA}\")")
    return data


def _val(v: Any) -> Any:
    if isinstance(v, dict) and set(v) == {"unknown"}:
        return Unknown(str(v["unknown"]))
    return v


def _section(snap: dict[str, Any], key: str) -> tuple[dict[str, Any], Unknown | None]:
    v = snap.get(key)
    if v is None:
        return {}, Unknown(f"{key} not in snapshot")
    v = _val(v)
    if isinstance(v, Unknown):
        return {}, v
    if not isinstance(v, dict):
        return {}, Unknown(f"{key} malformed")
    return v, None


def facts_from_snapshot(snap: dict[str, Any]) -> dict[str, Any]:
    """Flatten a snapshot into the predicate vocabulary (see engine/predicates.py)."""
    f: dict[str, Any] = {}
    py, _ = _section(snap, "python")
    f["python.executable"] = _val(py.get("executable", Unknown("not recorded")))
    f["python.version"] = _val(py.get("version", Unknown("not recorded")))
    f["host"] = _val(snap.get("host", Unknown("not recorded")))

    pk, why = _section(snap, "packages")
    if why is not None:
        f["packages"] = why
    _package_facts(snap, pk, f)

    tc, why = _section(snap, "torch")
    for key in ("version", "cuda", "cudnn", "cuda_available", "arch_list", "hip"):
        f[f"torch.{key}"] = _val(tc.get(key, why or Unknown("not recorded")))
    f["torch.cuda_init_warning"] = _val(tc.get("cuda_init_warning")) if not why else why
    f["torch.device_count"] = _val(tc.get("device_count", why or Unknown("not recorded")))

    ic, why = _section(snap, "inductor_cache")
    entries = _val(ic.get("entries", why or Unknown("not recorded")))
    exists = _val(ic.get("exists", why or Unknown("not recorded")))
    f["inductor_cache.entries"] = entries
    f["inductor_cache.exists"] = exists
    f["inductor_cache.path"] = _val(ic.get("path", why or Unknown("not recorded")))
    if exists is False or (isinstance(entries, int) and entries == 0):
        f["inductor_cache.cold"] = True
    elif isinstance(entries, int):
        f["inductor_cache.cold"] = False
    else:
        f["inductor_cache.cold"] = entries if isinstance(entries, Unknown) else Unknown("unreadable")

    g, why = _section(snap, "gpus")
    devices = g.get("devices")
    if why is not None or not isinstance(devices, list):
        u = why or Unknown("no GPU list")
        for k in ("gpu.count", "gpu.all.memory_used_mib", "gpu.any.memory_used_mib",
                  "gpu.all.utilization_pct", "gpu.any.utilization_pct",
                  "gpu.any.ecc_uncorrected", "driver.version", "driver.cuda"):
            f[k] = u
    else:
        f["gpu.count"] = len(devices)
        f["driver.version"] = _val(g.get("driver_version", Unknown("not recorded")))
        f["driver.cuda"] = _val(g.get("cuda_driver_version", Unknown("not recorded")))
        for field in ("memory_used_mib", "memory_total_mib", "utilization_pct", "ecc_uncorrected",
                      "retired_pages", "remapped_rows_failed", "temperature_c"):
            vals = [_val(d.get(field)) for d in devices if isinstance(d, dict)]
            known = [v for v in vals if v is not None and not isinstance(v, Unknown)]
            f[f"gpu.all.{field}"] = known if len(known) == len(vals) and vals else Unknown(
                f"{field} unreadable on some GPU")
            f[f"gpu.any.{field}"] = known if known else Unknown(f"{field} unreadable")
        f["gpu.names"] = [d.get("name") for d in devices if isinstance(d, dict)]
        _gpu_facts([d for d in devices if isinstance(d, dict)], f)

    k, why = _section(snap, "kernel")
    if why is not None or k.get("readable") is False:
        reason = why or Unknown(str(k.get("reason", "kernel log unreadable")))
        f["kernel.readable"] = False
        f["kernel.reason"] = reason.reason
        for key in ("kernel.xid", "kernel.oom_killer", "kernel.xid_text", "kernel.oom_killed",
                    "kernel.fallen_off_bus"):
            f[key] = reason
    else:
        f["kernel.readable"] = True
        xids = [x for x in k.get("xid") or [] if isinstance(x, dict) and "code" in x]
        f["kernel.xid"] = [int(x["code"]) for x in xids]
        f["kernel.xid_text"] = _xid_text(xids)
        f["kernel.oom_killer"] = bool(k.get("oom_killer"))
        f["kernel.oom_killed"] = ", ".join(dict.fromkeys(
            f"{o.get('process', '?')} (pid {o['pid']})" for o in k.get("oom_killer") or []
            if isinstance(o, dict) and "pid" in o)) or None
        f["kernel.fallen_off_bus"] = bool(k.get("fallen_off_bus")) or 79 in f["kernel.xid"]
    _derived(snap, f)
    return f


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")
