"""Command line: `triage logs`, `triage rules`, `triage snapshot`, `triage fixtures`,
`triage watch`, `triage repro`, `triage history`.

One module per subcommand in this package, each with `register(subparsers)`; they are
listed once, in `SUBCOMMANDS`, in the order `triage --help` shows them. Only argument
parsing and command glue live here: the work is done by the library packages, imported
inside the command functions so that `triage --help` stays fast and the core never
needs rich or textual.

stdout is data; errors are one line on stderr. Exit codes: 0 ran, 1 --fail-on reached
(or fixtures regressed), 2 usage or input error, 3 internal error (--debug shows it).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType

from triage import __version__
from triage.cli import fixtures, history, logs, repro, rules, snapshot, watch
from triage.cli.output import LEVELS, add_output_options, check_output, emit, fail_on_code
from triage.cli.parser import RULES_HELP, Parser
from triage.errors import ExitCode, TriageError
from triage.native import status as native_status
from triage.report import FORMATS

# The subcommands, in the order `triage --help` lists them.
SUBCOMMANDS: tuple[ModuleType, ...] = (logs, rules, snapshot, fixtures, watch, repro, history)

__all__ = [
    "FORMATS",
    "LEVELS",
    "RULES_HELP",
    "SUBCOMMANDS",
    "add_output_options",
    "build_parser",
    "check_output",
    "emit",
    "fail_on_code",
    "main",
    "run",
]


def build_parser() -> argparse.ArgumentParser:
    """triage's parser, with every subcommand registered."""
    p = Parser(prog="triage", description="Crash triage for ML training logs.")
    p.add_argument("--version", action="version", version=f"triage {__version__} ({native_status()})")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = p.add_subparsers(dest="command", parser_class=Parser)
    for command in SUBCOMMANDS:
        command.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line; the exit code (never raises, except SystemExit from --help)."""
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
    """The console script's entry point."""
    sys.exit(main())
