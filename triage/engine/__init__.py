"""engine: match rules over a structured log and reason about what they mean.

`analyze(paths)` is the whole pipeline: ingest -> structure -> match -> reason, in one
streaming pass; it returns a `Report` and formats nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from triage.engine.exceptions import error_findings, error_frames, log_errors
from triage.engine.facts import SUMMARY_FACTS, evidence_summary, gpu_readings, log_facts
from triage.engine.match import Matcher
from triage.engine.notes import report_notes, scan_notes, watched_end_note
from triage.engine.placeholders import fill_diagnoses
from triage.engine.reason import diagnose
from triage.engine.rules import Rule, load_rules
from triage.engine.stragglers import name_stragglers, waiting_ids
from triage.ingest import FAST_MIN_BYTES, Ingest, expand_paths
from triage.ingest.lines import SourceLines
from triage.ingest.scan import LiteralScanner
from triage.model import Finding, Line, Report, SourceInfo
from triage.structure import Progress, Structure, Structurer
from triage.structure.tables import STRUCTURE_LITERALS
from triage.vocabulary import RUN_FACTS as RUN_FACTS  # re-exported: the run's own end facts

__all__ = [
    "RUN_FACTS",
    "SUMMARY_FACTS",
    "Analysis",
    "Recall",
    "analyze",
    "analyze_lines",
    "analyze_text",
    "error_findings",
    "evidence_summary",
    "get_rules",
    "gpu_readings",
    "load_rules",
    "log_facts",
    "name_stragglers",
    "watched_end_note",
]

# Given a first report, more facts to reason with (or none): how the crash history
# reaches the reasoning as data, without the engine knowing of any store.
Recall = Callable[[Report], Mapping[str, Any]]

_RULES_CACHE: dict[tuple[str, ...], list[Rule]] = {}


def get_rules(extra: list[Path] | None = None) -> list[Rule]:
    """The shipped rules plus those of `extra` folders, loaded once per process."""
    key = tuple(str(p) for p in extra or [])
    if key not in _RULES_CACHE:
        _RULES_CACHE[key] = load_rules(list(extra or []))
    return _RULES_CACHE[key]


BATCH_LINES = 1024  # lines `analyze` feeds at once (`Analysis.feed_batch`)


class Analysis:
    """A streaming analysis: `feed` lines, then `report`. Used by `analyze` and by
    `triage watch` (which re-reports as lines arrive). `report` is pure: it may be
    called at any time, as often as wanted, and lines fed on after it."""

    def __init__(self, rules: list[Rule], facts: Mapping[str, Any] | None = None) -> None:
        self.rules = rules
        self.facts: dict[str, Any] = dict(facts or {})
        self.matcher = Matcher(rules)
        self.structurer = Structurer()
        self.lines = 0
        self._waiting = waiting_ids(rules)

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

    def feed(self, line: Line, *, progress: bool = True) -> None:
        """Structure and match one line; `progress` False when `feed_progress` has read
        the line already."""
        self.lines += 1
        self.structurer.feed(line, progress=progress)
        self.matcher.feed(line, self.structurer.phase, quoted=self.structurer.quoted)

    def feed_batch(self, lines: list[Line]) -> None:
        """`feed` each line of a batch, in order, with the same result: which lines a
        structure reader or a rule may act on is found for the batch at once (native
        passes), and the rest take the structure's quiet lane."""
        if not lines:
            return
        texts = [line.text for line in lines]
        st, matcher = self.structurer, self.matcher
        hot = st.triggered(texts)
        hits = matcher.prefilter.batch(texts)
        if hot is None or hits is None:
            for line in lines:
                self.feed(line)
            return
        self.lines += len(lines)
        # the structure first, the whole batch (no reader reads the matcher), then the
        # matcher, with the phase and quoting each line with hits was read in
        states = st.feed_batch(lines, hot, hits)
        note, feed = matcher.note, matcher.feed
        for i, line in enumerate(lines):
            found = hits.get(i)
            if found is None:  # no rule's literal on it: the matcher only keeps it as context
                note(line)
            else:
                phase, quoted = states[i]
                feed(line, phase, quoted=quoted, hits=found)

    def feed_progress(self, line: Line) -> None:
        """Read one line for progress only (phase, steps, metrics): a line the live
        path does not analyse whole, which the screen still counts."""
        self.structurer.feed_progress(line)

    def progress(self) -> Progress:
        """Where the run is, as the report would say it (cheap)."""
        return self.structurer.now()

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
        diags, straggler_notes = name_stragglers(
            diags, findings, st.last_by_rank, st.last_step_by_rank, self._waiting
        )
        diags = fill_diagnoses(diags, sources, facts, st.events)
        logged = any(
            e.source not in (None, "snapshot") and not e.text.startswith("log ends (")
            for d in diags
            for e in d.evidence
        )
        all_notes = notes + straggler_notes + report_notes(st, facts, sources, logged)
        ranks = sorted({r for s in sources for r in s.ranks})
        metrics = {k: v for k, v in st.metrics.items() if k not in ("losses", "step_times")}
        last, root = log_errors(st)
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
            error_frames=error_frames(st),
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
    batch: list[Line] = []

    def gap(source: str) -> None:
        a.feed_batch(batch)  # the lines before the gap first
        batch.clear()
        a.gap(source)

    ingest = Ingest(
        expand_paths(paths),
        tail_only=tail_only,
        on_progress=on_progress,
        on_gap=gap,
        scanner=None if fast is False else a.scanner(),
        fast_min_bytes=0 if fast else FAST_MIN_BYTES,
    )
    for line in ingest:
        batch.append(line)
        if len(batch) >= BATCH_LINES:
            a.feed_batch(batch)
            batch.clear()
    a.feed_batch(batch)
    engine = ingest.scanner.engine if ingest.scanner else "-"
    notes = [*ingest.notes, *scan_notes(tail_only, ingest.skipped_lines, engine)]
    return a.report(ingest.sources, notes, recall)


def analyze_lines(
    lines: Iterable[Line],
    sources: list[SourceInfo],
    *,
    rules: list[Rule] | None = None,
    facts: Mapping[str, Any] | None = None,
) -> Report:
    """Triage lines already read (numbered `Line`s of the given sources)."""
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
    """Triage an in-memory log (rule examples, tests): read as a file of that name is."""
    src = SourceLines(name)
    lines = list(src.text(text))
    a = Analysis(rules if rules is not None else get_rules(), facts)
    for line in lines:
        a.feed(line)
    return a.report([src.info()], src.notes)
