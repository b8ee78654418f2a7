"""NVIDIA Xid codes: the table (xid.toml, data) and the kernel line parser.

The driver reports GPU faults in the kernel log as
`NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.`
(MIG adds ` GPU-I:nn GPU-CI:nn`; with no process the `pid=..., name=...` part is absent;
some drivers write `NVRM: Xid 74: <message>`). The line is read by the table's own
`[pattern]`, the same one the rules' code clauses use, so the kernel-log scan and the
log's rules agree on what is an Xid and which code it is.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import regex

TABLE = Path(__file__).with_name("xid.toml")
_PID_RE = re.compile(r"^pid=(?P<pid>'?<?\w+>?'?),\s*name=(?P<name>[^,]*),\s*")
# `NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.` (no Xid number on some drivers),
# and the last line of the three-line `NVRM: The NVIDIA GPU 0000:5d:00.0` / `NVRM: (PCI
# ID: 10de:2330) installed in this system has` / `NVRM: fallen off the bus and is not
# responding to commands.` (printed when the GPU is lost at probe time, with no Xid)
FELL_OFF_RE = re.compile(
    r"NVRM: GPU (?P<pci>[0-9A-Fa-f:.]+): GPU has fallen off the bus"
    r"|NVRM: fallen off the bus and is not responding to commands"
)


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
    data = tomllib.loads(TABLE.read_text(encoding="utf-8"))
    out: dict[int, XidInfo] = {}
    for code, row in data.get("xid", {}).items():
        out[int(code)] = XidInfo(
            int(code),
            row["name"],
            row["action"],
            row["investigate"],
            row["cause"],
            row.get("note", ""),
            row["signature"],
        )
    return out


def describe(code: int) -> str:
    """`79 (GPU has fallen off the bus; action RESTART_BM)`, or `N (not in the catalog)`."""
    info = xid_table().get(code)
    if info is None:
        return f"{code} (not in triage's Xid table)"
    return f"{code} ({info.name}; action {info.action})"


@cache
def xid_line_re() -> regex.Pattern[str]:
    """The shared reading of an Xid line: xid.toml's `[pattern] regex`."""
    data = tomllib.loads(TABLE.read_text(encoding="utf-8"))
    return regex.compile(data["pattern"]["regex"])


def parse_xid_line(text: str) -> dict[str, Any] | None:
    """An Xid kernel line, any spelling -> {code, pci?, pid?, process?, message, text}."""
    m = xid_line_re().search(text)
    if not m:
        return None
    # what follows the code: `, pid=..., name=..., <message>` or `: <message>`
    rest = text[m.end() :].lstrip(",: ").strip()
    out: dict[str, Any] = {"code": int(m.group("code"))}
    if m.group("pci"):
        out["pci"] = m.group("pci")
    pm = _PID_RE.match(rest)
    if pm:
        pid = pm.group("pid").strip("'")
        if pid.isdigit():
            out["pid"] = int(pid)
        out["process"] = pm.group("name").strip()
        rest = rest[pm.end() :]
    out["message"] = rest
    out["text"] = text.strip()[:500]
    return out
