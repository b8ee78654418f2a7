"""Command line: `triage logs`, `triage rules`, `triage fixtures`, `triage snapshot`,
`triage watch`, `triage repro`.

stdout is data; errors are one line on stderr. Exit codes: 0 ran, 1 --fail-on reached
(or fixtures regressed), 2 usage or input error, 3 internal error (--debug shows it).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from triage import __version__
from triage.errors import ExitCode, TriageError

FORMATS = ("console", "json", "markdown", "sarif", "junit", "github", "html")
LEVELS = ("confirmed", "likely", "possible")
RULES_HELP = "an extra folder of rules (repeatable)"

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

# Subcommands living in their own modules: each has `register(subparsers)`.
PLUGINS = (
    "triage.evidence.cli",
    "triage.fixtures.cli",
    "triage.watch.cli",
    "triage.repro.cli",
    "triage.history.cli",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise TriageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="triage", description="Crash triage for ML training logs.")
    p.add_argument("--version", action="version", version=f"triage {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)

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
    logs.add_argument("--rules", metavar="DIR", action="append", type=Path, help=RULES_HELP)
    from triage.history import add_options as add_history_options

    add_history_options(logs)
    speed = logs.add_mutually_exclusive_group()
    speed.add_argument("--quick", action="store_true", help="a first verdict from the tail of each file only")
    speed.add_argument(
        "--full", action="store_true", help="read every line even of big logs (no literal prefilter)"
    )
    logs.set_defaults(func=cmd_logs)

    rules = sub.add_parser("rules", help="list, show, lint or export the rules")
    rsub = rules.add_subparsers(dest="rules_command", parser_class=_Parser, required=True)
    rl = rsub.add_parser("list", help="signatures, rules and fixture coverage")
    rl.add_argument("--rules", metavar="DIR", action="append", type=Path, help=RULES_HELP)
    rl.add_argument(
        "--format", choices=("console", "json"), default="console", help="a table (default) or JSON rows"
    )
    rl.set_defaults(func=cmd_rules_list)
    rs = rsub.add_parser("show", help="one rule in full")
    rs.add_argument("id", help="a signature id or alias (see: triage rules list)")
    rs.add_argument("--rules", metavar="DIR", action="append", type=Path, help=RULES_HELP)
    rs.set_defaults(func=cmd_rules_show)
    rlint = rsub.add_parser("lint", help="check rules for speed and precision")
    rlint.add_argument("--rules", metavar="DIR", action="append", type=Path, help=RULES_HELP)
    rlint.add_argument("--only", action="store_true", help="lint only the --rules folders")
    rlint.set_defaults(func=cmd_rules_lint)
    rexp = rsub.add_parser("export", help="print the rules' patterns for other tools")
    rexp.add_argument("--grep", action="store_true", help="as grep -E patterns, one per line")
    rexp.add_argument("--rules", metavar="DIR", action="append", type=Path, help=RULES_HELP)
    rexp.set_defaults(func=cmd_rules_export)

    for mod in PLUGINS:
        try:
            importlib.import_module(mod).register(sub)
        except ModuleNotFoundError as e:
            if not e.name or not mod.startswith(e.name):
                raise  # a plugin that exists but is broken is a bug, not a missing plugin
    return p


def add_output_options(p: argparse.ArgumentParser) -> None:
    """The options every report-printing command shares: format, gate, redaction, layout."""
    p.add_argument(
        "--format",
        "-f",
        choices=FORMATS,
        default="console",
        help="console (default), json (triage.report/1), markdown, sarif, junit, "
        "github annotations, or html (one self-contained page with charts; "
        "needs the html extra)",
    )
    p.add_argument(
        "--fail-on",
        choices=LEVELS,
        metavar="LEVEL",
        help="exit 1 when a diagnosis reaches this confidence (confirmed|likely|possible)",
    )
    p.add_argument(
        "--redact",
        nargs="?",
        const="secrets",
        choices=("secrets", "all"),
        help="mask tokens, keys and emails (all: also hosts, IPs, home paths)",
    )
    p.add_argument("--width", type=int, help="console width")
    p.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the console view (auto: when stdout is a terminal)",
    )
    p.add_argument("--verbose", "-v", action="store_true", help="all evidence, checks and docs")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report here instead of stdout")
    p.add_argument(
        "--open",
        action="store_true",
        help="with --format html: open the page in a browser (written to a "
        "temporary file unless -o is given)",
    )


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


PROGRESS_MIN_BYTES = 256 << 20


class _progress:
    """A progress bar on stderr for long scans, in an interactive console only."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.bar: Any = None
        if args.format != "console" or args.quick or not sys.stderr.isatty():
            return
        import os

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


