"""`triage history [--run NAME | --log PATH] [--stats] [--format json] [--history-url URL]`:
past crashes grouped by fingerprint, with counts, first and last seen, and what changed
between recurrences; `--stats` for a team: failures by signature, host and day.
The data and its text come from triage/history/views.py."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from triage.errors import TriageError

EPILOG = """\
examples:
  triage history                          # every run's crashes, grouped by fingerprint
  triage history --log train.log          # the run that log belongs to
  triage history --run dflash-8gpu --format json
  triage history --stats                  # failures by signature, host and day
"""


def register(sub: Any) -> None:
    """Add the `history` subcommand to triage's subparsers."""
    from triage.history import URL_ENV

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
    from triage.history import URL_ENV
    from triage.history.store import HistoryError, open_store
    from triage.history.views import grouped, render, render_stats, stats

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


def _html(store: Any, args: argparse.Namespace) -> int:
    """A run's past crashes (or every run's) as one page, newest first: what each crash
    was diagnosed as, with its evidence line, what was ruled out and why, and what changed
    since the crash of the same failure before it."""
    from pathlib import Path

    from triage.history.store import HistoryError
    from triage.history.views import grouped, report_of
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


def _run_key(args: argparse.Namespace) -> str | None:
    from triage.history import derive_run

    if args.run:
        return f"run:{args.run}"
    if args.log:
        return derive_run([args.log]).key
    return None
