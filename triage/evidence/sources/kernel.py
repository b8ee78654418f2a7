"""Source `kernel`: NVRM Xid lines and OOM-killer lines from the kernel log.

Read from `dmesg`, else /dev/kmsg, else `journalctl -k`, whichever reads first. An
unprivileged user often can read none: the section then says `readable: false` and why,
and every kernel fact is unknown. The Xid catalog and the line parser are xid.py's.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from triage.evidence.snapshot import section
from triage.evidence.sources.base import Context, Facts, Source, first_line, run_cmd
from triage.evidence.xid import FELL_OFF_RE, describe, parse_xid_line, xid_table
from triage.model import Unknown
from triage.vocabulary import SNAPSHOT_SOURCES

MAX_KERNEL_MATCHES = 50
OOM_RE = re.compile(
    r"Out of memory: Killed process|invoked oom-killer|oom-kill:constraint="
    r"|Memory cgroup out of memory: Killed process|oom_reaper: reaped process"
)
OOM_KILLED_RE = re.compile(r"Killed process (?P<pid>\d+) \((?P<name>[^)]*)\)")
NOT_COLLECTED = {"readable": False, "reason": "not collected (--no-kernel)"}
FACTS = SNAPSHOT_SOURCES["kernel"]

# ---------------------------------------------------------------- collection


def collect(ctx: Context) -> dict[str, Any]:
    return {"kernel": kernel_log() if ctx.kernel else dict(NOT_COLLECTED)}


def kernel_log() -> dict[str, Any]:
    """Xid and OOM-killer lines from the kernel log, from the first source that reads."""
    tried: list[str] = []
    readers: tuple[tuple[str, Callable[[], tuple[list[str] | None, str]]], ...] = (
        ("dmesg", _dmesg),
        ("/dev/kmsg", _kmsg),
        ("journalctl -k", _journal),
    )
    for name, reader in readers:
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
            ooms.append(_oom_entry(line))
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


def _oom_entry(line: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"text": line.strip()[:500]}
    m = OOM_KILLED_RE.search(line)
    if m:
        entry["pid"] = int(m.group("pid"))
        entry["process"] = m.group("name")
    return entry


def _dmesg() -> tuple[list[str] | None, str]:
    rc, out, err = run_cmd(["dmesg", "--time-format", "iso"])
    if rc != 0 and "Operation not permitted" not in err and rc not in (124, 127):
        rc, out, err = run_cmd(["dmesg"])  # an old dmesg without --time-format
    if rc != 0:
        return None, first_line(err) or f"exit {rc}"
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
    rc, out, err = run_cmd(["journalctl", "-k", "-b", "--no-pager", "-q", "-o", "short-iso"])
    if rc != 0:
        return None, first_line(err) or f"exit {rc}"
    lines = [ln for ln in out.splitlines() if ln.strip() and not ln.startswith("-- ")]
    if not lines:
        return None, "no entries (no journal, or no permission to read it)"
    return lines, ""


# ---------------------------------------------------------------- facts


def facts(snap: Mapping[str, Any], earlier: Mapping[str, Any]) -> Facts:
    """`kernel.*`: the Xid codes (all, and by what the catalog blames), the OOM killer,
    a GPU fallen off the bus; all unknown when the log could not be read."""
    k, why = section(snap, "kernel")
    if why is not None or k.get("readable") is False:
        reason = why or Unknown(str(k.get("reason", "kernel log unreadable")))
        f: Facts = {key: reason for key in FACTS}
        f["kernel.readable"] = False
        f["kernel.reason"] = reason.reason
        return f
    xids = [x for x in k.get("xid") or [] if isinstance(x, dict) and "code" in x]
    codes = [int(x["code"]) for x in xids]
    f = {"kernel.readable": True, "kernel.xid": codes, "kernel.xid_text": _xid_text(xids)}
    f.update(_oom_facts(k))
    f["kernel.fallen_off_bus"] = bool(k.get("fallen_off_bus")) or 79 in codes
    f["kernel.fallen_off_bus_text"] = _xid_text([x for x in xids if int(x["code"]) == 79]) or next(
        iter(k.get("fallen_off_bus") or []), None
    )
    f.update(_catalog_facts(xids))
    return f


def _oom_facts(k: dict[str, Any]) -> Facts:
    """Did the OOM killer run, and whom did it kill ('python (pid 48211)', ...)."""
    killed = dict.fromkeys(
        f"{o.get('process', '?')} (pid {o['pid']})"
        for o in k.get("oom_killer") or []
        if isinstance(o, dict) and "pid" in o
    )
    return {"kernel.oom_killer": bool(k.get("oom_killer")), "kernel.oom_killed": ", ".join(killed) or None}


def _catalog_facts(xids: list[dict[str, Any]]) -> Facts:
    """The codes by what xid.toml says of them: not specifically handled (`other`),
    blamed on the GPU itself (`other_hw`), memory errors that need action (`ecc`)."""
    table = xid_table()
    codes = list(dict.fromkeys(int(x["code"]) for x in xids))
    other = [c for c in codes if c not in table or table[c].signature == "xid-error"]
    # memory errors whose catalog action is more than IGNORE (63, 92 are notices)
    ecc = [
        c
        for c in codes
        if c in table and table[c].signature == "gpu-ecc-error" and table[c].action != "IGNORE"
    ]
    return {
        "kernel.xid_other": other,
        # the codes the catalog blames on the GPU itself (not the app, not a follow-up)
        "kernel.xid_other_hw": [c for c in other if c in table and table[c].cause == "hardware"],
        "kernel.xid_other_text": _xid_text([x for x in xids if int(x["code"]) in other]),
        "kernel.xid_ecc": ecc,
        "kernel.xid_ecc_text": _xid_text([x for x in xids if int(x["code"]) in ecc]),
    }


def _xid_text(xids: list[dict[str, Any]]) -> str | None:
    """'79 (GPU has fallen off the bus; action RESTART_BM) on 0000:3b:00' per code/GPU."""
    seen: dict[tuple[int, str], str] = {}
    for x in xids:
        key = (int(x["code"]), str(x.get("pci", "?")))
        seen.setdefault(key, f"Xid {describe(key[0])} on {key[1]}")
    return "; ".join(seen.values()) or None


SOURCE = Source(
    name="kernel",
    what="kernel log",
    sections=("kernel",),
    provides=FACTS,
    facts=facts,
    collect=collect,
)
