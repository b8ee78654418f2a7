"""engine: match rules over a structured log and reason about what they mean.

`analyze(paths)` is the whole pipeline: ingest -> structure -> match -> reason, in one
streaming pass; it returns a `Report` and formats nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from triage.engine.match import Matcher
from triage.engine.placeholders import fill_diagnoses, shell_paths
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
    Line,
    Report,
    SourceInfo,
)
from triage.structure import Structure, Structurer
from triage.structure.tables import STRUCTURE_LITERALS
from triage.vocabulary import RUN_FACTS as RUN_FACTS  # re-exported: the run's own end facts

__all__ = ["Analysis", "analyze", "analyze_lines", "analyze_text", "load_rules"]

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
        pre = self.matcher.prefilter
        # TRIAGE_SCAN_ENGINE=re|ahocorasick_rs|hyperscan pins the engine (benchmarks)
        return LiteralScanner(list(pre.literals) + list(STRUCTURE_LITERALS), list(pre.icase),
                              engine=os.environ.get("TRIAGE_SCAN_ENGINE") or None)

    def feed(self, line: Line) -> None:
        self.lines += 1
        self.structurer.feed(line)
        self.matcher.feed(line, self.structurer.phase)

    def report(self, sources: list[SourceInfo], notes: Iterable[str] = ()) -> Report:
        st = self.structurer.finish(sources)
        facts = dict(self.facts)
        facts.update(log_facts(st, sources))
        findings = self.matcher.finish(st.exceptions, st.events, st.end_state, facts,
                                       [s.path for s in sources if s.ends_without_newline])
        diags, ruled_out = diagnose(findings, {r.id: r for r in self.rules}, st.end_state, facts,
                                    st.progress)
        diags, straggler_notes = name_stragglers(diags, findings, st)
        diags = fill_diagnoses(diags, sources, facts, st.events)
        logged = any(e.source not in (None, "snapshot") and not e.text.startswith("log ends (")
                     for d in diags for e in d.evidence)
        all_notes = list(notes) + straggler_notes + _notes(st, facts, sources, logged)
        ranks = sorted({r for s in sources for r in s.ranks})
        metrics = {k: v for k, v in st.metrics.items() if k not in ("losses", "step_times")}
        last, root = _errors(st)
        return Report(sources=tuple(sources), end_state=st.end_state, diagnoses=tuple(diags),
                      ruled_out=tuple(ruled_out), notes=tuple(dict.fromkeys(all_notes)),
                      ranks=tuple(ranks), metrics=metrics,
                      evidence_summary=evidence_summary(self.facts), last_error=last,
                      root_error=root)


def analyze(paths: list[str], *, rules: list[Rule] | None = None,
            facts: Mapping[str, Any] | None = None, fast: bool | None = None,
            tail_only: bool = False, on_progress: Any = None) -> Report:
    """Triage log files (or folders, or '-' for stdin).

    `fast`: None reads big files (>= 2 MiB) as windows around literal hits, True does
    so for every file, False reads every line.
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
        notes.append("Quick verdict from the tail of each file only; run without --quick "
                     "for the whole log.")
    elif ingest.skipped_lines:
        notes.append(f"Fast scan: {ingest.skipped_lines} lines without any rule's literal were "
                     f"skipped (engine: {ingest.scanner.engine if ingest.scanner else '-'}); "
                     "step metrics are sampled from the head and tail.")
    return a.report(ingest.sources, notes)


def analyze_lines(lines: Iterable[Line], sources: list[SourceInfo], *,
                  rules: list[Rule] | None = None, facts: Mapping[str, Any] | None = None) -> Report:
    a = Analysis(rules if rules is not None else get_rules(), facts)
    for line in lines:
        a.feed(line)
    return a.report(sources)


def analyze_text(text: str | bytes, *, rules: list[Rule] | None = None,
                 facts: Mapping[str, Any] | None = None, name: str = "<text>") -> Report:
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


def name_stragglers(diags: list[Diagnosis], findings: list[Finding],
                    st: Structure) -> tuple[list[Diagnosis], list[str]]:
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
            extra.append(Evidence(text=f"rank {r} reported no timeout{step}; its last output: "
                                       f"{last.text[:200]}", source=last.source,
                                  line=last.lineno, rank=r))
        others = [steps[r] for r in reported if r is not None and r in steps]
        ahead = f" (the others reached step {max(others)})" if others else ""
        names = ", ".join(str(r) for r in silent)
        notes.append(f"Rank {names} is the likely straggler: the other ranks timed out waiting, "
                     f"it reported no timeout{ahead}. Look at what it was doing.")
        out.append(replace(d, evidence=(*extra, *d.evidence)))
    return out, notes


def _errors(st: Structure) -> tuple[Evidence | None, Evidence | None]:
    """The last exception with a traceback (else the last one named), and the first
    exception of its chain: what the log says failed, recognised or not."""
    excs = [e for e in st.exceptions if e.has_traceback] or st.exceptions
    if not excs:
        return None, None
    last = excs[-1]
    root = last
    for e in reversed(excs[:-1]):
        if (e.line.source, e.line.rank) != (root.line.source, root.line.rank):
            continue
        if root.chain_index > 0 and e.chain_index == root.chain_index - 1:
            root = e
        elif root.chain_index == 0:
            break

    def ev(e: ExceptionInfo) -> Evidence:
        msg = e.message.split("\n", 1)[0]
        return Evidence(text=f"{e.type}: {msg}" if msg else e.type, source=e.line.source,
                        line=e.line.lineno, rank=e.line.rank, context=e.frames[-2:])
    return ev(last), (ev(root) if root is not last else None)


SUMMARY_FACTS = (
    ("python", "python.executable"), ("python version", "python.version"),
    ("torch", "package.torch"), ("torch CUDA", "torch.cuda"), ("transformers", "package.transformers"),
    ("accelerate", "package.accelerate"), ("driver", "driver.version"),
    ("driver CUDA", "driver.cuda"), ("GPUs", "gpu.count"),
    ("GPU memory used (MiB)", "gpu.all.memory_used_mib"),
    ("inductor cache entries", "inductor_cache.entries"), ("kernel Xid codes", "kernel.xid"),
    ("kernel OOM killer", "kernel.oom_killer"),
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


def _notes(st: Structure, facts: Mapping[str, Any], sources: list[SourceInfo],
           logged_error: bool) -> list[str]:
    notes: list[str] = []
    end = st.end_state
    if end.kind == "cut-mid-line":
        where = f" while in phase {end.last_phase}" if end.last_phase else ""
        notes.append(f"The log is cut off mid-line at {end.source}:{end.line} "
                     f"({end.last_text[-60:]!r}){where}: the writer stopped without finishing "
                     "the line.")
    if end.truncated and not logged_error and not any(e.has_traceback for e in st.exceptions):
        # Conditional on purpose: a healthy excerpt (a run still going) ends the same way.
        log = shell_paths(s.path for s in sources[:1])
        notes.append("No traceback or error message is in the log. If the run is gone, stderr "
                     "was probably not captured, or the process was killed: next time run "
                     f"`<your launch command> 2>&1 | tee -a {log}`, or under "
                     "`triage watch --tmux SESSION`, which keeps the output of a pane that dies.")
    mem = facts.get("gpu.all.memory_used_mib")
    if isinstance(mem, list) and mem and all(isinstance(m, int | float) and m == 0 for m in mem):
        notes.append(f"All {len(mem)} GPUs are at 0 MiB: the training processes are gone, "
                     "not hung.")
    if end.kind == "empty":
        notes.append("The input is empty: there is nothing to triage.")
    return notes
