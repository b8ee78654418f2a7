"""engine: match rules over a structured log and reason about what they mean.

`analyze(paths)` is the whole pipeline: ingest -> structure -> match -> reason, in one
streaming pass; it returns a `Report` and formats nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from triage.engine.match import Matcher
from triage.engine.placeholders import fill_diagnoses, shell_target
from triage.engine.reason import diagnose
from triage.engine.rules import Rule, load_rules
from triage.ingest import Ingest, expand_paths
from triage.ingest.scan import LiteralScanner
from triage.model import (
    Diagnosis,
    EndState,
    Evidence,
    ExceptionInfo,
    Finding,
    GpuReading,
    Line,
    Report,
    SourceInfo,
)
from triage.structure import Structure, Structurer, chain_root
from triage.structure.tables import STRUCTURE_LITERALS
from triage.vocabulary import RUN_FACTS as RUN_FACTS  # re-exported: the run's own end facts

__all__ = ["Analysis", "Recall", "analyze", "analyze_lines", "analyze_text", "load_rules"]

# Given a first report, more facts to reason with (or none): how the crash history
# reaches the reasoning as data, without the engine knowing of any store.
Recall = Callable[[Report], Mapping[str, Any]]

_RULES_CACHE: dict[tuple[str, ...], list[Rule]] = {}


def get_rules(extra: list[Path] | None = None) -> list[Rule]:
    key = tuple(str(p) for p in extra or [])
    if key not in _RULES_CACHE:
        _RULES_CACHE[key] = load_rules(list(extra or []))
    return _RULES_CACHE[key]


class Analysis:
    """A streaming analysis: `feed` lines, then `report`. Used by `analyze` and by
    `triage watch` (which re-reports as lines arrive)."""

    def __init__(self, rules: list[Rule], facts: Mapping[str, Any] | None = None) -> None:
        self.rules = rules
        self.facts: dict[str, Any] = dict(facts or {})
        self.matcher = Matcher(rules)
        self.structurer = Structurer()
        self.lines = 0

    def gap(self, source: str) -> None:
        """Lines of `source` were skipped by the fast path."""
        self.structurer.gap(source)

    def scanner(self) -> LiteralScanner:
        """A raw-bytes scanner for every literal that can matter to rules or structure."""
        plain, iplain, confirm = self.matcher.scan_literals()
        # TRIAGE_SCAN_ENGINE=python|ahocorasick_rs|hyperscan pins the engine (benchmarks)
        return LiteralScanner(
            plain + list(STRUCTURE_LITERALS),
            iplain,
            engine=os.environ.get("TRIAGE_SCAN_ENGINE") or None,
            confirm=confirm,
        )

    def feed(self, line: Line) -> None:
        self.lines += 1
        self.structurer.feed(line)
        self.matcher.feed(line, self.structurer.phase)

    def report(
        self, sources: list[SourceInfo], notes: Iterable[str] = (), recall: Recall | None = None
    ) -> Report:
        """The report of what was fed. `recall`, given that report, may return more facts
        (the crash history: this failure seen before, and what changed since); then the
        findings are reasoned over again with them. The log is read and matched once."""
        st = self.structurer.finish(sources)
        facts = dict(self.facts)
        facts.update(log_facts(st, sources))
        findings = self.matcher.finish(
            st.exceptions,
            st.events,
            st.end_state,
            facts,
            [s.path for s in sources if s.ends_without_newline],
            st.secondary_errors,
        )
        notes = list(notes)
        report = self._reason(st, findings, facts, sources, notes)
        if recall is not None:
            extra = recall(report)
            if extra:
                report = self._reason(st, findings, {**facts, **extra}, sources, notes)
        return report

    def _reason(
        self,
        st: Structure,
        findings: list[Finding],
        facts: dict[str, Any],
        sources: list[SourceInfo],
        notes: list[str],
    ) -> Report:
        diags, ruled_out = diagnose(findings, {r.id: r for r in self.rules}, st.end_state, facts, st.progress)
        diags, straggler_notes = name_stragglers(diags, findings, st)
        diags = fill_diagnoses(diags, sources, facts, st.events)
        logged = any(
            e.source not in (None, "snapshot") and not e.text.startswith("log ends (")
            for d in diags
            for e in d.evidence
        )
        all_notes = notes + straggler_notes + _notes(st, facts, sources, logged)
        ranks = sorted({r for s in sources for r in s.ranks})
        metrics = {k: v for k, v in st.metrics.items() if k not in ("losses", "step_times")}
        last, root = _errors(st)
        spans, series = st.timeline.finish(error_findings(findings, self.rules, diags))
        return Report(
            sources=tuple(sources),
            end_state=st.end_state,
            diagnoses=tuple(diags),
            ruled_out=tuple(ruled_out),
            notes=tuple(dict.fromkeys(all_notes)),
            ranks=tuple(ranks),
            metrics=metrics,
            evidence_summary=evidence_summary(self.facts),
            last_error=last,
            root_error=root,
            error_frames=_error_frames(st),
            timeline=tuple(spans),
            series=tuple(series),
            gpus=gpu_readings(self.facts),
        )


def analyze(
    paths: list[str],
    *,
    rules: list[Rule] | None = None,
    facts: Mapping[str, Any] | None = None,
    fast: bool | None = None,
    tail_only: bool = False,
    on_progress: Any = None,
    recall: Recall | None = None,
) -> Report:
    """Triage log files (or folders, or '-' for stdin).

    `fast`: None reads big files (>= 2 MiB) as windows around literal hits, True does
    so for every file, False reads every line. `recall`: see `Analysis.report`.
    """
    rules = rules if rules is not None else get_rules()
    a = Analysis(rules, facts)
    ingest = Ingest(expand_paths(paths), tail_only=tail_only, on_progress=on_progress)
    ingest.on_gap = a.gap
    if fast is not False:
        ingest.scanner = a.scanner()
        ingest.on_gap = a.gap
        if fast:
            ingest.fast_min_bytes = 0
    for line in ingest:
        a.feed(line)
    notes = list(ingest.notes)
    if tail_only:
        notes.append("Quick verdict from the tail of each file only; run without --quick for the whole log.")
    elif ingest.skipped_lines:
        notes.append(
            f"Fast scan: {ingest.skipped_lines} lines without any rule's literal were "
            f"skipped (engine: {ingest.scanner.engine if ingest.scanner else '-'}); "
            "step metrics are sampled (the head, the tail and a few lines every MiB)."
        )
    return a.report(ingest.sources, notes, recall)


def analyze_lines(
    lines: Iterable[Line],
    sources: list[SourceInfo],
    *,
    rules: list[Rule] | None = None,
    facts: Mapping[str, Any] | None = None,
) -> Report:
    a = Analysis(rules if rules is not None else get_rules(), facts)
    for line in lines:
        a.feed(line)
    return a.report(sources)


def analyze_text(
    text: str | bytes,
    *,
    rules: list[Rule] | None = None,
    facts: Mapping[str, Any] | None = None,
    name: str = "<text>",
) -> Report:
    """Triage an in-memory log (rule examples, tests)."""
    from triage.ingest.normalize import SourceState, normalize
    from triage.ingest.reader import split_lines

    data = text.encode("utf-8") if isinstance(text, str) else text
    state = SourceState()
    lines: list[Line] = []
    last_complete = True
    n = 0
    seq = 0
    for raw in split_lines([data]):
        n = raw.lineno
        last_complete = raw.complete
        for p in normalize(raw.data, state):
            seq += 1
            lines.append(Line(name, raw.lineno, p.text, p.rank, seq, p.ts))
    src = SourceInfo(name, n, tuple(sorted(state.seen_ranks)), not last_complete, not last_complete)
    return analyze_lines(lines, [src], rules=rules, facts=facts)


WAITING = ("nccl-timeout", "training-hang")


def name_stragglers(
    diags: list[Diagnosis], findings: list[Finding], st: Structure
) -> tuple[list[Diagnosis], list[str]]:
    """When ranks time out waiting in a collective, the rank that did not report the
    timeout is the one they waited for: name it, with its last output, as evidence."""
    ranks = set(st.last_by_rank)
    if len(ranks) < 2:
        return diags, []
    out: list[Diagnosis] = []
    notes: list[str] = []
    for d in diags:
        if d.signature not in WAITING or d.role != "root-cause":
            out.append(d)
            continue
        reported = {f.evidence.rank for f in findings if f.rule_id == d.signature}
        silent = sorted(ranks - reported)
        if not silent or not reported - {None} or len(silent) >= len(ranks):
            out.append(d)
            continue
        steps = st.last_step_by_rank
        extra = []
        for r in silent:
            last = st.last_by_rank[r]
            step = f", last step {steps[r]}" if r in steps else ", no step logged"
            extra.append(
                Evidence(
                    text=f"rank {r} reported no timeout{step}; its last output: {last.text[:200]}",
                    source=last.source,
                    line=last.lineno,
                    rank=r,
                )
            )
        others = [steps[r] for r in reported if r is not None and r in steps]
        ahead = f" (the others reached step {max(others)})" if others else ""
        names = ", ".join(str(r) for r in silent)
        notes.append(
            f"Rank {names} is the likely straggler: the other ranks timed out waiting, "
            f"it reported no timeout{ahead}. Look at what it was doing."
        )
        out.append(replace(d, evidence=(*extra, *d.evidence)))
    return out, notes


def _error_frames(st: Structure) -> tuple[str, ...]:
    """The frames of the exception `_errors` names: the root's, else the last one's."""
    last, root = _last_and_root(st)
    for e in (root, last):
        if e is not None and e.frames:
            return e.frames
    return ()


def _last_and_root(st: Structure) -> tuple[ExceptionInfo | None, ExceptionInfo | None]:
    excs = [e for e in st.exceptions if e.has_traceback] or st.exceptions
    if not excs:
        return None, None
    last = excs[-1]
    return last, chain_root(excs, last)


def _errors(st: Structure) -> tuple[Evidence | None, Evidence | None]:
    """The last exception with a traceback (else the last one named), and the first
    exception of its chain: what the log says failed, recognised or not."""
    last, root = _last_and_root(st)
    if last is None or root is None:
        return None, None

    def ev(e: ExceptionInfo) -> Evidence:
        msg = e.message.split("\n", 1)[0]
        return Evidence(
            text=f"{e.type}: {msg}" if msg else e.type,
            source=e.line.source,
            line=e.line.lineno,
            rank=e.line.rank,
            context=e.frames[-2:],
        )

    return ev(last), (ev(root) if root is not last else None)


def error_findings(findings: list[Finding], rules: list[Rule], diags: list[Diagnosis]) -> list[Finding]:
    """The findings that mark where a rank failed, for the timeline: those of an
    error-level rule that made it into the diagnoses (a warning, or a finding the reasoner
    dropped, is not a failure)."""
    kept = {d.rule for d in diags if not d.fallback} | {d.signature for d in diags if not d.fallback}
    errors = {r.id for r in rules if r.severity == "error"}
    return [f for f in findings if f.rule_id in kept and f.rule_id in errors]


def gpu_readings(facts: Mapping[str, Any]) -> tuple[GpuReading, ...]:
    """Each GPU of the snapshot with its memory and utilization (empty without one).
    The per-field facts are lists in device order; a field unreadable on some GPU is an
    Unknown, and then that column stays empty rather than misaligned."""
    count = facts.get("gpu.count")
    if not isinstance(count, int) or count <= 0:
        return ()

    def column(name: str) -> list[Any]:
        v = facts.get(f"gpu.all.{name}")
        return list(v) if isinstance(v, list) and len(v) == count else [None] * count

    names = facts.get("gpu.names")
    names = list(names) if isinstance(names, list) and len(names) == count else [""] * count
    used, total, util = column("memory_used_mib"), column("memory_total_mib"), column("utilization_pct")

    def num(v: Any) -> float | None:
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

    return tuple(
        GpuReading(
            index=i,
            name=str(names[i] or ""),
            memory_used_mib=num(used[i]),
            memory_total_mib=num(total[i]),
            utilization_pct=num(util[i]),
        )
        for i in range(count)
    )


SUMMARY_FACTS = (
    ("python", "python.executable"),
    ("python version", "python.version"),
    ("torch", "package.torch"),
    ("torch CUDA", "torch.cuda"),
    ("transformers", "package.transformers"),
    ("accelerate", "package.accelerate"),
    ("driver", "driver.version"),
    ("driver CUDA", "driver.cuda"),
    ("GPUs", "gpu.count"),
    ("GPU memory used (MiB)", "gpu.all.memory_used_mib"),
    ("inductor cache entries", "inductor_cache.entries"),
    ("kernel Xid codes", "kernel.xid"),
    ("kernel OOM killer", "kernel.oom_killer"),
    # what `triage watch` saw of the run itself
    ("exit status", "run.exit_status"),
    ("exit signal", "run.signal"),
    ("stderr captured", "run.stderr_captured"),
    ("pane died", "run.pane_died"),
    ("run time (s)", "run.duration_s"),
    ("last output before the end (s)", "run.since_output_s"),
    ("usual step interval (s)", "run.step_interval_s"),
    ("stalled for (s)", "run.stalled_s"),
)


def evidence_summary(facts: Mapping[str, Any]) -> dict[str, str]:
    """A short environment table from snapshot facts (empty without a snapshot)."""
    out: dict[str, str] = {}
    for label, key in SUMMARY_FACTS:
        if key not in facts:
            continue
        v = facts[key]
        if v is None:
            out[label] = "absent"
        elif isinstance(v, list):
            out[label] = ", ".join(str(x) for x in v) or "none"
        else:
            out[label] = str(v)
    return out


def log_facts(st: Structure, sources: list[SourceInfo]) -> dict[str, Any]:
    """Facts about the log itself, for evidence predicates (`log.truncated`, ...)."""
    end: EndState = st.end_state
    return {
        "log.end_state": end.kind,
        "log.truncated": end.truncated,
        "log.cut_mid_line": end.kind == "cut-mid-line",
        "log.last_phase": end.last_phase,
        "log.has_traceback": any(e.has_traceback for e in st.exceptions),
        "log.exceptions": len(st.exceptions),
        "log.steps": st.metrics.get("steps", 0),
        "log.nonfinite_loss": st.metrics.get("nonfinite_loss", 0),
        "log.ranks": len({r for s in sources for r in s.ranks}),
    }


def _notes(
    st: Structure, facts: Mapping[str, Any], sources: list[SourceInfo], logged_error: bool
) -> list[str]:
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
