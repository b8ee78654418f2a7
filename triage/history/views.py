"""The crash history as data and text: each run's failures grouped by fingerprint (with
counts, first and last seen, and what changed between recurrences), a team's failures by
signature, host and day, and one stored crash as a Report the views can draw.
`triage history` (triage/cli/history.py) prints these."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from triage.history import changed_facts, describe_changes
from triage.history.store import Record, Store


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
