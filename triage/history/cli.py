"""`triage history [--run NAME | --log PATH] [--stats] [--format json] [--history-url URL]`:
past crashes grouped by fingerprint, with counts, first and last seen, and what changed
between recurrences; `--stats` for a team: failures by signature, host and day."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable
from typing import Any

from triage.errors import TriageError
from triage.history import URL_ENV, changed_facts, derive_run, describe_changes
from triage.history.store import HistoryError, Record, Store, open_store

EPILOG = """\
examples:
  triage history                          # every run's crashes, grouped by fingerprint
  triage history --log train.log          # the run that log belongs to
  triage history --run dflash-8gpu --format json
  triage history --stats                  # failures by signature, host and day
"""


def register(sub: Any) -> None:
    """Add the `history` subcommand to triage's subparsers."""
    h = sub.add_parser(
        "history",
        help="past crashes by run and fingerprint; --stats for a team",
        description="The crash history that `triage logs` and `triage watch` "
        "record: each run's failures grouped by fingerprint, with "
        "counts, first and last seen, and what changed between "
        "recurrences.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    which = h.add_mutually_exclusive_group()
    which.add_argument("--run", metavar="NAME", help="one run, by the name triage logs --run gave")
    which.add_argument("--log", metavar="PATH", help="the run that triaging this log would belong to")
    h.add_argument(
        "--stats", action="store_true", help="failures by signature, host and day instead of by run"
    )
    h.add_argument(
        "--format",
        "-f",
        choices=("console", "json", "html"),
        default="console",
        help="console (default), json, or html (one page of a run's crashes; needs -o and the [html] extra)",
    )
    h.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        help="write the html page here (an existing file is not overwritten)",
    )
    h.add_argument(
        "--limit",
        type=int,
        default=5000,
        metavar="N",
        help="read at most the N latest crashes (default 5000)",
    )
    h.add_argument(
        "--history-url",
        metavar="URL",
        help=f"the store: postgresql://... or sqlite:///PATH (default: ${URL_ENV}, "
        "else $XDG_STATE_HOME/triage/history.sqlite)",
    )
    h.set_defaults(func=cmd_history)


def cmd_history(args: argparse.Namespace) -> int:
    """Print the history (exit 2 with one line when the store cannot be read)."""
    if args.limit < 1:
        raise TriageError("history: --limit must be at least 1")
    try:
        store = open_store(args.history_url or os.environ.get(URL_ENV) or None)
    except HistoryError as e:
        raise TriageError(f"history: {e}") from None
    if args.format == "html":
        return _html(store, args)
    try:
        data = stats(store) if args.stats else grouped(store, _run_key(args), args.limit)
    except HistoryError as e:
        raise TriageError(f"history: {e}") from None
    finally:
        store.close()
    if args.format == "json":
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write("\n".join(render_stats(data) if args.stats else render(data)) + "\n")
    return 0


def _html(store: Store, args: argparse.Namespace) -> int:
    """A run's past crashes (or every run's) as one page, newest first: what each crash
    was diagnosed as, with its evidence line, what was ruled out and why, and what changed
    since the crash of the same failure before it."""
    from pathlib import Path

    from triage.report import html

    try:
        if not args.output:
            raise TriageError("history: --format html needs -o FILE")
        if args.stats:
            raise TriageError("history: --stats has no html page; use --format json")
        out = Path(args.output)
        if out.exists():
            raise TriageError(f"history: {out} exists; not overwritten")
        html.require()
        data = grouped(store, _run_key(args), args.limit)
        ids = [c["id"] for run in data["runs"] for f in run["failures"] for c in f["crashes"]]
        recs = {r.id: r for r in store.query(limit=args.limit)} if ids else {}
    except HistoryError as e:
        raise TriageError(f"history: {e}") from None
    finally:
        store.close()
    entries: list[tuple[str, Any]] = []
    for run in data["runs"]:
        for failure in run["failures"]:
            for crash in reversed(failure["crashes"]):
                rec = recs.get(crash["id"])
                if rec is not None:
                    head = f"{run['run']['name']} · {crash['recorded_at']} · {failure['label']}"
                    entries.append((head, report_of(rec, crash.get("changed_since_previous") or {})))
    out.write_text(html.render_history(entries, title="Crash history"), encoding="utf-8")
    sys.stderr.write(f"wrote {out} ({len(entries)} crashes)\n")
    return 0


