"""`triage repro --list` and `triage repro NAME [--fix] [--device cpu|cuda] ...`.

Exit 0 when the outcome is the expected one (reproduced and diagnosed; with --fix, not
reproduced and fixed; or skipped: a GPU scenario without --device cuda), 1 otherwise,
2 for an unknown scenario or bad usage (one line on stderr). Running and judging a
scenario is triage.repro.runner; the scenarios are triage.repro.scenarios.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from triage.errors import ExitCode, TriageError


def register(sub: Any) -> None:
    """Add the `repro` subcommand to triage's parser."""
    p = sub.add_parser(
        "repro",
        help="reproduce a known failure on the reference runtime, and verify its fix",
        description="Run a scenario (a real failing configuration of dflash_runtime or of a "
        "library) in a subprocess, triage its log, and say whether the expected "
        "signature was diagnosed; --fix runs the remedy and shows the failure gone.",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="the scenario (see --list)")
    p.add_argument("--list", action="store_true", help="list the scenarios as a table")
    p.add_argument(
        "--json",
        action="store_true",
        help="JSON output (the default for a run; with --list, rows instead of a table)",
    )
    p.add_argument("--fix", action="store_true", help="run the fix configuration")
    p.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="where the scenario runs (default: cpu; GPU scenarios need cuda)",
    )
    p.add_argument(
        "--format",
        "-f",
        choices=("json", "console"),
        default=None,
        help="a run's outcome as json (default) or a few console lines",
    )
    p.add_argument("--keep", metavar="DIR", help="keep the run's folder (log, snapshot) under DIR")
    p.add_argument("--timeout", type=float, metavar="S", help="wall-clock limit of the run")
    p.add_argument(
        "--python", metavar="PATH", help="the interpreter that runs the scenario (default: this one)"
    )
    p.add_argument(
        "--no-snapshot", action="store_true", help="triage the log alone, without an evidence snapshot"
    )
    p.add_argument(
        "--record",
        metavar="FIXTURES",
        help="write the run's log as a fixture under "
        "FIXTURES/<signature>/NNN-repro-NAME/ "
        "(only when reproduced and diagnosed)",
    )
    p.set_defaults(func=cmd_repro)


def cmd_repro(args: argparse.Namespace) -> int:
    """List the scenarios, or run one and print its outcome."""
    from triage.repro import runner

    if args.list:
        return _list(args)
    if not args.name:
        raise TriageError("repro: give a scenario NAME, or --list")
    if args.timeout is not None and args.timeout <= 0:
        raise TriageError("repro: --timeout must be positive")
    if args.record and args.fix:
        raise TriageError("repro: --record records a failing run; drop --fix")
    out = runner.run_scenario(
        args.name,
        fix=args.fix,
        device=args.device,
        python=args.python,
        keep=args.keep,
        timeout_s=args.timeout,
        snapshot=not args.no_snapshot,
        record=args.record,
    )
    if args.json or args.format != "console":
        sys.stdout.write(json.dumps(out.to_json(), indent=2) + "\n")
    else:
        sys.stdout.write(console(out))
    return ExitCode.OK if out.ok else ExitCode.FAIL_ON


def _list(args: argparse.Namespace) -> int:
    """`triage repro --list`: the scenarios as a table, or JSON rows."""
    from triage.repro.scenarios import all_scenarios

    rows = [
        {
            "name": s.name,
            "expected": s.expected,
            "device": s.device,
            "summary": s.summary,
            "failure": s.failure,
            "fix": s.fix,
        }
        for s in all_scenarios()
    ]
    if args.json or args.format == "json":
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    else:
        sys.stdout.write(list_table(rows))
    return ExitCode.OK


def list_table(rows: list[dict[str, Any]]) -> str:
    """The scenarios as a table: name, device, the signature it should reproduce, and
    what it does (one line each, so it greps and sorts)."""
    head = {"name": "scenario", "device": "device", "expected": "expects", "summary": "what it does"}
    cols = ("name", "device", "expected")
    widths = {c: max(len(str(r[c])) for r in [head, *rows]) for c in cols}
    lines = []
    for r in [head, *rows]:
        lines.append("  ".join(f"{r[c]!s:<{widths[c]}}" for c in cols) + f"  {r['summary']}")
    return "\n".join(x.rstrip() for x in lines) + "\n"


def console(out: Any) -> str:
    """A few readable lines about an Outcome."""
    head = f"triage repro {out.scenario}{' --fix' if out.fix else ''} ({out.device})"
    if out.skipped:
        return f"{head}: skipped: {out.skipped}\n"
    lines = [head]
    status = out.signal or (f"exit {out.exit_status}" if out.exit_status is not None else "not run")
    lines.append(
        f"  run: {status} after {out.seconds:.1f}s"
        + (f", killed by the {out.killed_by}" if out.killed_by else "")
    )
    if out.fix:
        named = "yes" if out.expected in out.diagnosed else "no"
        lines.append(
            f"  failure reproduced: {'yes' if out.reproduced else 'no'}; {out.expected} diagnosed: {named}"
        )
        lines.append(f"  fixed: {'yes' if out.fixed else 'NO'}")
    else:
        lines.append(f"  reproduced: {'yes' if out.reproduced else 'NO'}")
        first = "yes" if out.top == out.expected else "NO"
        lines.append(
            f"  diagnosed: {', '.join(out.diagnosed) or 'nothing'}  (expected {out.expected} first: {first})"
        )
    for n in out.notes:
        lines.append(f"  note: {n}")
    if not out.ok and out.log_tail:
        lines.append("  log tail:")
        lines += [f"    {t}" for t in out.log_tail[-10:]]
    if out.log:
        lines.append(f"  log: {out.log}")
    lines.append(f"  outcome: {'as expected' if out.ok else 'NOT as expected'}")
    return "\n".join(lines) + "\n"
