"""Snapshot JSON (`triage.snapshot/1`) -> flat facts for rule predicates.

A fact's value: a string/number/bool/list, None when the thing is absent, or
`Unknown(reason)` when it could not be read. In the snapshot an unreadable value is
written as {"unknown": "reason"}.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from triage.engine.predicates import version_tuple
from triage.errors import TriageError
from triage.evidence.xid import describe, xid_table
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
        raise TriageError(f'{path}: not a triage snapshot (no "schema": "{SNAPSHOT_SCHEMA}")')
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
    f["torch.cuda_init_warning"] = why or _val(tc.get("cuda_init_warning"))
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
        for key in (
            "gpu.count",
            "gpu.all.memory_used_mib",
            "gpu.any.memory_used_mib",
            "gpu.all.utilization_pct",
            "gpu.any.utilization_pct",
            "gpu.any.ecc_uncorrected",
            "driver.version",
            "driver.cuda",
        ):
            f[key] = u
    else:
        f["gpu.count"] = len(devices)
        f["driver.version"] = _val(g.get("driver_version", Unknown("not recorded")))
        f["driver.cuda"] = _val(g.get("cuda_driver_version", Unknown("not recorded")))
        for field in (
            "memory_used_mib",
            "memory_total_mib",
            "utilization_pct",
            "ecc_uncorrected",
            "retired_pages",
            "remapped_rows_failed",
            "temperature_c",
            "ecc_uncorrected_aggregate",
            "retired_pages_pending",
            "remapped_rows_pending",
            "remapped_rows_uncorrectable",
            "power_w",
        ):
            vals = [_val(d.get(field)) for d in devices if isinstance(d, dict)]
            known = [v for v in vals if v is not None and not isinstance(v, Unknown)]
            f[f"gpu.all.{field}"] = (
                known if len(known) == len(vals) and vals else Unknown(f"{field} unreadable on some GPU")
            )
            f[f"gpu.any.{field}"] = known if known else Unknown(f"{field} unreadable")
        f["gpu.names"] = [d.get("name") for d in devices if isinstance(d, dict)]
        _gpu_facts([d for d in devices if isinstance(d, dict)], f)

    k, why = _section(snap, "kernel")
    if why is not None or k.get("readable") is False:
        reason = why or Unknown(str(k.get("reason", "kernel log unreadable")))
        f["kernel.readable"] = False
        f["kernel.reason"] = reason.reason
        for key in (
            "kernel.xid",
            "kernel.oom_killer",
            "kernel.xid_text",
            "kernel.oom_killed",
            "kernel.fallen_off_bus",
            "kernel.fallen_off_bus_text",
            "kernel.xid_other",
            "kernel.xid_other_hw",
            "kernel.xid_other_text",
            "kernel.xid_ecc",
            "kernel.xid_ecc_text",
        ):
            f[key] = reason
    else:
        f["kernel.readable"] = True
        xids = [x for x in k.get("xid") or [] if isinstance(x, dict) and "code" in x]
        f["kernel.xid"] = [int(x["code"]) for x in xids]
        f["kernel.xid_text"] = _xid_text(xids)
        f["kernel.oom_killer"] = bool(k.get("oom_killer"))
        f["kernel.oom_killed"] = (
            ", ".join(
                dict.fromkeys(
                    f"{o.get('process', '?')} (pid {o['pid']})"
                    for o in k.get("oom_killer") or []
                    if isinstance(o, dict) and "pid" in o
                )
            )
            or None
        )
        f["kernel.fallen_off_bus"] = bool(k.get("fallen_off_bus")) or 79 in f["kernel.xid"]
        f["kernel.fallen_off_bus_text"] = _xid_text([x for x in xids if int(x["code"]) == 79]) or next(
            iter(k.get("fallen_off_bus") or []), None
        )
        table = xid_table()
        other = [
            c for c in dict.fromkeys(f["kernel.xid"]) if c not in table or table[c].signature == "xid-error"
        ]
        f["kernel.xid_other"] = other
        # the codes the catalog blames on the GPU itself (not the app, not a follow-up)
        f["kernel.xid_other_hw"] = [c for c in other if c in table and table[c].cause == "hardware"]
        f["kernel.xid_other_text"] = _xid_text([x for x in xids if int(x["code"]) in other])
        # memory errors whose catalog action is more than IGNORE (63, 92 are notices)
        f["kernel.xid_ecc"] = [
            c
            for c in dict.fromkeys(f["kernel.xid"])
            if c in table and table[c].signature == "gpu-ecc-error" and table[c].action != "IGNORE"
        ]
        f["kernel.xid_ecc_text"] = _xid_text([x for x in xids if int(x["code"]) in f["kernel.xid_ecc"]])
    _derived(snap, f)
    return f


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


# The accelerate version transformers checks for (`ACCELERATE_MIN_VERSION`, used by
# device_map loading and the Trainer), by transformers version, for snapshots that did
# not record it (shared/reference/messages.md section 10; boundaries between checked
# wheels). Newest first: (transformers >= this, needs accelerate >= that).
ACCELERATE_NEEDED = (((5, 0), "1.1.0"), ((4, 46), "0.26.0"), ((4, 40), "0.21.0"), ((4, 30), "0.20.1"))
BUSY_MIB = 1024  # a GPU holding at least this much (or any process) is in use


def _package_facts(snap: dict[str, Any], pk: dict[str, Any], f: dict[str, Any]) -> None:
    """`package.X`: the version when X imports (None when it is absent *or* installed
    but broken); `installed.X`: the distribution's version whether or not it imports;
    `imports.X`: True/False; `import_error.X`: why not."""
    raw = snap.get("imports")
    imports = raw if isinstance(raw, dict) else None
    probe = snap.get("probe")
    complete = not (isinstance(probe, dict) and probe.get("complete") is False)
    for name in list(pk) + [n for n in imports or {} if n not in pk]:
        n = _norm(name)
        ver = _val(pk.get(name))
        f[f"installed.{n}"] = ver
        imp = imports.get(name) if imports else None
        if isinstance(imp, dict) and "ok" in imp:
            ok = bool(imp["ok"])
            f[f"imports.{n}"] = ok
            if ok:
                # importable without metadata (PYTHONPATH, vendored): the module's version
                f[f"package.{n}"] = ver if isinstance(ver, str) else str(imp.get("version") or "unknown")
            else:
                f[f"package.{n}"] = None
                f[f"import_error.{n}"] = str(imp.get("error", "import failed"))
        elif imports is not None and not complete and ver is not None:
            f[f"imports.{n}"] = Unknown("the probe stopped before importing it")
            f[f"package.{n}"] = Unknown(f"installed {ver}, import not checked (probe incomplete)")
        else:
            f[f"package.{n}"] = ver  # an older snapshot without import checks: installed
    tr = snap.get("transformers")
    need = tr.get("accelerate_min_version") if isinstance(tr, dict) else None
    tv = (
        version_tuple(f.get("package.transformers"))
        if isinstance(f.get("package.transformers"), str)
        else None
    )
    if not isinstance(need, str) and tv is not None:
        need = next((v for since, v in ACCELERATE_NEEDED if tv >= since), None)
    acc = f.get("package.accelerate", Unknown("not recorded"))
    f["accelerate.required"] = need if isinstance(need, str) else Unknown("transformers version unknown")
    if isinstance(need, str) and isinstance(acc, str) and version_tuple(acc) is not None:
        f["accelerate.sufficient"] = _vge(acc, need)
    elif acc is None and "package.accelerate" in f:
        f["accelerate.sufficient"] = False
    else:
        f["accelerate.sufficient"] = Unknown("accelerate or transformers version unknown")


def _vge(a: str, b: str) -> bool:
    ta, tb = version_tuple(a) or (), version_tuple(b) or ()
    n = max(len(ta), len(tb))
    return ta + (0,) * (n - len(ta)) >= tb + (0,) * (n - len(tb))


def _gpu_facts(devices: list[dict[str, Any]], f: dict[str, Any]) -> None:
    """Per-node summaries: lost GPUs, busy vs idle, compute capabilities, throttling."""
    busy: list[int] = []
    idle: list[int] = []
    for i, d in enumerate(devices):
        idx = d.get("index", i)
        mem = _val(d.get("memory_used_mib"))
        procs = _val(d.get("processes"))
        if (isinstance(mem, int | float) and mem >= BUSY_MIB) or (isinstance(procs, list) and procs):
            busy.append(idx)
        elif isinstance(mem, int | float):
            idle.append(idx)
    f["gpu.lost"] = sum(1 for d in devices if d.get("lost") is True)
    f["gpu.busy"] = busy
    f["gpu.idle"] = idle
    f["gpu.busy_count"] = len(busy)
    f["gpu.idle_count"] = len(idle)
    caps = [_val(d.get("cuda_capability")) for d in devices]
    f["gpu.capabilities"] = (
        [c for c in caps if isinstance(c, str)]
        if caps and all(isinstance(c, str) for c in caps)
        else Unknown("compute capability unreadable")
    )
    reasons = {
        r
        for d in devices
        if isinstance(d.get("throttle_reasons"), list)
        for r in d["throttle_reasons"]
        if r != "gpu_idle"
    }
    f["gpu.throttle_reasons"] = sorted(reasons)


def _xid_text(xids: list[dict[str, Any]]) -> str | None:
    """'79 (GPU has fallen off the bus; action RESTART_BM) on 0000:3b:00' per code/GPU."""
    seen: dict[tuple[int, str], str] = {}
    for x in xids:
        key = (int(x["code"]), str(x.get("pci", "?")))
        seen.setdefault(key, f"Xid {describe(key[0])} on {key[1]}")
    return "; ".join(seen.values()) or None


def _derived(snap: dict[str, Any], f: dict[str, Any]) -> None:
    """Facts that compare two readings (rules compare a fact with a constant only)."""
    tc, dc = f.get("torch.cuda"), f.get("driver.cuda")
    if isinstance(tc, Unknown) or isinstance(dc, Unknown) or "driver.cuda" not in f:
        why = (
            tc
            if isinstance(tc, Unknown)
            else dc
            if isinstance(dc, Unknown)
            else Unknown("driver CUDA version not recorded")
        )
        f["torch.cuda_newer_than_driver"] = why
        f["torch.cuda_major_newer_than_driver"] = why
    elif tc is None or dc is None:
        f["torch.cuda_newer_than_driver"] = None  # a CPU build, or no driver: nothing to compare
        f["torch.cuda_major_newer_than_driver"] = None
    else:
        t, d = version_tuple(tc), version_tuple(dc)
        if t is None or d is None:
            f["torch.cuda_newer_than_driver"] = Unknown(f"cannot compare {tc!r} with {dc!r}")
            f["torch.cuda_major_newer_than_driver"] = Unknown(f"cannot compare {tc!r} with {dc!r}")
        else:
            f["torch.cuda_newer_than_driver"] = t[:2] > d[:2]
            f["torch.cuda_major_newer_than_driver"] = t[0] > d[0]
    f["gpu.arch_unsupported"] = _arch_unsupported(f.get("torch.arch_list"), f.get("gpu.capabilities"))
    un = f["gpu.arch_unsupported"]
    f["torch.arch_ok"] = un if isinstance(un, Unknown) else None if un is None else not un

    cg = _val(snap.get("cgroup"))
    kills = _val(cg.get("oom_kill")) if isinstance(cg, dict) else Unknown("cgroup not recorded")
    f["cgroup.oom_kill"] = kills if kills is not None else Unknown("not recorded")

    tm, tm_why = _section(snap, "tmux")
    for key in (
        "pane_dead",
        "pane_dead_status",
        "pane_dead_signal",
        "pane_pid",
        "history_size",
        "pane_pipe",
        "remain_on_exit",
    ):
        f[f"tmux.{key}"] = _val(tm.get(key, tm_why or Unknown("not recorded")))
    probe = snap.get("probe")
    f["probe.complete"] = (
        bool(probe.get("complete")) if isinstance(probe, dict) else Unknown("no probe recorded")
    )


def _arch_unsupported(arch: Any, caps: Any) -> Any:
    """GPU architectures the torch build has no kernels for: sm_XY runs on the same
    major with minor >= Y; compute_XY (PTX) is JIT-compiled for anything >= XY."""
    if isinstance(arch, Unknown):
        return arch
    if isinstance(caps, Unknown):
        return caps
    if caps is None:
        return Unknown("GPU capabilities not recorded")
    if not isinstance(arch, list) or not arch:
        return None  # a CPU build, or a build that does not say
    sms: list[tuple[int, int]] = []
    ptx: list[tuple[int, int]] = []
    for a in arch:
        m = _ARCH_RE.fullmatch(str(a))
        if m:
            (sms if m.group(1) == "sm" else ptx).append((int(m.group(2)[:-1]), int(m.group(2)[-1])))
    out = []
    for c in caps:
        v = version_tuple(c)
        if v is None or len(v) < 2:
            continue
        major, minor = v[0], v[1]
        ok = any(major == sm_major and sm_minor <= minor for sm_major, sm_minor in sms) or any(
            p <= (major, minor) for p in ptx
        )
        if not ok:
            out.append(f"sm_{major}{minor}")
    return sorted(set(out))


_ARCH_RE = re.compile(r"(sm|compute)_(\d{2,3})a?")