def check_output(args: argparse.Namespace) -> None:
    """Refuse what cannot be written before any work is done: --open without html, or
    html without its plotting library (a one-line error, not a scan and a traceback)."""
    if getattr(args, "open", False) and args.format != "html":
        raise TriageError("--open goes with --format html")
    if args.format == "html":
        from triage.report.charts import available

        if not available():
            raise TriageError("--format html needs matplotlib: pip install 'triage[html]'")


def emit(report: object, args: argparse.Namespace) -> None:
    """Render a report in the chosen format to stdout or --output (--open: and show it)."""
    from triage.report import render_to_string

    check_output(args)
    text = render_to_string(
        report,
        args.format,
        width=args.width,
        color=args.color,  # type: ignore[arg-type]
        verbose=args.verbose,
        redact=args.redact,
    )
    output = args.output
    if getattr(args, "open", False) and not output:
        import tempfile

        fd, output = tempfile.mkstemp(prefix="triage-report-", suffix=".html")
        os.close(fd)
    if output:
        out = Path(output)
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as e:
            raise TriageError(f"{out}: cannot write ({e.strerror})") from None
        if getattr(args, "open", False):
            _open_in_browser(out)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def _open_in_browser(path: Path) -> None:
    import webbrowser

    # webbrowser honours $BROWSER; with no browser at all, say where the page is
    if not webbrowser.open(path.resolve().as_uri()):
        sys.stderr.write(f"triage: no browser to open; the report is {path}\n")


def fail_on_code(report: object, level: str | None) -> int:
    """Exit 1 when a cause (not a consequence) reaches `level`, else 0."""
    from triage.model import Confidence, Report

    assert isinstance(report, Report)
    if not level:
        return ExitCode.OK
    want = Confidence.parse(level)
    # a log that just stops (truncated-unknown) is a state, not a cause: a healthy
    # excerpt of a run still going must pass a gate, whatever the level
    hit = any(d.confidence >= want and d.role != "consequence" and not d.fallback for d in report.diagnoses)
    return ExitCode.FAIL_ON if hit else ExitCode.OK


def cmd_rules_list(args: argparse.Namespace) -> int:
    from triage.engine.catalog import coverage

    rows = coverage(args.rules)
    if args.format == "json":
        import json

        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    w_sig = max(len(r["signature"]) for r in rows)
    w_rule = max(len(r["rule"] or "MISSING") for r in rows)
    sys.stdout.write(f"{'signature':{w_sig}}  {'rule':{w_rule}}  fixtures  title\n")
    for row in rows:
        sys.stdout.write(
            f"{row['signature']:{w_sig}}  {row['rule'] or 'MISSING':{w_rule}}  "
            f"{row['fixtures']:>8}  {row['title'] or ''}\n"
        )
    from triage.engine.catalog import fixtures_dir

    if fixtures_dir() is None:
        missing = [r["signature"] for r in rows if r["canonical"] and not r["rule"]]
        sys.stdout.write(
            "\n(no fixtures/ folder here: fixture counts need a checkout of the "
            "project or your own fixtures/)\n"
        )
    else:
        missing = [r["signature"] for r in rows if r["canonical"] and (not r["rule"] or r["fixtures"] < 2)]
    if missing:
        sys.stdout.write(
            f"\n{len(missing)} canonical signature(s) lack a rule or two fixtures: {', '.join(missing)}\n"
        )
    return 0


def cmd_rules_show(args: argparse.Namespace) -> int:
    from triage.engine import get_rules

    for r in get_rules(args.rules):
        if r.id == args.id or args.id in r.aliases:
            sys.stdout.write(Path(r.path).read_text(encoding="utf-8"))
            return 0
    raise TriageError(f"no rule with id {args.id!r} (see: triage rules list)")


def cmd_rules_lint(args: argparse.Namespace) -> int:
    from triage.engine.lint import lint

    problems = lint(args.rules or [], include_default=not args.only)
    for p in problems:
        sys.stdout.write(p + "\n")
    if problems:
        sys.stderr.write(f"triage: {len(problems)} rule problem(s)\n")
        return ExitCode.FAIL_ON
    sys.stdout.write("rules ok\n")
    return 0


def cmd_rules_export(args: argparse.Namespace) -> int:
    from triage.engine import get_rules
    from triage.engine.lint import grep_patterns

    for pat in grep_patterns(get_rules(args.rules)):
        sys.stdout.write(pat + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]  # accepted anywhere on the line
    try:
        args = build_parser().parse_args(argv)
        if not getattr(args, "func", None):
            build_parser().print_help(sys.stderr)
            return ExitCode.USAGE
        return int(args.func(args))
    except TriageError as e:
        sys.stderr.write(e.one_line() + "\n")
        return int(e.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("triage: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # the one place a bug becomes exit 3
        if debug:
            traceback.print_exc()
        else:
            sys.stderr.write(
                f"triage: internal error: {type(e).__name__}: {e} (run with --debug for the traceback)\n"
            )
        return ExitCode.INTERNAL


def run() -> None:
    sys.exit(main())
