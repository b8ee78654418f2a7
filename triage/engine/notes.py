"""notes: the one home of the report's English notes (how the log ends, what the watcher
saw, how the log was read), so their wording lives in one place."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from triage.engine.placeholders import shell_target
from triage.model import SourceInfo
from triage.native import native
from triage.structure import Structure


def scan_notes(tail_only: bool, skipped_lines: int, engine: str) -> list[str]:
    """How the log was read, when not every line was: the quick tail-only verdict, or
    the fast scan that skipped lines without any rule's literal."""
    if tail_only:
        return ["Quick verdict from the tail of each file only; run without --quick for the whole log."]
    if skipped_lines:
        extremes = ", each MiB's lowest and highest loss, grad norm and tok/s" if native else ""
        return [
            f"Fast scan: {skipped_lines} lines without any rule's literal were "
            f"skipped (engine: {engine}); "
            "step metrics are sampled (the head, the tail, a step line every 128 KiB"
            f"{extremes}, and the lines around the longest pauses between them), so the "
            "step count is of the lines read."
        ]
    return []


def report_notes(
    st: Structure, facts: Mapping[str, Any], sources: list[SourceInfo], logged_error: bool
) -> list[str]:
    """The notes of a report: how the log ends (cut off, no error in it, empty), and
    what the snapshot says of the processes. `logged_error`: a diagnosis rests on a
    logged line."""
    notes: list[str] = []
    end = st.end_state
    if end.kind == "cut-mid-line":
        where = f" while in phase {end.last_phase}" if end.last_phase else ""
        notes.append(
            f"The log is cut off mid-line at {end.source}:{end.line} "
            f"({end.last_text[-60:]!r}){where}: the writer stopped without finishing "
            "the line."
        )
    if end.truncated and not logged_error and not any(e.has_traceback for e in st.exceptions):
        # Conditional on purpose: a healthy excerpt (a run still going) ends the same way.
        log = shell_target(sources[0].path) if sources else "rerun.log"
        if facts.get("run.stderr_captured") is True:
            notes.append(watched_end_note(facts))  # it was captured: say what was seen
        else:
            notes.append(
                "No traceback or error message is in the log. If the run is gone, "
                "stderr was probably not captured, or the process was killed: next "
                f"time run `<your launch command> 2>&1 | tee -a {log}`, or under "
                "`triage watch --tmux SESSION`, which keeps the output of a pane "
                "that dies."
            )
    mem = facts.get("gpu.all.memory_used_mib")
    if isinstance(mem, list) and mem and all(isinstance(m, int | float) and m == 0 for m in mem):
        notes.append(f"All {len(mem)} GPUs are at 0 MiB: the training processes are gone, not hung.")
    if end.kind == "empty":
        notes.append("The input is empty: there is nothing to triage.")
    return notes


def watched_end_note(facts: Mapping[str, Any]) -> str:
    """The note for a log without an error whose output `triage watch` captured whole
    (stdout and stderr): what the watcher saw of the end instead of "stderr was probably
    not captured"."""
    sig, status = facts.get("run.signal"), facts.get("run.exit_status")
    head = (
        "triage watch captured everything the pane printed, stderr included, and no "
        "traceback or error message is in it: "
    )
    if sig == "SIGKILL":
        return head + (
            "the process was killed by SIGKILL, which cannot be caught or logged: "
            "from outside (the kernel's OOM killer, a scheduler's hard kill, a "
            "user's kill -9). The kernel log and the cgroup tell which (checks)."
        )
    if sig:
        return head + (
            f"the process died of {sig} without handling it: stopped from outside "
            "(a scheduler, a closed terminal, Ctrl-C) or crashed silently."
        )
    if status == 0:
        return head + "the process exited with status 0: the run ended, it did not crash."
    if isinstance(status, int):
        return head + (
            f"the process exited with status {status} without printing why "
            "(an exit() in the script or a launcher's wrapper)."
        )
    if facts.get("run.pane_died") is False:
        return head + (
            "the watch ended without seeing the process die (it returned to its "
            "shell, or the watch was stopped while it ran)."
        )
    return head + "the process ended, and neither tmux nor /proc kept its exit status."
