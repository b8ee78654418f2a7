"""NVIDIA Xid codes: the table (xid.toml, data) and the kernel line parser.

The driver reports GPU faults in the kernel log as
`NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.`
(MIG adds ` GPU-I:nn GPU-CI:nn`; with no process the `pid=..., name=...` part is absent).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

XID_LINE_RE = re.compile(
    r"NVRM: Xid \((?P<pci>PCI:[0-9A-Fa-f:.]+)(?: GPU-I:\s*\d+)?(?: GPU-CI:\s*\d+)?\): "
    r"(?P<code>\d+),\s*(?P<rest>.*)")
_PID_RE = re.compile(r"^pid=(?P<pid>'?<?\w+>?'?),\s*name=(?P<name>[^,]*),\s*")
# `NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.` (no Xid number on some drivers)
FELL_OFF_RE = re.compile(r"NVRM: GPU (?P<pci>[0-9A-Fa-f:.]+): GPU has fallen off the bus")


@dataclass(frozen=True)
class XidInfo:
    code: int
    name: str
    action: str
    investigate: str
    cause: str  # app | hardware | consequence
    note: str
    signature: str


@cache
def xid_table() -> dict[int, XidInfo]:
    """The Xid catalog (triage/evidence/xid.toml), keyed by code."""
    data = tomllib.loads((Path(__file__).with_name("xid.toml")).read_text(encoding="utf-8"))
    out: dict[int, XidInfo] = {}
    for code, row in data.get("xid", {}).items():
        out[int(code)] = XidInfo(int(code), row["name"], row["action"], row["investigate"],
                                 row["cause"], row.get("note", ""), row["signature"])
    return out


def describe(code: int) -> str:
    """`79 (GPU has fallen off the bus; action RESTART_BM)`, or `N (not in the catalog)`."""
    info = xid_table().get(code)
    if info is None:
        return f"{code} (not in triage's Xid table)"
    return f"{code} ({info.name}; action {info.action})"


def parse_xid_line(text: str) -> dict[str, Any] | None:
    """An `NVRM: Xid` kernel line -> {code, pci, pid?, process?, message, text}."""
    m = XID_LINE_RE.search(text)
    if not m:
        return None
    rest = m.group("rest").strip()
    out: dict[str, Any] = {"code": int(m.group("code")), "pci": m.group("pci")[4:]}
    pm = _PID_RE.match(rest)
    if pm:
        pid = pm.group("pid").strip("'")
        if pid.isdigit():
            out["pid"] = int(pid)
        out["process"] = pm.group("name").strip()
        rest = rest[pm.end():]
    out["message"] = rest
    out["text"] = text.strip()[:500]
    return out
