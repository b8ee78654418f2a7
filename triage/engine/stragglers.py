"""stragglers: when ranks time out waiting for a peer, the rank that did not report the
wait is the one they waited for. Which diagnoses mean "waiting on a peer" is rule data
(`waits_on_peers = true`), not code."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from triage.engine.rules import Rule
from triage.model import Diagnosis, Evidence, Finding, Line


def waiting_ids(rules: Iterable[Rule]) -> frozenset[str]:
    """The ids of the rules whose reporters are ranks waiting on a peer."""
    return frozenset(r.id for r in rules if r.waits_on_peers)


def name_stragglers(
    diags: list[Diagnosis],
    findings: list[Finding],
    last_by_rank: dict[int, Line],
    last_step_by_rank: dict[int, int],
    waiting: frozenset[str],
) -> tuple[list[Diagnosis], list[str]]:
    """Name the silent rank of each waiting root cause, with its last output as evidence
    and a note; `waiting`: see `waiting_ids`."""
    ranks = set(last_by_rank)
    if len(ranks) < 2:
        return diags, []
    out: list[Diagnosis] = []
    notes: list[str] = []
    for d in diags:
        if d.signature not in waiting or d.role != "root-cause":
            out.append(d)
            continue
        reported = {f.evidence.rank for f in findings if f.rule_id == d.signature}
        silent = sorted(ranks - reported)
        if not silent or not reported - {None} or len(silent) >= len(ranks):
            out.append(d)
            continue
        extra = [_silent_evidence(r, last_by_rank[r], last_step_by_rank) for r in silent]
        notes.append(_note(silent, reported, last_step_by_rank))
        out.append(replace(d, evidence=(*extra, *d.evidence)))
    return out, notes


def _silent_evidence(rank: int, last: Line, steps: dict[int, int]) -> Evidence:
    """What the silent rank last printed, and the last step it logged."""
    step = f", last step {steps[rank]}" if rank in steps else ", no step logged"
    return Evidence(
        text=f"rank {rank} reported no timeout{step}; its last output: {last.text[:200]}",
        source=last.source,
        line=last.lineno,
        rank=rank,
    )


def _note(silent: list[int], reported: set[int | None], steps: dict[int, int]) -> str:
    """The report's note naming the likely straggler(s)."""
    others = [steps[r] for r in reported if r is not None and r in steps]
    ahead = f" (the others reached step {max(others)})" if others else ""
    names = ", ".join(str(r) for r in silent)
    return (
        f"Rank {names} is the likely straggler: the other ranks timed out waiting, "
        f"it reported no timeout{ahead}. Look at what it was doing."
    )
