"""Printing a report: the options every report-printing command shares (format, gate,
redaction, layout), writing the chosen view to stdout or a file, and the --fail-on exit."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from triage.errors import ExitCode, TriageError
from triage.report import FORMATS, format_help

LEVELS = ("confirmed", "likely", "possible")


def add_output_options(p: argparse.ArgumentParser) -> None:
    """The options every report-printing command shares: format, gate, redaction, layout."""
    p.add_argument("--format", "-f", choices=tuple(FORMATS), default="console", help=format_help())
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


def check_output(args: argparse.Namespace) -> None:
    """Refuse what cannot be written before any work is done: --open without html, or
    html without its plotting library (a one-line error, not a scan and a traceback)."""
    if getattr(args, "open", False) and args.format != "html":
        raise TriageError("--open goes with --format html")
    spec = FORMATS.get(args.format)
    if spec is not None and spec.extra == "html":
        from triage.report.charts import available

        if not available():
            raise TriageError(f"--format {args.format} needs matplotlib: pip install 'triage[html]'")


def emit(report: object, args: argparse.Namespace) -> None:
    """Render a report in the chosen format to stdout or --output (--open: and show it)."""
    from triage.report import render_to_string

    check_output(args)
    text = render_to_string(
        report,  # type: ignore[arg-type]
        args.format,
        width=args.width,
        color=args.color,
        verbose=args.verbose,
        redact=args.redact,
    )
    output = args.output
    if getattr(args, "open", False) and not output:
        import tempfile

        fd, output = tempfile.mkstemp(prefix="triage-report-", suffix=".html")
        os.close(fd)
    if output:
        _write(Path(output), text, opening=getattr(args, "open", False))
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def _write(out: Path, text: str, *, opening: bool) -> None:
    """Write the report to `out` (and, with --open, show it in a browser)."""
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as e:
        raise TriageError(f"{out}: cannot write ({e.strerror})") from None
    if opening:
        _open_in_browser(out)


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
