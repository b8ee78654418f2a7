"""launcher: what a launcher reports of its children (torchrun / torch.distributed.elastic):
each child's exit line, and the failure report's "Root Cause" and "Failures:" sections."""

from __future__ import annotations

import signal as _signal
from typing import Any

import triage.structure.tables as T
from triage.model import Event, Line


def _int(text: str) -> int | None:
    """An optionally negative integer, or None ("--9" from a damaged log is not one)."""
    body = text[1:] if text.startswith("-") else text
    return int(text) if body.isdigit() and body.isascii() else None


def _signame(code: int) -> str | None:
    """The signal an exit code means (negative: killed by it; 128+N from a shell)."""
    if code >= 0:
        if code > 128 and code - 128 < 65:
            code = -(code - 128)
        else:
            return None
    try:
        return _signal.Signals(-code).name
    except ValueError:
        return None


def _report_signal(data: dict[str, Any], entry: dict[str, Any]) -> None:
    """The exit code and signal of the root cause entry ("-9 (SIGKILL)", a traceback that
    names "Signal 6 (SIGABRT)")."""
    code = entry.get("exitcode", "")
    num = _int(code.split(" ")[0])
    if num is not None:
        data["exitcode"] = num
        data["signal"] = _signame(num)
    if "(SIG" in code:
        data["signal"] = code[code.index("(SIG") + 1 :].split(")")[0]
    tbt = data["traceback"] or ""
    if "Signal " in tbt and "(SIG" in tbt:
        data["signal"] = tbt[tbt.index("(SIG") + 1 :].split(")")[0]


def failure_event(section: dict[str, Any]) -> Event:
    """The `torchrun-failure` event of a report's Root Cause section."""
    e = section["entries"][0]
    data: dict[str, Any] = {
        "root_rank": None,
        "exitcode": None,
        "signal": None,
        "error_file": e.get("error_file"),
        "traceback": e.get("traceback"),
        "host": e.get("host"),
    }
    root = _int(e.get("rank", "").split(" ")[0])
    if root is not None:
        data["root_rank"] = root
    _report_signal(data, e)
    return Event("torchrun-failure", section["line"], data)


# What the reader acts on outside a report section: a line with none of these does nothing
TRIGGERS = ("local_rank:", "exits with return code", "Root Cause (first observed failure)", "Failures:")


class LauncherReader:
    """Child exits and torchrun's failure report, appended to a shared event list (so
    events of all readers stay in line order)."""

    def __init__(self, events: list[Event]) -> None:
        self._events = events
        self._section: dict[str, Any] | None = None  # the report section being read
        self._entry: dict[str, Any] | None = None  # its entry being read

    @property
    def in_failures(self) -> bool:
        """Inside the report's "Failures:" section (other failures, not the root cause)."""
        return self._section is not None and self._section["section"] == "other"

    @property
    def busy(self) -> bool:
        """Inside a report: every line may be one of its fields."""
        return self._section is not None

    def gap(self) -> None:
        """Lines were skipped: no report spans the gap."""
        self._section = None
        self._entry = None

    def feed(self, line: Line) -> None:
        text = line.text
        if "local_rank:" in text and "exitcode" in text:
            self._child_exit(line, text)
        elif "exits with return code" in text:
            self._deepspeed_exit(line, text)
        stripped = text.strip()
        if stripped.startswith("Root Cause (first observed failure)"):
            self._section = {"line": line, "section": "root", "entries": []}
            return
        if stripped == "Failures:":
            self._section = {"line": line, "section": "other", "entries": []}
            return
        sec = self._section
        if sec is None:
            return
        if stripped.startswith("[") and stripped.endswith("]:"):
            self._entry = {"section": sec["section"]}
            sec["entries"].append(self._entry)
            return
        m = T.TORCHRUN_FIELD_RE.match(text)
        if m and self._entry is not None:
            self._entry[m.group("key")] = m.group("val").strip()
            return
        if stripped.startswith(("====", "----")) or not stripped:
            if sec["section"] == "root" and sec["entries"]:
                self._events.append(failure_event(sec))
                self._section = None
            elif stripped.startswith("===="):
                self._section = None
            self._entry = None

    def _child_exit(self, line: Line, text: str) -> None:
        m = T.CHILD_EXIT_RE.search(text)
        if m:
            self._exit(line, int(m.group("code")), int(m.group("lr")), int(m.group("pid")))

    def _deepspeed_exit(self, line: Line, text: str) -> None:
        """DeepSpeed's launcher reports a child's end as its argv and return code (a
        negative one: killed by that signal); the same child-exit torchrun's line gives."""
        m = T.DEEPSPEED_EXIT_RE.search(text)
        if m:
            lr = T.DEEPSPEED_LOCAL_RANK_RE.search(text)
            self._exit(line, int(m.group("code")), int(lr.group("lr")) if lr else None, None)

    def _exit(self, line: Line, code: int, local_rank: int | None, pid: int | None) -> None:
        """One child's end, whichever launcher said it."""
        data = {"exitcode": code, "local_rank": local_rank, "pid": pid, "signal": _signame(code)}
        self._events.append(Event("child-exit", line, data))

    def pending(self) -> list[Event]:
        """The failure event of a Root Cause section still open at the end (pure)."""
        sec = self._section
        if sec is not None and sec["section"] == "root" and sec["entries"]:
            return [failure_event(sec)]
        return []
