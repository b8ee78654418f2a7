"""Build triage/_native.c into `triage._native` when triage is installed (a hatchling
build hook, named in pyproject.toml). Where there is no C compiler, or the build fails,
triage installs without it and runs its pure-Python paths (triage/native.py): nothing
about installing fails.

`python hatch_build.py` rebuilds it in place, for an editable install whose C source
changed (triage/native.py ignores a build whose source hash is not the file's).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # run as a script, or imported by the tests

    class BuildHookInterface:  # type: ignore[no-redef]
        """A stand-in: only hatchling calls the hook."""


def source_hash(src: Path) -> str:
    """What the build stamps into the module, so a stale build is known."""
    return hashlib.sha256(src.read_bytes()).hexdigest()[:16]


def build(root: Path) -> Path | None:
    """Compile the module next to its source; the path built, or None (with a warning
    on stderr) where it could not be."""
    if os.environ.get("TRIAGE_NO_NATIVE"):
        return None
    src = root / "triage" / "_native.c"
    out = src.with_name("_native" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    link = sysconfig.get_config_var("LDSHARED") or "cc -shared"
    tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
    cmd = [
        *shlex.split(link),
        "-O2",
        "-fPIC",
        "-Wall",
        f"-I{sysconfig.get_paths()['include']}",
        f'-DTRIAGE_NATIVE_HASH="{source_hash(src)}"',
        str(src),
        "-o",
        str(tmp),
    ]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as e:
        print(f"triage: native module not built ({e}); the pure-Python paths are used", file=sys.stderr)
        return None
    if res.returncode != 0:
        tmp.unlink(missing_ok=True)
        msg = (res.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"triage: native module did not build ({msg}); pure-Python paths used", file=sys.stderr)
        return None
    os.replace(tmp, out)
    return out


class NativeBuildHook(BuildHookInterface):  # type: ignore[misc]
    """Builds the module for wheels, editable ones included (those import it from the tree)."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":  # type: ignore[attr-defined]
            return
        out = build(Path(self.root))  # type: ignore[attr-defined]
        if out is None:
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if version != "editable":
            build_data["force_include"][str(out)] = f"triage/{out.name}"


if __name__ == "__main__":
    built = build(Path(__file__).resolve().parent)
    print(built or "not built")
    sys.exit(0 if built else 1)
