"""`triage snapshot [-o FILE] [--python PATH] [--tmux TARGET]`: write an evidence snapshot
(the collection itself is triage.evidence.collect, a loop over the sources listed in
triage/evidence/registry.py)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from triage.errors import ExitCode, TriageError


def register(sub: Any) -> None:
    """Add the `snapshot` subcommand to triage's subparsers."""
    sp = sub.add_parser(
        "snapshot",
        help="record the machine's and the run's interpreter's state as JSON",
        description="Record an evidence snapshot (triage.snapshot/1): the run's interpreter "
        "(packages, torch build), inductor cache, GPUs (NVML), kernel log (Xid, "
        "OOM killer), a tmux pane. Parts that cannot be read are recorded as "
        "unknown with the reason. Use it with: triage logs LOG --evidence FILE",
    )
    sp.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    sp.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    sp.add_argument(
        "--python", metavar="PATH", help="the training run's interpreter or venv folder (default: this one)"
    )
    sp.add_argument("--tmux", metavar="TARGET", help="also record this tmux pane's state")
    sp.add_argument("--no-kernel", action="store_true", help="do not read the kernel log")
    sp.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="seconds the interpreter probe may take (default: 120)",
    )
    sp.set_defaults(func=cmd_snapshot)


def check_python(python: str | None) -> None:
    """A --python that names nothing is the user's typo: say so instead of recording it."""
    if not python:
        return
    from triage.evidence.collect import resolve_python

    exe = resolve_python(python)
    if not os.path.exists(exe):
        raise TriageError(f"--python {python}: no such interpreter or venv folder")
    if not os.access(exe, os.X_OK):
        raise TriageError(f"--python {python}: {exe} is not executable")


def cmd_snapshot(args: argparse.Namespace) -> int:
    from triage.evidence.collect import collect

    check_python(args.python)
    out = Path(args.output) if args.output else None
    if out is not None:
        if out.exists() and not args.force:
            raise TriageError(f"{out}: already exists (use --force to overwrite)")
        if not out.parent.is_dir():
            raise TriageError(f"{out.parent}: no such folder")
    if args.timeout <= 0:
        raise TriageError("--timeout must be positive")
    snap = collect(
        python=args.python, tmux_target=args.tmux, probe_timeout=args.timeout, kernel=not args.no_kernel
    )
    text = json.dumps(snap, indent=2, ensure_ascii=False, default=str) + "\n"
    if out is None:
        sys.stdout.write(text)
        return ExitCode.OK
    try:
        # "x" refuses to clobber a file created since the check above
        with open(out, "w" if args.force else "x", encoding="utf-8") as f:
            f.write(text)
    except FileExistsError:
        raise TriageError(f"{out}: already exists (use --force to overwrite)") from None
    except OSError as e:
        raise TriageError(f"{out}: cannot write ({e.strerror})") from None
    sys.stderr.write(
        f"triage: snapshot written to {out} "
        f"({_summary(snap)}); use it with: triage logs LOG --evidence {out}\n"
    )
    return ExitCode.OK


def _summary(snap: dict[str, Any]) -> str:
    """What was readable: 'python 3.11.7, 18 packages, GPUs unknown, kernel log readable'."""
    parts = []
    py = snap.get("python")
    parts.append(
        f"python {py.get('version')}" if isinstance(py, dict) and "version" in py else "python unknown"
    )
    g = snap.get("gpus")
    devs = g.get("devices") if isinstance(g, dict) else None
    parts.append(f"{len(devs)} GPUs" if isinstance(devs, list) else "GPUs unknown")
    k = snap.get("kernel")
    parts.append(
        "kernel log readable" if isinstance(k, dict) and k.get("readable") else "kernel log unreadable"
    )
    return ", ".join(parts)
