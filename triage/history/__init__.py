"""history: remember every crash, and reason across them.

Around the analysis, never inside it: `History.recall` is the engine's `recall` hook
(given the first report, it looks up this run's last crash with the same fingerprint
and hands what changed since to the reasoning as a fact); `History.finish` records the
final report and adds what the history says (the same failure again, the fix held, a
diagnosis seen across many runs). A store that fails gives one warning line and the
report stays what it would have been without it.

    sources -> ... -> reason -> report
                        ^  recall      | finish
                        +-- store <----+
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from triage.history.fingerprint import Fingerprint, fingerprint, signature_of
from triage.history.runs import Run, derive_run
from triage.history.store import HistoryError, Record, Store, jsonable, open_store
from triage.model import Report

__all__ = [
    "DISABLE_ENV",
    "URL_ENV",
    "History",
    "HistoryError",
    "Run",
    "derive_run",
    "enabled",
    "fingerprint",
    "open_store",
]

URL_ENV = "TRIAGE_HISTORY_URL"
# TRIAGE_HISTORY=off (or 0, no, false) turns recording off like --no-history (the test
# suite sets it, so only the history's own tests write a store).
DISABLE_ENV = "TRIAGE_HISTORY"
RECURRENCE_FACT = "history.recurrence"  # the engine's name for it (triage.engine.reason)
_PER_CRASH = ("log.", "run.")
MAX_NOTE_FACTS = 3


def enabled(flag_off: bool, env: Mapping[str, str] | None = None) -> bool:
    """Is the history on: not --no-history, and not TRIAGE_HISTORY=off."""
    env = os.environ if env is None else env
    return not flag_off and env.get(DISABLE_ENV, "").lower() not in ("off", "0", "no", "false")


def _stderr_warning(text: str) -> None:
    sys.stderr.write(f"triage: warning: {text}\n")


class History:
    """The history for one triage: `recall` (the engine's hook), then `finish`."""

    def __init__(
        self,
        run: Run,
        *,
        url: str | None = None,
        facts: Mapping[str, Any] | None = None,
        redact: str = "secrets",
        command: str = "logs",
        warn: Callable[[str], None] = _stderr_warning,
        clock: Callable[[], float] = time.time,
        store: Store | None = None,
    ) -> None:
        self.run = run
        self.url = url if url is not None else os.environ.get(URL_ENV) or None
        self.facts = {k: v for k, v in (facts or {}).items() if not k.startswith("log.")}
        self.redact_mode = redact
        self.command = command
        self.warn = warn
        self.clock = clock
        self._store = store
        self._failed = False
        self._fp: Fingerprint | None = None
        self._same: Record | None = None  # this run's last crash with the same fingerprint
        self._changed: dict[str, list[Any]] = {}
        self._retriaged: Record | None = None  # this very log file, recorded before
        self._facts_stored: dict[str, Any] | None = None

    # -- the store, lazily, and only one warning -------------------------------------
    def store(self) -> Store | None:
        if self._store is None and not self._failed:
            try:
                self._store = open_store(self.url)
            except HistoryError as e:
                self._fail(e)
        return self._store

    def _fail(self, e: HistoryError) -> None:
        if not self._failed:
            self.warn(f"crash history unavailable: {e} (the report is not recorded)")
        self._failed = True
        if self._store is not None:
            self._store.close()
        self._store = None

    def _redact(self, obj: Any) -> Any:
        """`obj` (JSON data) with secrets masked. One pass over its JSON text: a snapshot
        holds hundreds of short strings, and the detectors cost per string; should a
        mask ever break the JSON, each string is redacted on its own instead."""
        import json

        from triage.redact import Redactor

        text = json.dumps(obj, ensure_ascii=False)
        masked = Redactor(mode=self.redact_mode).redact(text)
        if masked == text:
            return obj
        try:
            return json.loads(masked)
        except ValueError:
            return Redactor(mode=self.redact_mode).redact_data(obj)

    def _redact_text(self, text: str) -> str:
        from triage.redact import Redactor

        return Redactor(mode=self.redact_mode).redact(text)

    # -- before the final reasoning --------------------------------------------------
    def recall(self, report: Report) -> dict[str, Any]:
        """The engine's hook: when this run died with this fingerprint before, what
        changed between that crash and this one, as the `history.recurrence` fact."""
        self._fp = fingerprint(report, self._redact_text)
        store = self.store()
        if store is None:
            return {}
        log_id = _log_id(report)
        try:
            found = store.query("run_key = ? AND fingerprint = ?", (self.run.key, self._fp.id), limit=5)
        except HistoryError as e:
            self._fail(e)
            return {}
        # a re-triage of the very same log file is not a second crash
        earlier = [r for r in found if log_id is None or r.log_id != log_id]
        self._retriaged = next((r for r in found if log_id is not None and r.log_id == log_id), None)
        if not earlier:
            return {}
        self._same = earlier[0]
        self._changed = changed_facts(self._same.facts, self._stored_facts())
        if not self._changed:
            return {}
        now = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self._when(report)))
        return {
            RECURRENCE_FACT: {
                "previous": self._same.name(),
                "current": f"this crash ({now})",
                "fingerprint": self._fp.id,
                "changed": self._changed,
                "suspected": [d["signature"] for d in self._same.diagnoses if d.get("role") != "consequence"],
            }
        }

    def _stored_facts(self) -> dict[str, Any]:
        """The facts as stored: JSON, redacted (once: redaction is most of the cost)."""
        if self._facts_stored is None:
            self._facts_stored = dict(self._redact(jsonable(self.facts)))
        return self._facts_stored

    # -- after it --------------------------------------------------------------------
    def finish(self, report: Report) -> Report:
        """Record the report; return it with the history's notes and JSON block."""
        if self._fp is None:
            self._fp = fingerprint(report, self._redact_text)
        store = self.store()
        if store is None:
            return report
        try:
            return self._finish(store, report, self._fp)
        except HistoryError as e:
            self._fail(e)
            return report

    def _finish(self, store: Store, report: Report, fp: Fingerprint) -> Report:
        retriaged = self._retriaged
        before = store.query("run_key = ?", (self.run.key,), limit=1)
        previous = before[0] if before else None
        if retriaged is not None:
            rec = retriaged
            notes = [f"Already recorded as {rec.name()} (the same log file, unchanged): not recorded again."]
            previous = next(
                iter(store.query("run_key = ? AND id < ?", (self.run.key, rec.id), limit=1)), None
            )
        else:
            rec = self._record(report, fp)
            store.record(rec)
            notes = []
        block: dict[str, Any] = {
            "store": store.describe(),
            "id": rec.id,
            "run": self.run.as_dict(),
            "fingerprint": fp.as_dict(),
        }
        # counted in the store, not fetched: a run may have died this way a thousand times
        count, first, last = store.rows(
            "SELECT COUNT(*), MIN(recorded_at), MAX(recorded_at) FROM crashes "
            "WHERE run_key = ? AND fingerprint = ?",
            (self.run.key, fp.id),
        )[0]
        if int(count) > 1:
            recent = store.rows(
                "SELECT id FROM crashes WHERE run_key = ? AND fingerprint = ? ORDER BY id DESC LIMIT 20",
                (self.run.key, fp.id),
            )
            seen = (int(count), _utc(first), _utc(last))
            block["recurrence"] = {
                "count": seen[0],
                "first_seen": seen[1],
                "last_seen": seen[2],
                "crashes": sorted(int(r[0]) for r in recent),
                "changed": self._changed,
                "previous": self._same.id if self._same else None,
            }
            notes.append(self._recurrence_note(fp, *seen))
        if previous is not None and previous.fingerprint != fp.id and previous.failed:
            held = self._fix_held(store, previous, rec, fp, report)
            block["fix_held"] = held
            notes.append(held["note"])
        sig = signature_of(report)
        if sig and rec.failed:
            spread = self._spread(store, sig)
            if spread:
                block["signature"] = spread
                notes.append(spread["note"])
        return replace(report, notes=(*report.notes, *notes), history=block)

    def _record(self, report: Report, fp: Fingerprint) -> Record:
        facts = self._stored_facts()
        top = report.top
        diags = [
            {
                "signature": d.signature,
                "confidence": d.confidence.label,
                "role": d.role,
                "evidence": d.evidence[0].text[:300] if d.evidence else "",
            }
            for d in report.diagnoses
        ]
        host = facts.get("host") if isinstance(facts.get("host"), str) else None
        return Record(
            recorded_at=self._when(report),
            host=host or socket.gethostname(),
            run_key=self.run.key,
            run_name=self.run.name,
            run_via=self.run.via,
            fingerprint=fp.id,
            fp_kind=fp.kind,
            fp_parts=fp.parts,
            label=self._redact_text(fp.label),
            signature=signature_of(report) or (top.signature if top else None),
            confidence=top.confidence.label if top else None,
            failed=failed(report),
            diagnoses=self._redact(diags),
            ruled_out=self._redact(
                [{"signature": x.signature, "because": x.because} for x in report.ruled_out]
            ),
            facts=facts,
            sources=self._redact([s.path for s in report.sources]),
            log_id=_log_id(report),
            command=self.command,
            triage_version=_version(),
        )

    def _when(self, report: Report) -> float:
        """When the crash happened: the last write to its log files (a log triaged a
        week later is dated by its crash), else now (stdin)."""
        times = []
        for s in report.sources:
            try:
                times.append(os.stat(s.path).st_mtime)
            except OSError:
                return self.clock()
        return max(times) if times else self.clock()

    def _recurrence_note(self, fp: Fingerprint, n: int, first: str, last: str) -> str:
        text = f"This run died this way {n} times (fingerprint {fp.id}; first {first}, last {last})."
        if self._same is None:
            return text
        if self._changed:
            return text + (
                f" Between {self._same.name()} and this crash: "
                f"{describe_changes(self._changed)}; a hypothesis that depends on "
                "what changed is ruled out."
            )
        if not _has_snapshot(self._same.facts) or not _has_snapshot(self.facts):
            return text + (
                " To see what changed between the crashes, give each one a "
                "snapshot (triage snapshot, then --evidence)."
            )
        return text + f" Nothing the snapshots show changed since {self._same.name()}."

    def _fix_held(
        self, store: Store, previous: Record, rec: Record, fp: Fingerprint, report: Report
    ) -> dict[str, Any]:
        changed = changed_facts(previous.facts, rec.facts)
        gone = int(
            store.rows(
                "SELECT COUNT(*) FROM crashes WHERE run_key = ? AND fingerprint = ?",
                (self.run.key, previous.fingerprint),
            )[0][0]
        )
        seen_before = store.query(
            "run_key = ? AND fingerprint = ? AND id < ?", (self.run.key, fp.id, rec.id or 0), limit=1
        )
        # "the fix held" only when the snapshots show what was fixed; else just the fact
        held = f" after {describe_changes(changed)}: the fix held" if changed else ""
        note = f"The failure of {previous.name()} ({previous.label}; {gone} crash(es)) did not recur{held}."
        if not rec.failed:
            note += " This run ended without a failure."
            status = "none"
        elif seen_before:
            note += f" An earlier failure is back: {fp.label} (last seen {seen_before[0].name()})."
            status = "earlier"
        else:
            note += f" This is a new failure: {fp.label}."
            status = "new"
        return {
            "gone": previous.fingerprint,
            "gone_label": previous.label,
            "gone_count": gone,
            "changed": changed,
            "now": status,
            "note": note,
        }

    def _spread(self, store: Store, sig: str) -> dict[str, Any] | None:
        rows = store.rows(
            "SELECT COUNT(*), COUNT(DISTINCT run_key), MIN(recorded_at), "
            "MAX(recorded_at) FROM crashes WHERE signature = ? AND failed = 1",
            (sig,),
        )
        count, runs, first, last = rows[0]
        if not count or int(runs) < 2:
            return None

        def day(t: float) -> str:
            return time.strftime("%Y-%m-%d", time.gmtime(float(t)))

        return {
            "signature": sig,
            "count": int(count),
            "runs": int(runs),
            "first_seen": day(first),
            "last_seen": day(last),
            "note": (
                f"{sig} has been diagnosed in {count} crashes across {runs} runs "
                f"(first {day(first)}, last {day(last)}): triage history --stats."
            ),
        }


