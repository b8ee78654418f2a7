"""Take an evidence snapshot (`triage.snapshot/1`) of this machine and a run's interpreter.

Every part is collected on its own and never raises: a value that cannot be read is
written as {"unknown": "reason"}, so a machine with no GPU, no driver or no permission
to read the kernel log still gets a complete snapshot. Side effects stay here; turning
a snapshot into facts is facts.py's job (pure).

- python, packages, imports, torch: from probe.py, run in the given interpreter (the
  training run's venv), because triage's own environment proves nothing about it.
- gpus: NVML through nvidia-ml-py (imported lazily), each query turned into a value or
  an unknown (nvitop's nvmlQuery style); `nvidia-smi` when nvidia-ml-py is missing.
- kernel: `dmesg`, else /dev/kmsg, else `journalctl -k`: NVRM Xid lines and OOM-killer
  lines.
- inductor_cache, host memory, cgroup OOM kills, tmux pane state.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import getpass
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from triage.evidence.facts import SNAPSHOT_SCHEMA
from triage.evidence.xid import FELL_OFF_RE, parse_xid_line
from triage.vocabulary import PACKAGES, VERSION_ONLY

PROBE_TIMEOUT_S = 120.0
CMD_TIMEOUT_S = 15.0
MAX_KERNEL_MATCHES = 50
CACHE_WALK_BUDGET_S = 3.0
CACHE_WALK_MAX_FILES = 500_000
# Environment variables that change how a run behaves; a fixed list, so no secret leaks.
ENV_KEYS = (
    "CUDA_VISIBLE_DEVICES",
    "TORCHINDUCTOR_CACHE_DIR",
    "TRITON_CACHE_DIR",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "TORCH_LOGS",
    "TORCHDYNAMO_VERBOSE",
    "NCCL_DEBUG",
    "NCCL_P2P_DISABLE",
    "NCCL_IB_DISABLE",
    "CUDA_LAUNCH_BLOCKING",
    "OMP_NUM_THREADS",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
)
OOM_RE = re.compile(
    r"Out of memory: Killed process|invoked oom-killer|oom-kill:constraint="
    r"|Memory cgroup out of memory: Killed process|oom_reaper: reaped process"
)
OOM_KILLED_RE = re.compile(r"Killed process (?P<pid>\d+) \((?P<name>[^)]*)\)")


def unknown(reason: str) -> dict[str, str]:
    """The snapshot's way of saying "could not be read, and why"."""
    return {"unknown": reason}