def report_of(rec: Record, changed: dict[str, Any]) -> Any:
    """The stored part of one crash as a Report the views can draw (the store keeps each
    diagnosis's first evidence line, not the log)."""
    from triage.engine import get_rules
    from triage.model import Confidence, Diagnosis, EndState, Evidence, Report, RuledOut, SourceInfo

    titles = {r.id: r.title for r in get_rules()}
    diags = []
    for d in rec.diagnoses:
        ev = (Evidence(text=d["evidence"]),) if d.get("evidence") else ()
        diags.append(
            Diagnosis(
                signature=d["signature"],
                rule=d["signature"],
                title=titles.get(d["signature"], d["signature"]),
                confidence=Confidence.parse(d.get("confidence") or "possible"),
                score=0.0,
                role=d.get("role", "root-cause"),
                evidence=ev,
            )
        )
    ruled = tuple(RuledOut(x["signature"], x["because"]) for x in rec.ruled_out)
    notes = (f"Changed since the crash before it: {describe_changes(changed)}",) if changed else ()
    end = str(rec.fp_parts.get("end_state") or ("traceback" if rec.failed else "no-terminal-event"))
    return Report(
        sources=tuple(SourceInfo(s, 0) for s in rec.sources),
        end_state=EndState(end),
        diagnoses=tuple(diags),
        ruled_out=ruled,
        notes=notes,
    )


def _run_key(args: argparse.Namespace) -> str | None:
    if args.run:
        return f"run:{args.run}"
    if args.log:
        return derive_run([args.log]).key
    return None


# -- data -------------------------------------------------------------------------------
def grouped(store: Store, run_key: str | None, limit: int) -> dict[str, Any]:
    """Each run's crashes grouped by fingerprint (the latest run first)."""
    if run_key is None:
        recs = store.query(limit=limit)
    else:
        # `--run NAME` also finds a run named NAME some other way (a job name, a session)
        name = run_key.split(":", 1)[1] if run_key.startswith("run:") else None
        where = "run_key = ?" + (" OR run_name = ?" if name else "")
        recs = store.query(where, (run_key, name) if name else (run_key,), limit=limit)
    recs.reverse()  # oldest first: recurrences read in order
    runs: dict[str, list[Record]] = {}
    for r in recs:
        runs.setdefault(r.run_key, []).append(r)
    out = []
    for key, rs in sorted(runs.items(), key=lambda kv: -max(r.recorded_at for r in kv[1])):
        out.append(
            {
                "run": {"key": key, "name": rs[-1].run_name, "via": rs[-1].run_via},
                "crashes": len(rs),
                "failures": _failures(rs),
            }
        )
    return {"schema": "triage.history/1", "store": store.describe(), "crashes": len(recs), "runs": out}


def _failures(rs: list[Record]) -> list[dict[str, Any]]:
    by: dict[str, list[Record]] = {}
    for r in rs:
        by.setdefault(r.fingerprint, []).append(r)
    latest = rs[-1].fingerprint
    groups = []
    for fp, group in sorted(by.items(), key=lambda kv: -kv[1][-1].recorded_at):
        crashes = []
        for i, r in enumerate(group):
            changed = changed_facts(group[i - 1].facts, r.facts) if i else {}
            crashes.append(
                {
                    "id": r.id,
                    "recorded_at": r.when(),
                    "host": r.host,
                    "signature": r.signature,
                    "confidence": r.confidence,
                    "command": r.command,
                    "sources": r.sources,
                    "ruled_out": [x["signature"] for x in r.ruled_out],
                    "changed_since_previous": changed,
                }
            )
        groups.append(
            {
                "fingerprint": fp,
                "kind": group[0].fp_kind,
                "label": group[-1].label,
                "parts": group[-1].fp_parts,
                "failed": group[-1].failed,
                "count": len(group),
                "first_seen": group[0].when(),
                "last_seen": group[-1].when(),
                "latest": fp == latest,
                "crashes": crashes,
            }
        )
    return groups


