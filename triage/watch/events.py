"""What a watch reports, as small dataclasses; `to_dict()` is the `--no-tui` JSON line.

The events carry the engine's model objects (`Diagnosis`, `Report`): the TUI and the
session read typed fields, and the JSON schema (triage.report.json) is applied only
here, at the edge where a JSON line or a hook's stdin is written. The headless mode
prints one JSON object per event; the TUI turns the same events into panels and alerts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from triage.model import Diagnosis, Report
from triage.report.json import diagnosis_dict, report_dict


@dataclass(frozen=True, slots=True)
class Attached:
    """The watch started: what is watched and where the capture goes."""

    target: str
    capture: str
    mode: str  # "tmux" | "file"
    pane: str | None = None
    pid: int | None = None
    history_lines: int = 0
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "event": "attached",
            "mode": self.mode,
            "target": self.target,
            "pane": self.pane,
            "pid": self.pid,
            "capture": self.capture,
            "history_lines": self.history_lines,
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class DiagnosisFound:
    """A signature was diagnosed, or its confidence rose. `line` is its first evidence
    line in the capture; `final` marks one from the full triage at the end."""

    diagnosis: Diagnosis
    line: int | None = None
    final: bool = False

    @property
    def signature(self) -> str:
        return self.diagnosis.signature

    def payload(self) -> dict[str, Any]:
        """The diagnosis as the JSON report writes it: what an `--on-diagnosis` hook
        reads on its stdin."""
        return diagnosis_dict(self.diagnosis)

    def to_dict(self) -> dict[str, Any]:
        return {
            "event": "diagnosis",
            "signature": self.signature,
            "line": self.line,
            "final": self.final,
            "diagnosis": self.payload(),
        }


@dataclass(frozen=True, slots=True)
class Stalled:
    """No progress for many times the usual interval between step lines while the
    process lives (training-hang, when the GPUs stay busy)."""

    seconds: float
    usual_interval: float
    last_step: int | None
    gpus_busy: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "event": "stall",
            "seconds_since_progress": round(self.seconds, 1),
            "usual_interval": round(self.usual_interval, 3),
            "last_step": self.last_step,
            "gpus_busy": self.gpus_busy,
            "likely": "training-hang" if self.gpus_busy is not False else "stalled",
        }


@dataclass(frozen=True, slots=True)
class Resumed:
    """Progress resumed after a stall."""

    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"event": "resumed", "stalled_for": round(self.seconds, 1)}


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user should know that is not a diagnosis (rotation, a repaired
    capture, a pipe that could not be stopped)."""

    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"event": "notice", "text": self.text}


@dataclass(frozen=True, slots=True)
class Ended:
    """The run is over (the pane's process exited, or the watch was stopped)."""

    exit_status: int | None
    lines: int
    capture: str
    signal: str | None = None
    reason: str = "exited"  # exited | pane-closed | returned-to-shell | interrupted
    status_from: str | None = None  # who told the exit status: "tmux" | "proc"

    def to_dict(self) -> dict[str, Any]:
        return {
            "event": "ended",
            "exit_status": self.exit_status,
            "signal": self.signal,
            "reason": self.reason,
            "lines": self.lines,
            "capture": self.capture,
            "status_from": self.status_from,
        }


@dataclass(frozen=True, slots=True)
class Triaged:
    """The full triage of the capture when the run ended (and the snapshot, if any: the
    evidence layer's JSON, kept as it was collected)."""

    report: Report
    snapshot: dict[str, Any] | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"event": "report", "report": report_dict(self.report)}
        if self.snapshot is not None:
            d["snapshot"] = self.snapshot
        return d


Event = Attached | DiagnosisFound | Stalled | Resumed | Notice | Ended | Triaged


def to_json(event: Event) -> str:
    """One JSON line (no trailing newline)."""
    return json.dumps(event.to_dict(), ensure_ascii=False, allow_nan=False, default=str)