def collect(
    python: str | None = None,
    tmux_target: str | None = None,
    *,
    probe_timeout: float = PROBE_TIMEOUT_S,
    kernel: bool = True,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A complete snapshot. `python`: the run's interpreter (or its venv folder);
    default this one. `tmux_target`: a pane to describe (session[:window.pane])."""
    env = os.environ if env is None else env
    t0 = time.monotonic()
    snap: dict[str, Any] = {
        "schema": SNAPSHOT_SCHEMA,
        "host": _safe(socket.gethostname),
        "time": dt.datetime.now(dt.UTC).astimezone().isoformat(timespec="seconds"),
        "collector": _collector(),
    }
    exe = resolve_python(python)
    probe = run_probe(exe, timeout=probe_timeout)
    for key in ("python", "packages", "imports", "torch", "transformers", "probe"):
        if key in probe:
            snap[key] = probe[key]
    snap["env"] = {k: env[k] for k in ENV_KEYS if k in env}
    snap["inductor_cache"] = _guard(lambda: inductor_cache(env), "inductor cache")
    snap["gpus"] = _guard(gpus, "GPUs")
    snap["kernel"] = (
        _guard(kernel_log, "kernel log")
        if kernel
        else {"readable": False, "reason": "not collected (--no-kernel)"}
    )
    snap["host_memory"] = _guard(host_memory, "host memory")
    snap["cgroup"] = _guard(cgroup_memory, "cgroup")
    if tmux_target:
        snap["tmux"] = _guard(lambda: tmux_pane(tmux_target), "tmux")
    snap["collect_seconds"] = round(time.monotonic() - t0, 2)
    return snap


def _collector() -> dict[str, Any]:
    from triage import __version__

    return {"triage": __version__, "python": sys.executable}


def _safe(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as e:
        return unknown(f"{type(e).__name__}: {e}")


def _guard(fn: Callable[[], Any], what: str) -> Any:
    """A collector that fails becomes an unknown section, never a failed snapshot."""
    try:
        return fn()
    except Exception as e:  # collecting evidence must never take triage down
        return unknown(f"{what}: {type(e).__name__}: {e}")


# ---------------------------------------------------------------- the run's interpreter


def resolve_python(python: str | None) -> str:
    """An interpreter path, or a venv folder (its bin/python); default: this one."""
    if not python:
        return sys.executable
    p = Path(python).expanduser()
    if p.is_dir():
        for cand in (p / "bin" / "python", p / "bin" / "python3", p / "Scripts" / "python.exe"):
            if cand.exists():
                return str(cand)
    found = shutil.which(python) if os.sep not in python else None
    return found or str(p)


def probe_args() -> list[str]:
    """The probe's package lists, from the one declared in triage.vocabulary (the probe
    cannot import triage: it runs in the training run's interpreter)."""
    return [
        "--packages=" + ",".join(f"{dist}:{module}" for dist, module in PACKAGES),
        "--version-only=" + ",".join(VERSION_ONLY),
    ]


def run_probe(python: str, *, timeout: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
    """Run probe.py in `python`; merge its JSON lines. Missing parts become unknown."""
    source = Path(__file__).with_name("probe.py").read_text(encoding="utf-8")
    cmd = [python, "-c", source, "--lines", *probe_args()]
    penv = dict(os.environ, PYTHONIOENCODING="utf-8", PYTHONDONTWRITEBYTECODE="1")
    out = ""
    why: str | None = None
    try:
        # an empty cwd: nothing in the caller's folder can shadow a package being probed
        with tempfile.TemporaryDirectory(prefix="triage-probe-") as cwd:
            proc = subprocess.run(
                cmd, capture_output=True, timeout=timeout, cwd=cwd, env=penv, stdin=subprocess.DEVNULL
            )
        out = proc.stdout.decode("utf-8", "replace")
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            why = f"probe exited {proc.returncode}" + (f": {err[-1][:200]}" if err else "")
    except FileNotFoundError:
        why = f"no such interpreter: {python}"
    except PermissionError:
        why = f"cannot run {python}: permission denied"
    except OSError as e:
        why = f"cannot run {python}: {e.strerror or e}"
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace") if isinstance(e.stdout, bytes) else ""
        why = f"probe timed out after {timeout:.0f} s"
    result = merge_probe_lines(out.splitlines())
    if why is not None or not result.get("probe", {}).get("complete"):
        reason = why or "probe output incomplete"
        result.setdefault("probe", {})["complete"] = False
        result["probe"]["reason"] = reason
        for key in ("python", "packages", "torch"):
            result.setdefault(key, unknown(f"{reason} ({python})"))
    return result


def merge_probe_lines(lines: Iterable[str]) -> dict[str, Any]:
    """Merge the probe's `--lines` output: one {"section": value} object per line."""
    result: dict[str, Any] = {}
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            part = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(part, dict):
            continue
        for k, v in part.items():
            if isinstance(v, dict) and isinstance(result.get(k), dict):
                result[k].update(v)
            else:
                result[k] = v
    return result


# ---------------------------------------------------------------- inductor cache


def inductor_cache(env: Mapping[str, str]) -> dict[str, Any]:
    """TORCHINDUCTOR_CACHE_DIR or torch's default (<tmp>/torchinductor_<user>): does it
    exist, how many files, how big, how recent. Read in triage's environment."""
    if env.get("TORCHINDUCTOR_CACHE_DIR"):
        path, origin = env["TORCHINDUCTOR_CACHE_DIR"], "TORCHINDUCTOR_CACHE_DIR"
    else:
        try:
            user = re.sub(r'[\\/:*?"<>|]', "_", getpass.getuser())
        except Exception:  # no passwd entry (containers): torch would fail the same way
            user = str(os.getuid())
        path, origin = os.path.join(tempfile.gettempdir(), f"torchinductor_{user}"), "default"
    out: dict[str, Any] = {"path": path, "origin": origin}
    p = Path(path)
    try:
        if not p.exists():
            out.update(exists=False, entries=0, size_bytes=0, newest=None)
            return out
        if not p.is_dir():
            out.update(exists=True, entries=unknown("not a folder"))
            return out
    except OSError as e:
        out.update(exists=unknown(e.strerror or str(e)), entries=unknown(e.strerror or str(e)))
        return out
    out["exists"] = True
    out["subdirs"] = sorted(c.name for c in p.iterdir() if c.is_dir())[:30]
    files = size = 0
    newest = 0.0
    capped = False
    deadline = time.monotonic() + CACHE_WALK_BUDGET_S
    for root, _dirs, names in os.walk(p, onerror=lambda e: None):
        for n in names:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(root, n))
                files += 1
                size += st.st_size
                newest = max(newest, st.st_mtime)
        if files >= CACHE_WALK_MAX_FILES or time.monotonic() > deadline:
            capped = True
            break
    out["entries"] = files
    out["size_bytes"] = size
    out["newest"] = _iso(newest) if newest else None
    if capped:
        out["capped"] = True  # counted until the time/file budget ran out: at least this many
    return out


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).astimezone().isoformat(timespec="seconds")