def stats(store: Store) -> dict[str, Any]:
    """Failures by signature, by host and by day, over the whole store."""

    def table(q: str, keys: tuple[str, ...]) -> list[dict[str, Any]]:
        return [dict(zip(keys, row, strict=True)) for row in store.rows(q)]

    sig = table(
        "SELECT COALESCE(signature, '(none)'), COUNT(*), COUNT(DISTINCT run_key), "
        "COUNT(DISTINCT host), MIN(day), MAX(day) FROM crashes WHERE failed = 1 "
        "GROUP BY COALESCE(signature, '(none)') ORDER BY COUNT(*) DESC, 1",
        ("signature", "failures", "runs", "hosts", "first_day", "last_day"),
    )
    host = table(
        "SELECT host, COUNT(*), COUNT(DISTINCT run_key) FROM crashes WHERE failed = 1 "
        "GROUP BY host ORDER BY COUNT(*) DESC, 1",
        ("host", "failures", "runs"),
    )
    day = table(
        "SELECT day, COUNT(*), COUNT(DISTINCT run_key) FROM crashes WHERE failed = 1 "
        "GROUP BY day ORDER BY day DESC",
        ("day", "failures", "runs"),
    )
    total = store.count()
    return {
        "schema": "triage.history-stats/1",
        "store": store.describe(),
        "crashes": total,
        "failures": sum(int(r["failures"]) for r in sig),
        "by_signature": sig,
        "by_host": host,
        "by_day": day,
    }


# -- views ------------------------------------------------------------------------------
def render(data: dict[str, Any]) -> list[str]:
    """The console view of `grouped`."""
    lines = [f"triage history  ({data['store']}; {data['crashes']} crash(es), {len(data['runs'])} run(s))"]
    if not data["runs"]:
        return [
            *lines,
            "",
            "No crashes recorded yet: `triage logs` and `triage watch` record "
            "each triage (unless --no-history).",
        ]
    for run in data["runs"]:
        r = run["run"]
        lines += ["", f"run {r['name']}  (from {r['via']}; {run['crashes']} triage(s))"]
        for f in run["failures"]:
            state = "latest" if f["latest"] else ("gone" if f["failed"] else "ok")
            times = "" if f["count"] == 1 else f"  first {f['first_seen']}"
            lines.append(f"  {f['fingerprint']}  {f['count']}x  {state}{times}  last {f['last_seen']}")
            lines.append(f"      {f['label']}")
            for c in f["crashes"]:
                out = f" ruled out: {', '.join(c['ruled_out'])}" if c["ruled_out"] else ""
                lines.append(
                    f"      #{c['id']} {c['recorded_at']} {c['host']}  "
                    f"{c['signature'] or '-'} {c['confidence'] or ''}{out}"
                )
                if c["changed_since_previous"]:
                    lines.append(
                        f"         changed since the last: {describe_changes(c['changed_since_previous'])}"
                    )
    return lines


def render_stats(data: dict[str, Any]) -> list[str]:
    """The console view of `stats`."""
    lines = [
        f"triage history --stats  ({data['store']}; {data['failures']} failure(s) in "
        f"{data['crashes']} triage(s))"
    ]
    lines += _table(
        "by signature",
        data["by_signature"],
        ("signature", "failures", "runs", "hosts", "first_day", "last_day"),
    )
    lines += _table("by host", data["by_host"], ("host", "failures", "runs"))
    lines += _table("by day", data["by_day"], ("day", "failures", "runs"))
    return lines


def _table(title: str, rows: Iterable[dict[str, Any]], keys: tuple[str, ...]) -> list[str]:
    rows = list(rows)
    if not rows:
        return ["", f"{title}: none"]
    widths = [max(len(k), *(len(str(r[k])) for r in rows)) for k in keys]
    out = ["", title, "  " + "  ".join(k.ljust(w) for k, w in zip(keys, widths, strict=True))]
    for r in rows:
        out.append("  " + "  ".join(str(r[k]).ljust(w) for k, w in zip(keys, widths, strict=True)))
    return [line.rstrip() for line in out]