def add_options(p: Any) -> None:
    """The history's options, on `triage logs` and `triage watch`."""
    p.add_argument(
        "--no-history",
        action="store_true",
        help="do not record this triage in the crash history (or TRIAGE_HISTORY=off)",
    )
    p.add_argument(
        "--run",
        metavar="NAME",
        help="the run this crash belongs to (default: a scheduler's job name, the "
        "tmux session, or the log's path)",
    )
    p.add_argument(
        "--history-url",
        metavar="URL",
        help=f"the history store: postgresql://... or sqlite:///PATH (default: "
        f"${URL_ENV}, else $XDG_STATE_HOME/triage/history.sqlite)",
    )


def for_args(
    args: Any, paths: Sequence[str], facts: Mapping[str, Any], *, command: str, tmux: str | None = None
) -> History | None:
    """The History of a command's parsed arguments; None when it is off."""
    if not enabled(getattr(args, "no_history", False)):
        return None
    run = derive_run(paths, name=getattr(args, "run", None), tmux=tmux)
    mode = "all" if getattr(args, "redact", None) == "all" else "secrets"
    return History(run, url=getattr(args, "history_url", None), facts=facts, redact=mode, command=command)


def _utc(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(t)))


def failed(report: Report) -> bool:
    """Did this triage find a failure (a cause, or a log that ends in an error or just
    stops)? A clean exit with nothing wrong is recorded too, but not as a failure."""
    if any(d.role != "consequence" and not d.fallback for d in report.diagnoses):
        return True
    return report.end_state.kind not in ("clean-exit", "empty")


