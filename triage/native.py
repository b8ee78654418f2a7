"""The compiled helpers (triage/_native.c), where the install built them.

hatch_build.py compiles the module when triage is installed and a C compiler is there.
Without it every caller keeps its pure-Python path; what each then gives up is said
where it is called. `TRIAGE_NATIVE=0` turns the module off (tests compare both paths),
and a build older than its source (an editable install whose C changed: rebuild with
`python hatch_build.py`) is not used, so what runs is always what the source says.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any

SOURCE = Path(__file__).with_name("_native.c")


def load(src: Path = SOURCE) -> ModuleType | None:
    """The built module, or None: turned off, not built, or built from another `src`."""
    if os.environ.get("TRIAGE_NATIVE", "") == "0":
        return None
    try:
        from triage import _native  # type: ignore[attr-defined]
    except ImportError:
        return None
    if src.exists() and hashlib.sha256(src.read_bytes()).hexdigest()[:16] != _native.SOURCE_HASH:
        return None
    return _native


native: ModuleType | None = load()


def written_from(function: str, **tables: tuple[str, ...]) -> Any:
    """`native.<function>`, where the module was written from these tables (each a
    constant of it: the regexes, names a C function mirrors), else None: a table
    edited in Python is read in Python until the C follows."""
    if native is None or any(getattr(native, k, None) != v for k, v in tables.items()):
        return None
    return getattr(native, function)


def status() -> str:
    """One line for `triage --version` and bug reports: is the native module in use."""
    if native is not None:
        return f"native module {native.SOURCE_HASH}"
    if os.environ.get("TRIAGE_NATIVE", "") == "0":
        return "native module off (TRIAGE_NATIVE=0)"
    return "native module not built (pure Python)"
