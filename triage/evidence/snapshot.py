"""The snapshot file format (`triage.snapshot/1`) and its one spelling of "unknown".

A fact that could not be read is `triage.model.Unknown(reason)`: the value the rule
predicates treat as unknown (never true, proves nothing). In the snapshot JSON the same
thing is written `{"unknown": "reason"}`. Collectors write it with `unknown()`, fact
readers turn it back with `value()`; nothing else spells it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from triage.errors import TriageError
from triage.model import Unknown

SNAPSHOT_SCHEMA = "triage.snapshot/1"
UNKNOWN_KEY = "unknown"


def unknown(reason: str) -> dict[str, str]:
    """An `Unknown(reason)` as the snapshot writes it: "could not be read, and why"."""
    return {UNKNOWN_KEY: reason}


def is_unknown(v: Any) -> bool:
    """Is this snapshot value the written form of an unknown?"""
    return isinstance(v, dict) and set(v) == {UNKNOWN_KEY}


def value(v: Any) -> Any:
    """A snapshot value as a fact value: the written unknown becomes `Unknown`."""
    if is_unknown(v):
        return Unknown(str(v[UNKNOWN_KEY]))
    return v


def section(snap: Mapping[str, Any], key: str) -> tuple[dict[str, Any], Unknown | None]:
    """A snapshot section as a dict, or {} and why it cannot be read (absent, written as
    unknown, or not an object)."""
    v = snap.get(key)
    if v is None:
        return {}, Unknown(f"{key} not in snapshot")
    v = value(v)
    if isinstance(v, Unknown):
        return {}, v
    if not isinstance(v, dict):
        return {}, Unknown(f"{key} malformed")
    return v, None


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
