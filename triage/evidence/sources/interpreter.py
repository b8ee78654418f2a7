"""Source `interpreter`: the training run's Python, as probe.py reports it from inside.

The probe runs in the run's interpreter (its venv), because triage's own environment
proves nothing about the run's. One probe run writes the `python`, `torch`, `probe`
sections here and the `packages`, `imports`, `transformers` sections whose facts are
packages.py's. Facts: `python.*`, `torch.*` (the build), `probe.complete`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from triage.evidence.snapshot import section, unknown, value
from triage.evidence.sources.base import PROBE_TIMEOUT_S, Context, Facts, Source
from triage.evidence.sources.packages import probe_args
from triage.model import Unknown
from triage.vocabulary import SNAPSHOT_SOURCES

PROBE = Path(__file__).resolve().parent.parent / "probe.py"
PROBE_SECTIONS = ("python", "packages", "imports", "torch", "transformers", "probe")
TORCH_KEYS = ("version", "cuda", "cudnn", "cuda_available", "arch_list", "hip")


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


def run_probe(python: str, *, timeout: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
    """Run probe.py in `python`; merge its JSON lines. Missing parts become unknown."""
    out, why = _run(python, timeout)
    result = merge_probe_lines(out.splitlines())
    if why is not None or not result.get("probe", {}).get("complete"):
        reason = why or "probe output incomplete"
        result.setdefault("probe", {})["complete"] = False
        result["probe"]["reason"] = reason
        for key in ("python", "packages", "torch"):
            result.setdefault(key, unknown(f"{reason} ({python})"))
    return result


def _run(python: str, timeout: float) -> tuple[str, str | None]:
    """The probe's stdout, and why it did not finish (None when it did)."""
    cmd = [python, "-c", PROBE.read_text(encoding="utf-8"), "--lines", *probe_args()]
    penv = dict(os.environ, PYTHONIOENCODING="utf-8", PYTHONDONTWRITEBYTECODE="1")
    try:
        # an empty cwd: nothing in the caller's folder can shadow a package being probed
        with tempfile.TemporaryDirectory(prefix="triage-probe-") as cwd:
            proc = subprocess.run(
                cmd, capture_output=True, timeout=timeout, cwd=cwd, env=penv, stdin=subprocess.DEVNULL
            )
    except FileNotFoundError:
        return "", f"no such interpreter: {python}"
    except PermissionError:
        return "", f"cannot run {python}: permission denied"
    except OSError as e:
        return "", f"cannot run {python}: {e.strerror or e}"
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace") if isinstance(e.stdout, bytes) else ""
        return out, f"probe timed out after {timeout:.0f} s"
    out = proc.stdout.decode("utf-8", "replace")
    if proc.returncode == 0:
        return out, None
    err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    return out, f"probe exited {proc.returncode}" + (f": {err[-1][:200]}" if err else "")


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


def collect(ctx: Context) -> dict[str, Any]:
    """The probe's sections, in the order the snapshot has always listed them."""
    probe = run_probe(resolve_python(ctx.python), timeout=ctx.probe_timeout)
    return {key: probe[key] for key in PROBE_SECTIONS if key in probe}


def facts(snap: Mapping[str, Any], earlier: Mapping[str, Any]) -> Facts:
    """`python.executable`, `python.version`, the torch build, `probe.complete`."""
    py, _ = section(snap, "python")
    f: Facts = {
        "python.executable": value(py.get("executable", Unknown("not recorded"))),
        "python.version": value(py.get("version", Unknown("not recorded"))),
    }
    tc, why = section(snap, "torch")
    for key in TORCH_KEYS:
        f[f"torch.{key}"] = value(tc.get(key, why or Unknown("not recorded")))
    f["torch.cuda_init_warning"] = why or value(tc.get("cuda_init_warning"))
    f["torch.device_count"] = value(tc.get("device_count", why or Unknown("not recorded")))
    probe = snap.get("probe")
    f["probe.complete"] = (
        bool(probe.get("complete")) if isinstance(probe, dict) else Unknown("no probe recorded")
    )
    return f


SOURCE = Source(
    name="interpreter",
    what="interpreter probe",
    sections=PROBE_SECTIONS,
    provides=SNAPSHOT_SOURCES["interpreter"],
    facts=facts,
    collect=collect,
)
