"""`triage watch [FILE] [--tmux TARGET] [--no-tui] [--capture FILE] [--on-diagnosis CMD]
[--stall-factor N] [--poll S]`."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from triage.cli.parser import add_rules_option
from triage.errors import TriageError


def register(sub: Any) -> None:
    """Add the `watch` subcommand to triage's subparsers."""
    w = sub.add_parser(
        "watch",
        help="watch a tmux pane or a growing log live: capture, diagnose, alert",
        description="Watch a training run live. With --tmux the pane's scrollback and every "
        "byte it prints from now on go to a capture file (kept when the pane "
        "dies); a FILE is followed across rotation and truncation.",
    )
    w.add_argument("file", nargs="?", metavar="FILE", help="a log file to follow")
    w.add_argument(
        "--tmux", metavar="TARGET", help="a tmux session, or session:window.pane, to capture and watch"
    )
    w.add_argument(
        "--tmux-socket",
        metavar="NAME|PATH",
        help="the tmux server's socket (tmux -L NAME, or -S PATH with a /)",
    )
    w.add_argument(
        "--no-tui", action="store_true", help="print JSON lines, one per event, and exit when the run ends"
    )
    w.add_argument(
        "--capture",
        metavar="FILE",
        help="with --tmux: where the capture goes (default: ~/.cache/triage/watch/)",
    )
    w.add_argument(
        "--on-diagnosis",
        metavar="CMD",
        help="run CMD in a shell for each new diagnosis, with its JSON on stdin",
    )
    _add_timing_options(w)
    w.add_argument(
        "--html",
        metavar="FILE",
        help="write the HTML report here when the run ends (default with --tmux "
        "and the html extra: beside the capture, as .html)",
    )
    w.add_argument("--no-snapshot", action="store_true", help="skip the evidence snapshot when the run ends")
    add_rules_option(w)
    from triage.history import add_options as add_history_options

    add_history_options(w)
    w.set_defaults(func=cmd_watch)


def _add_timing_options(w: Any) -> None:
    """--stall-factor, --min-stall and --poll: when a quiet run is a stall, how often to read."""
    w.add_argument(
        "--stall-factor",
        type=float,
        default=10.0,
        metavar="N",
        help="alert when no step line came for N times the usual interval (default 10)",
    )
    w.add_argument(
        "--min-stall",
        type=float,
        default=30.0,
        metavar="S",
        help="but never before S seconds without progress (default 30)",
    )
    w.add_argument(
        "--poll",
        type=float,
        default=0.2,
        metavar="S",
        help="seconds between reads of the capture (default 0.2)",
    )


def build_session(args: argparse.Namespace) -> Any:
    """A WatchSession for the parsed arguments (shared by the TUI and headless modes)."""
    from triage.engine import get_rules
    from triage.watch.session import WatchSession

    if bool(args.file) == bool(args.tmux):
        raise TriageError("watch: give a FILE to follow or --tmux TARGET (one of them)")
    if not args.poll > 0 or not args.stall_factor > 0 or args.min_stall < 0:
        raise TriageError("watch: --poll and --stall-factor must be positive")
    source = _source(args)
    session = WatchSession(
        source,
        rules=get_rules(args.rules),
        stall_factor=args.stall_factor,
        min_stall=args.min_stall,
        report_interval=min(args.poll, 0.25),
        status_interval=max(args.poll, 0.5),
        snapshot=not args.no_snapshot,
        html=html_path(args, source.capture),
    )
    session.history = watch_history(args)
    return session


def _source(args: argparse.Namespace) -> Any:
    """What to watch: a tmux pane (with its capture file) or a followed FILE."""
    from triage.watch.capture import default_capture_path
    from triage.watch.session import FileSource, TmuxSource

    if args.tmux:
        capture = Path(args.capture) if args.capture else default_capture_path(args.tmux)
        return TmuxSource(args.tmux, capture, socket=args.tmux_socket)
    if args.capture:
        raise TriageError("watch: --capture goes with --tmux (a FILE is its own capture)")
    return FileSource(Path(args.file))


def watch_history(args: argparse.Namespace) -> Any:
    """facts -> the History that records the watched run's final triage (None: off).
    The run is the tmux session (stable across relaunches), else the followed file."""
    from triage.history import enabled, for_args

    if not enabled(args.no_history):
        return None
    paths = [args.file] if args.file else []
    return lambda facts: for_args(args, paths, facts, command="watch", tmux=args.tmux)


def html_path(args: argparse.Namespace, capture: Path) -> Path | None:
    """Where the HTML report goes when the run ends: --html, else beside a tmux capture
    (triage's own file) when the html extra is installed; a followed FILE is the user's,
    so nothing is written beside it unasked."""
    from triage.report.charts import available

    if getattr(args, "html", None):
        if not available():
            raise TriageError("watch: --html needs matplotlib: pip install 'triage[html]'")
        return Path(args.html)
    if args.tmux and available():
        return capture.with_name(capture.name + ".html")
    return None


def _terminate(signum: int, frame: FrameType | None) -> None:
    # SIGTERM and SIGHUP end the watch like Ctrl-C: pipe stopped, options restored
    raise KeyboardInterrupt


def cmd_watch(args: argparse.Namespace) -> int:
    """Run the watch, headless or in the TUI."""
    session = build_session(args)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _terminate)
    headless = args.no_tui
    if not headless and not sys.stdout.isatty():
        sys.stderr.write("triage: stdout is not a terminal; printing JSON events (--no-tui)\n")
        headless = True
    if headless:
        from triage.watch.session import run_headless

        return run_headless(session, poll=args.poll, on_diagnosis=args.on_diagnosis)
    try:
        from triage.tui.app import run_app
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("textual"):
            raise TriageError("the TUI needs textual (pip install 'triage[tui]'); or use --no-tui") from None
        raise
    return run_app(session, poll=args.poll, on_diagnosis=args.on_diagnosis)
