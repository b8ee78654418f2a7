"""The interpreter probe: what the training run's Python can see and import.

Run by `triage snapshot` with the *run's* interpreter (not triage's own), as
`python -c <this file's source>`, so it must stand alone: standard library only, no
import of triage, and syntax that old interpreters still parse (Python 3.7+).

It prints JSON on stdout. With `--lines`, one JSON object per line, each a partial
snapshot ({"section": {...}}) merged by the caller, so that a slow or hanging import
still leaves everything learned before it; otherwise one JSON object at the end.
Anything the packages print while being imported goes to stderr, never into the JSON.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import warnings
from typing import Any

# The packages to probe come from the caller (triage.evidence.sources.packages passes
# triage.vocabulary's lists): this file runs in the training run's interpreter and
# cannot import triage, and one list keeps the probe and the rules' fact names agreed.
#   --packages=torch,flash-attn:flash_attn,...   distribution[:module], imported in order
#   --version-only=nvidia-nccl-cu12,...          distributions reported by version only
ERROR_CHARS = 300

_out = sys.stdout
_lines = "--lines" in sys.argv
_result: dict[str, Any] = {}


def emit(section: str, value: Any) -> None:
    """Record one piece; in --lines mode write it at once (the caller may kill us)."""
    if isinstance(value, dict) and isinstance(_result.get(section), dict):
        _result[section].update(value)
    else:
        _result[section] = value
    if _lines:
        _out.write(json.dumps({section: value}, default=str) + "\n")
        _out.flush()


def error_text(e: BaseException) -> str:
    """`Type: first line of the message`, short enough for a report."""
    msg = str(e).strip().splitlines()
    text = type(e).__name__ + (": " + msg[0] if msg else "")
    return text[:ERROR_CHARS]


def dist_version(name: str) -> Any:
    """The installed distribution's version, or None when it is not installed."""
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8
        try:
            import pkg_resources

            return pkg_resources.get_distribution(name).version
        except Exception:
            return None
    for cand in (name, name.replace("-", "_"), name.replace("_", "-")):
        try:
            return metadata.version(cand)
        except metadata.PackageNotFoundError:
            continue
        except Exception as e:  # a broken dist-info: say so rather than guess
            return {"unknown": "metadata unreadable: " + error_text(e)}
    return None


def python_info() -> dict[str, Any]:
    return {
        "version": ".".join(str(x) for x in sys.version_info[:3]),
        "executable": sys.executable,
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "venv": getattr(sys, "base_prefix", sys.prefix) != sys.prefix,
        "implementation": sys.implementation.name,
        "platform": sys.platform,
    }


def try_import(module: str) -> dict[str, Any]:
    """Import a module; report whether it worked, its version and where it lives."""
    t0 = time.monotonic()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mod = __import__(module)
    except BaseException as e:  # SystemExit and friends too: a package may call exit()
        return {"ok": False, "error": error_text(e), "seconds": round(time.monotonic() - t0, 2)}
    info: dict[str, Any] = {"ok": True, "seconds": round(time.monotonic() - t0, 2)}
    ver = getattr(mod, "__version__", None)
    if isinstance(ver, str):
        info["version"] = ver
    f = getattr(mod, "__file__", None)
    if isinstance(f, str):
        info["file"] = f
    return info


def cuda_from_local_version(ver: Any) -> Any:
    """'2.11.0+cu130' -> '13.0' (the wheel's CUDA when torch cannot be imported)."""
    m = re.search(r"\+cu(\d+)(\d)$", str(ver))
    return m.group(1) + "." + m.group(2) if m else None


def torch_info(installed: Any) -> dict[str, Any]:
    """The torch build: versions, CUDA/cuDNN, arch list, whether CUDA is usable."""
    if installed is None and "torch" not in sys.modules:
        try:
            # importable without metadata: vendored, or on PYTHONPATH
            import torch
        except BaseException as e:
            return {"installed": False, "error": error_text(e)}
    try:
        import torch
    except BaseException as e:
        cuda = cuda_from_local_version(installed)
        return {
            "installed": True,
            "version": installed,
            "import_error": error_text(e),
            "cuda": cuda if cuda else {"unknown": "torch does not import: " + error_text(e)},
        }
    info: dict[str, Any] = {"installed": True, "version": str(torch.__version__)}
    ver = getattr(torch, "version", None)
    info["cuda"] = getattr(ver, "cuda", None)
    info["hip"] = getattr(ver, "hip", None)
    info["git"] = getattr(ver, "git_version", None)
    try:
        cudnn = torch.backends.cudnn.version()
        info["cudnn"] = cudnn
    except BaseException as e:
        info["cudnn"] = {"unknown": error_text(e)}
    try:
        # what torch was compiled for, whether or not a GPU is visible now
        flags = torch._C._cuda_getArchFlags() if hasattr(torch._C, "_cuda_getArchFlags") else None
        info["arch_list"] = flags.split() if isinstance(flags, str) else []
    except BaseException as e:
        info["arch_list"] = {"unknown": error_text(e)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            info["cuda_available"] = bool(torch.cuda.is_available())
        except BaseException as e:
            info["cuda_available"] = False
            info["cuda_error"] = error_text(e)
    # torch explains a failed CUDA init only in a warning ("driver too old", ...)
    msgs = [str(w.message).strip() for w in caught if "CUDA" in str(w.message)]
    if msgs:
        info["cuda_init_warning"] = msgs[0][: ERROR_CHARS * 2]
    try:
        info["device_count"] = int(torch.cuda.device_count()) if info["cuda_available"] else 0
    except BaseException as e:
        info["device_count"] = {"unknown": error_text(e)}
    return info


def transformers_needs() -> dict[str, Any]:
    """The minimum accelerate version the installed transformers checks for."""
    try:
        from transformers.utils import import_utils

        need = getattr(import_utils, "ACCELERATE_MIN_VERSION", None)
        return {"accelerate_min_version": need} if isinstance(need, str) else {}
    except BaseException:
        return {}


def main() -> int:
    t0 = time.monotonic()
    packages: list[tuple[str, str]] = []
    version_only: list[str] = []
    for arg in sys.argv[1:]:
        if arg.startswith("--packages="):
            for item in arg.split("=", 1)[1].split(","):
                dist, _, module = item.partition(":")
                if dist:
                    packages.append((dist, module or dist.replace("-", "_")))
        elif arg.startswith("--version-only="):
            version_only = [p for p in arg.split("=", 1)[1].split(",") if p]
    saved_fd = os.dup(1)
    # Packages print while importing (banners, CUDA setup notes); send fd 1 to stderr so
    # nothing but our JSON reaches the real stdout.
    global _out
    _out = os.fdopen(saved_fd, "w", encoding="utf-8")
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    emit("python", python_info())
    versions = {d: dist_version(d) for d, _ in packages}
    versions.update({d: v for d, v in ((d, dist_version(d)) for d in version_only) if v})
    emit("packages", versions)
    emit("torch", torch_info(versions.get("torch")))
    for dist, module in packages:
        emit("imports", {dist: try_import(module)})
        if dist == "transformers" and _result["imports"][dist].get("ok"):
            needs = transformers_needs()
            if needs:
                emit("transformers", needs)
    emit("probe", {"complete": True, "seconds": round(time.monotonic() - t0, 2)})
    if not _lines:
        _out.write(json.dumps(_result, default=str, indent=1) + "\n")
    _out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
