"""The headless watch (`--no-tui`): the events carry model objects, and the JSON lines
they print are the JSON report's forms (diagnosis_dict, report_dict), unchanged."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

from triage.model import Diagnosis, Report
from triage.report.json import diagnosis_dict, report_dict
from triage.watch.capture import PaneStatus
from triage.watch.events import DiagnosisFound, Triaged
from triage.watch.gpu import GpuSample
from triage.watch.session import FileSource, WatchSession, run_headless

FX = (
    "step 1 loss 2.0\nstep 2 loss 1.9\nTraceback (most recent call last):\n"
    '  File "train.py", line 3, in <module>\n'
    "RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized "
    "function. This is not supported at the moment.\n"
)


class NoGpus:
    def sample(self) -> GpuSample:
        return GpuSample(unknown="NVML not available (test)")


class ExitedFile(FileSource):
    """A file whose 'process' has exited with status 1, so the watch ends by itself."""

    def status(self) -> PaneStatus | None:
        return PaneStatus(exists=True, dead=True, exit_status=1, status_from="proc")


def _session(log: Path) -> WatchSession:
    return WatchSession(ExitedFile(log), snapshot=False, gpus=NoGpus(), report_interval=0)  # type: ignore[arg-type]


def test_headless_prints_the_json_forms(tmp_path: Path, validate_report: Callable[[dict], None]) -> None:
    log = tmp_path / "train.log"
    log.write_text(FX)
    session = _session(log)
    out = io.StringIO()
    assert run_headless(session, poll=0.0, out=out) == 0
    events = [json.loads(x) for x in out.getvalue().splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "attached" and kinds[-2:] == ["ended", "report"] and "diagnosis" in kinds
    assert session.final is not None and isinstance(session.final, Report)
    report = events[-1]["report"]
    validate_report(report)
    assert report == json.loads(json.dumps(report_dict(session.final), default=str))
    assert report == session.final_report  # the dict form, for JSON callers
    found = next(e for e in events if e["event"] == "diagnosis")
    assert set(found) == {"event", "signature", "line", "final", "diagnosis"}
    assert found["signature"] == "fx-tracing-flag-race" and found["line"] == 5
    assert found["diagnosis"]["signature"] == found["signature"]
    assert found["diagnosis"]["confidence"] == "confirmed"


def test_events_hold_model_objects(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(FX)
    session = _session(log)
    session.start()
    events = session.poll()
    while not session.done:
        events += session.poll()
    found = [e for e in events if isinstance(e, DiagnosisFound)]
    assert found and all(isinstance(e.diagnosis, Diagnosis) for e in found)
    assert found[0].payload() == diagnosis_dict(found[0].diagnosis)
    assert found[0].to_dict()["diagnosis"] == found[0].payload()
    (triaged,) = [e for e in events if isinstance(e, Triaged)]
    assert triaged.report is session.final
    assert all(isinstance(d, Diagnosis) for d in session.diagnoses)