# ---------------------------------------------------------------- GPUs

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
MIB = 1024 * 1024


def gpus() -> dict[str, Any]:
    """GPU state through NVML (nvidia-ml-py), else nvidia-smi, else unknown."""
    try:
        import pynvml  # lazily: triage core never imports it
    except ImportError:
        smi = _nvidia_smi()
        if smi is not None:
            return smi
        return unknown(
            "nvidia-ml-py is not installed for triage (pip install nvidia-ml-py) "
            "and nvidia-smi is not available"
        )
    return _nvml(pynvml)


class _Q:
    """Call NVML functions, turning every NVMLError into {"unknown": reason}."""

    def __init__(self, nv: Any) -> None:
        self.nv = nv
        self.lost = False

    def __call__(self, name: str, *args: Any, **kw: Any) -> Any:
        fn = getattr(self.nv, name, None)
        if fn is None:
            return unknown(f"{name} not in this nvidia-ml-py")
        try:
            return fn(*args, **kw)
        except self.nv.NVMLError as e:
            reason = _nvml_reason(self.nv, e)
            if reason == "GPU is lost":
                self.lost = True
            return unknown(reason)
        except Exception as e:
            return unknown(f"{name}: {type(e).__name__}: {e}")


def _nvml_reason(nv: Any, e: Exception) -> str:
    try:
        return str(nv.nvmlErrorString(e.value)) if hasattr(e, "value") else str(e)
    except Exception:
        return str(e) or type(e).__name__


def _is_unknown(v: Any) -> bool:
    return isinstance(v, dict) and set(v) == {"unknown"}


def _text(v: Any) -> Any:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def _nvml(nv: Any) -> dict[str, Any]:
    try:
        nv.nvmlInit()
    except nv.NVMLError as e:
        return unknown(f"NVML: {_nvml_reason(nv, e)} (no NVIDIA driver or GPU visible)")
    except Exception as e:
        return unknown(f"NVML init failed: {type(e).__name__}: {e}")
    try:
        q = _Q(nv)
        out: dict[str, Any] = {"source": "nvml"}
        out["driver_version"] = _text(q("nvmlSystemGetDriverVersion"))
        cuda = q("nvmlSystemGetCudaDriverVersion_v2")
        if _is_unknown(cuda):
            cuda = q("nvmlSystemGetCudaDriverVersion")
        out["cuda_driver_version"] = (
            f"{cuda // 1000}.{(cuda % 1000) // 10}" if isinstance(cuda, int) else cuda
        )
        out["nvml_version"] = _text(q("nvmlSystemGetNVMLVersion"))
        count = q("nvmlDeviceGetCount")
        if not isinstance(count, int):
            out["devices"] = count
            return out
        out["devices"] = [_device(nv, q, i) for i in range(count)]
        return out
    finally:
        with contextlib.suppress(Exception):
            nv.nvmlShutdown()


