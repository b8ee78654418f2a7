"""cpp: C++ exceptions in a log: c10's "Exception raised from ... at file:line" (with the
message line printed just before it) and "terminate called after throwing ..."."""

from __future__ import annotations

import triage.structure.tables as T
from triage.model import Event, Line

# What the reader acts on; any other line is only remembered as its stream's last
TRIGGERS = ("Exception raised from", "terminate called")


class CppReader:
    """C++ traces, appended to a shared event list in line order."""

    def __init__(self, events: list[Event]) -> None:
        self._events = events
        self._last_text: dict[tuple[str, int | None], Line] = {}  # per stream: its last line

    def feed(self, line: Line) -> None:
        text = line.text
        if "Exception raised from" in text:
            m = T.CPP_RAISED_RE.search(text)
            if m:
                prev = self._last_text.get((line.source, line.rank))
                data = {
                    "where": m.group("where"),
                    "file": m.group("file"),
                    "line": int(m.group("line")),
                    "message": prev.text if prev else "",
                }
                self._events.append(Event("cpp-exception", line, data))
            return
        if "terminate called" in text:
            m2 = T.TERMINATE_RE.search(text)
            if m2:
                self._events.append(Event("cpp-terminate", line, {"type": m2.group("type")}))
            return
        if text.strip():
            self.note(line)

    def note(self, line: Line) -> None:
        """A line that is not blank and holds no trigger: its stream's last text."""
        self._last_text[(line.source, line.rank)] = line