def changed_facts(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The facts that differ between two crashes' snapshots: {name: [old, new]}. Only
    when both had a snapshot; a fact unreadable on either side proves no change."""
    if not _has_snapshot(old) or not _has_snapshot(new):
        return {}
    out: dict[str, list[Any]] = {}
    for k in sorted(set(old) | set(new)):
        if k.startswith(_PER_CRASH):
            continue
        a, b = jsonable(old.get(k)), jsonable(new.get(k))
        if _unknown(a) or _unknown(b) or a == b:
            continue
        out[k] = [a, b]
    return out


def describe_changes(changed: Mapping[str, Sequence[Any]]) -> str:
    """`package.accelerate absent -> 1.13.0, ...` (the first few)."""

    def show(v: Any) -> str:
        if v is None:
            return "absent"
        if isinstance(v, bool):
            return str(v).lower()
        return str(v)[:40]

    order = sorted(changed, key=fact_order)
    items = [f"{k} {show(changed[k][0])} -> {show(changed[k][1])}" for k in order]
    more = f" (+{len(items) - MAX_NOTE_FACTS} more)" if len(items) > MAX_NOTE_FACTS else ""
    return ", ".join(items[:MAX_NOTE_FACTS]) + more


def fact_order(name: str) -> int:
    """Installs and swaps first (package.*, torch.*), derived facts and errors last."""
    from triage.engine.reason import FACT_ORDER

    return next(
        (i for i, p in enumerate(FACT_ORDER) if name.startswith(p)),
        len(FACT_ORDER) + name.startswith("import_error."),
    )


def _unknown(v: Any) -> bool:
    return isinstance(v, dict) and set(v) == {"unknown"}


def _has_snapshot(facts: Mapping[str, Any]) -> bool:
    return any(not k.startswith(_PER_CRASH) for k in facts)


def _log_id(report: Report) -> str | None:
    """The identity of the log files as they are now (path, size, mtime): the same file
    triaged twice is one crash, a relaunch that rewrote it is another. None for stdin."""
    import hashlib

    parts = []
    for s in report.sources:
        try:
            st = os.stat(s.path)
        except OSError:
            return None
        parts.append(f"{os.path.abspath(s.path)}\0{st.st_size}\0{st.st_mtime_ns}")
    if not parts:
        return None
    return hashlib.sha256("\n".join(parts).encode("utf-8", "replace")).hexdigest()[:16]


def _version() -> str:
    from triage import __version__

    return __version__