def _device(nv: Any, q: _Q, i: int) -> dict[str, Any]:
    q.lost = False
    d: dict[str, Any] = {"index": i}
    h = q("nvmlDeviceGetHandleByIndex", i)
    if _is_unknown(h):
        d["error"] = h["unknown"]
        d["lost"] = q.lost
        for k in ("memory_used_mib", "memory_total_mib", "utilization_pct", "ecc_uncorrected"):
            d[k] = h
        return d
    d["name"] = _text(q("nvmlDeviceGetName", h))
    d["uuid"] = _text(q("nvmlDeviceGetUUID", h))
    pci = q("nvmlDeviceGetPciInfo", h)
    d["pci_bus_id"] = _text(getattr(pci, "busId", None)) if not _is_unknown(pci) else pci
    cc = q("nvmlDeviceGetCudaComputeCapability", h)
    d["cuda_capability"] = f"{cc[0]}.{cc[1]}" if isinstance(cc, tuple) else cc
    mem: Any = unknown("no memory info")
    if hasattr(nv, "nvmlMemory_v2"):  # v2 reports driver-reserved memory apart from "used"
        mem = q("nvmlDeviceGetMemoryInfo", h, version=nv.nvmlMemory_v2)
    if _is_unknown(mem):
        mem = q("nvmlDeviceGetMemoryInfo", h)
    if _is_unknown(mem):
        d["memory_used_mib"] = d["memory_total_mib"] = mem
    else:
        d["memory_used_mib"] = int(mem.used) // MIB
        d["memory_total_mib"] = int(mem.total) // MIB
    util = q("nvmlDeviceGetUtilizationRates", h)
    d["utilization_pct"] = util if _is_unknown(util) else int(util.gpu)
    d["memory_utilization_pct"] = util if _is_unknown(util) else int(util.memory)
    d["temperature_c"] = q("nvmlDeviceGetTemperature", h, getattr(nv, "NVML_TEMPERATURE_GPU", 0))
    power = q("nvmlDeviceGetPowerUsage", h)
    d["power_w"] = round(power / 1000, 1) if isinstance(power, int | float) else power
    limit = q("nvmlDeviceGetEnforcedPowerLimit", h)
    d["power_limit_w"] = round(limit / 1000, 1) if isinstance(limit, int | float) else limit
    unc = getattr(nv, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
    d["ecc_uncorrected"] = q("nvmlDeviceGetTotalEccErrors", h, unc, getattr(nv, "NVML_VOLATILE_ECC", 0))
    d["ecc_uncorrected_aggregate"] = q(
        "nvmlDeviceGetTotalEccErrors", h, unc, getattr(nv, "NVML_AGGREGATE_ECC", 1)
    )
    retired: Any = 0
    for cause in (
        getattr(nv, "NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS", 0),
        getattr(nv, "NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR", 1),
    ):
        pages = q("nvmlDeviceGetRetiredPages", h, cause)
        retired = (
            pages if _is_unknown(pages) else (retired + len(pages) if isinstance(retired, int) else retired)
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
        d["remapped_rows_uncorrectable"] = d["remapped_rows_pending"] = rows
        d["remapped_rows_failed"] = rows
    reasons = q("nvmlDeviceGetCurrentClocksEventReasons", h)
    if _is_unknown(reasons):
        reasons = q("nvmlDeviceGetCurrentClocksThrottleReasons", h)
    d["throttle_reasons"] = (
        [name for bit, name in THROTTLE_BITS if reasons & bit] if isinstance(reasons, int) else reasons
    )
    d["processes"] = _processes(nv, q, h)
    d["lost"] = q.lost
    return d


def _processes(nv: Any, q: _Q, h: Any) -> Any:
    procs: dict[int, dict[str, Any]] = {}
    got_any = False
    reason = "no process list"
    for fn in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        res = q(fn, h)
        if _is_unknown(res):
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
            entry["name"] = _text(name) if not _is_unknown(name) else _comm(pid)
    return list(procs.values()) if got_any else unknown(reason)


def _comm(pid: int) -> Any:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return unknown("process not visible from here")


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


def _nvidia_smi() -> dict[str, Any] | None:
    """The same facts from `nvidia-smi` when nvidia-ml-py is not installed."""
    if not shutil.which("nvidia-smi"):
        return None
    rc, out, err = _run(
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
        devices.append(
            {
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
        )
    rc2, banner, _ = _run(["nvidia-smi"])
    m = re.search(r"CUDA Version:\s*(\d+\.\d+)", banner) if rc2 == 0 else None
    return {
        "source": "nvidia-smi",
        "driver_version": driver,
        "cuda_driver_version": m.group(1) if m else unknown("not in nvidia-smi output"),
        "devices": devices,
    }


def _smi_val(v: str) -> Any:
    return unknown(v) if v.startswith("[") or v in ("N/A", "") else v


def _num(v: str) -> Any:
    try:
        f = float(v)
    except ValueError:
        return _smi_val(v)
    return int(f) if f.is_integer() else f


# ---------------------------------------------------------------- kernel log


def kernel_log() -> dict[str, Any]:
    """Xid and OOM-killer lines from the kernel log, from the first source that reads."""
    tried: list[str] = []
    for name, reader in (("dmesg", _dmesg), ("/dev/kmsg", _kmsg), ("journalctl -k", _journal)):
        lines, why = reader()
        if lines is not None:
            return scan_kernel_lines(lines, name)
        tried.append(f"{name}: {why}")
    return {"readable": False, "reason": "; ".join(tried)}


def scan_kernel_lines(lines: Iterable[str], source: str) -> dict[str, Any]:
    """Kernel log lines -> {readable, source, lines, xid[...], oom_killer[...], ...}."""
    xids: list[dict[str, Any]] = []
    ooms: list[dict[str, Any]] = []
    fell: list[str] = []
    n = 0
    for line in lines:
        n += 1
        if "NVRM" in line:
            x = parse_xid_line(line)
            if x is not None:
                xids.append(x)
            elif FELL_OFF_RE.search(line):
                fell.append(line.strip()[:500])
        if ("oom" in line.lower() or "Out of memory" in line) and OOM_RE.search(line):
            entry: dict[str, Any] = {"text": line.strip()[:500]}
            m = OOM_KILLED_RE.search(line)
            if m:
                entry["pid"] = int(m.group("pid"))
                entry["process"] = m.group("name")
            ooms.append(entry)
    return {
        "readable": True,
        "source": source,
        "lines": n,
        "xid": xids[-MAX_KERNEL_MATCHES:],
        "xid_total": len(xids),
        "fallen_off_bus": fell[-MAX_KERNEL_MATCHES:],
        "oom_killer": ooms[-MAX_KERNEL_MATCHES:],
        "oom_killer_total": len(ooms),
    }


def _run(cmd: list[str], timeout: float = CMD_TIMEOUT_S) -> tuple[int, str, str]:
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return 127, "", f"{cmd[0]}: not installed"
    except subprocess.TimeoutExpired:
        return 124, "", f"{cmd[0]}: timed out after {timeout:.0f} s"
    except OSError as e:
        return 126, "", f"{cmd[0]}: {e.strerror or e}"
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def _dmesg() -> tuple[list[str] | None, str]:
    rc, out, err = _run(["dmesg", "--time-format", "iso"])
    if rc != 0 and "Operation not permitted" not in err and rc not in (124, 127):
        rc, out, err = _run(["dmesg"])  # an old dmesg without --time-format
    if rc != 0:
        return None, _first_line(err) or f"exit {rc}"
    return out.splitlines(), ""


def _kmsg(budget_s: float = 5.0) -> tuple[list[str] | None, str]:
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        return None, e.strerror or str(e)
    lines: list[str] = []
    deadline = time.monotonic() + budget_s
    try:
        while time.monotonic() < deadline:
            try:
                rec = os.read(fd, 16384)
            except BlockingIOError:
                break  # the end of the ring buffer
            except BrokenPipeError:
                continue  # a record was overwritten while reading: skip it
            except OSError as e:
                if not lines:
                    return None, e.strerror or str(e)
                break
            if not rec:
                break
            text = rec.decode("utf-8", "replace")
            lines.append(text.split(";", 1)[1].split("\n", 1)[0] if ";" in text else text)
    finally:
        os.close(fd)
    return lines, ""


def _journal() -> tuple[list[str] | None, str]:
    rc, out, err = _run(["journalctl", "-k", "-b", "--no-pager", "-q", "-o", "short-iso"])
    if rc != 0:
        return None, _first_line(err) or f"exit {rc}"
    lines = [ln for ln in out.splitlines() if ln.strip() and not ln.startswith("-- ")]
    if not lines:
        return None, "no entries (no journal, or no permission to read it)"
    return lines, ""


def _first_line(s: str) -> str:
    for ln in s.strip().splitlines():
        if ln.strip():
            return ln.strip()[:200]
    return ""


# ---------------------------------------------------------------- host memory, cgroup


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


def cgroup_memory() -> dict[str, Any]:
    """This process's cgroup v2 memory limit and OOM-kill counter (a container's OOM
    kills are counted here even when the kernel log is not readable)."""
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


# ---------------------------------------------------------------- tmux

TMUX_FIELDS = (
    "session_name",
    "window_index",
    "pane_index",
    "pane_id",
    "pane_pid",
    "pane_dead",
    "pane_dead_status",
    "pane_dead_signal",
    "pane_dead_time",
    "pane_current_command",
    "pane_start_command",
    "history_size",
    "history_limit",
    "pane_pipe",
    "remain-on-exit",
)
_TMUX_INTS = {
    "window_index",
    "pane_index",
    "pane_pid",
    "pane_dead_status",
    "pane_dead_signal",
    "pane_dead_time",
    "history_size",
    "history_limit",
}


def tmux_pane(target: str) -> dict[str, Any]:
    """A pane's state: dead or alive, exit status, pid, scrollback size, piped or not."""
    if not shutil.which("tmux"):
        return unknown("tmux is not installed")
    fmt = "\t".join("#{" + f + "}" for f in TMUX_FIELDS)
    rc, out, err = _run(["tmux", "display-message", "-p", "-t", target, fmt])
    if rc != 0:
        return unknown(f"tmux: {_first_line(err) or f'exit {rc}'} (target {target!r})")
    vals = out.rstrip("\n").split("\t")
    res: dict[str, Any] = {"target": target}
    for k, v in zip(TMUX_FIELDS, vals, strict=False):
        key = k.replace("-", "_")
        if v == "":
            res[key] = unknown("not reported by this tmux") if k != "pane_dead_status" else None
        elif k in _TMUX_INTS:
            res[key] = int(v) if v.removeprefix("-").isdecimal() and v.isascii() else v
        elif k in ("pane_dead", "pane_pipe"):
            res[key] = v == "1"
        elif k == "remain-on-exit":
            res[key] = v in ("on", "1", "failed")
        else:
            res[key] = v
    if res.get("pane_dead") is False and isinstance(res.get("pane_dead_status"), int):
        res["pane_dead_status"] = None
    if isinstance(res.get("pane_dead_time"), int):
        res["pane_dead_time"] = _iso(res["pane_dead_time"])
    return res
