"""`triage logs PATH... [--format F] [--fail-on LEVEL] [--evidence FILE | --probe] ...`:
triage logs and print the root cause first."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any

from triage.cli.output import add_output_options, check_output, emit, fail_on_code
from triage.cli.parser import add_rules_option

# Shown by `triage logs --help`: what a script can rely on, and the three commonest uses.
LOGS_EPILOG = """\
exit codes:
  0  ran (no diagnosis reached --fail-on)
  1  --fail-on reached: a cause at that confidence or surer
  2  usage or input error (one line on stderr)
  3  internal error (--debug shows the traceback)

examples:
  triage logs train.log                             # one log: the root cause first
  triage logs logs/ --format json -o report.json    # a folder of per-rank logs, as JSON
  triage logs train.log --redact --fail-on likely   # in CI: exit 1 on a real crash
"""

PROGRESS_MIN_BYTES = 256 << 20


def register(sub: Any) -> None:
    """Add the `logs` subcommand to triage's subparsers."""
    logs = sub.add_parser(
        "logs",
        help="triage log files, folders of per-rank logs, or - (stdin)",
        description="Read training logs and print the root cause first, "
        "with its evidence, what it explains, the check that "
        "confirms it and the fix.",
        epilog=LOGS_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    logs.add_argument("paths", nargs="+", help="log files, folders, .gz/.zst, or - for stdin")
    add_output_options(logs)
    logs.add_argument(
        "--evidence", metavar="SNAPSHOT", help="a snapshot JSON (triage snapshot) to reason with"
    )
    logs.add_argument(
        "--probe", action="store_true", help="take an evidence snapshot of this machine now and use it"
    )
    logs.add_argument(
        "--python", metavar="PATH", help="with --probe: the training run's interpreter (default: this one)"
    )
    add_rules_option(logs)
    from triage.history import add_options as add_history_options

    add_history_options(logs)
    speed = logs.add_mutually_exclusive_group()
    speed.add_argument("--quick", action="store_true", help="a first verdict from the tail of each file only")
    speed.add_argument(
        "--full", action="store_true", help="read every line even of big logs (no literal prefilter)"
    )
    logs.set_defaults(func=cmd_logs)


def load_facts(args: argparse.Namespace) -> dict[str, object]:
    """Snapshot facts from --evidence FILE or --probe (empty when neither)."""
    if not getattr(args, "evidence", None) and not getattr(args, "probe", False):
        return {}
    from triage import evidence

    if args.evidence:
        snap = evidence.load_snapshot(args.evidence)
    else:
        snap = evidence.take_snapshot(python=args.python)
    return evidence.facts_from_snapshot(snap)


def cmd_logs(args: argparse.Namespace) -> int:
    """Triage the logs, record them in the crash history, print the report."""
    from triage.engine import analyze, get_rules

    check_output(args)

    from triage.history import for_args

    rules = get_rules(args.rules)
    facts = load_facts(args)
    # the crash history: read before the final reasoning, written after (never in the way)
    history = for_args(args, args.paths, facts, command="logs")
    with _progress(args) as on_progress:
        report = analyze(
            args.paths,
            rules=rules,
            facts=facts,
            fast=False if args.full else None,
            tail_only=args.quick,
            on_progress=on_progress,
            recall=history.recall if history else None,
        )
    if history is not None:
        report = history.finish(report)
    emit(report, args)
    return fail_on_code(report, args.fail_on)


class _progress:
    """A progress bar on stderr for long scans, in an interactive console only."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.bar: Any = None
        if args.format != "console" or args.quick or not sys.stderr.isatty():
            return
        total = 0
        for p in args.paths:
            with contextlib.suppress(OSError):
                total += os.path.getsize(p) if os.path.isfile(p) else 0
        if total >= PROGRESS_MIN_BYTES:
            from rich.progress import Progress

            self.bar = Progress(transient=True, console=_stderr_console())
            self.task = self.bar.add_task("scanning", total=total)

    def __enter__(self) -> Any:
        if self.bar is None:
            return None
        self.bar.start()
        return lambda n: self.bar.advance(self.task, n)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)
