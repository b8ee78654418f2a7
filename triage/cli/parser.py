"""The argument parser every triage command shares: usage errors are TriageErrors (one
line on stderr, exit 2), never argparse's own exit."""

from __future__ import annotations

import argparse
from pathlib import Path

from triage.errors import TriageError

RULES_HELP = "an extra folder of rules (repeatable)"


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are raised as TriageError, so `main` reports them
    like every other input error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise TriageError(f"{self.prog}: {message}")


def add_rules_option(p: argparse.ArgumentParser) -> None:
    """`--rules DIR` (repeatable): extra rule folders on top of the shipped rules."""
    p.add_argument("--rules", metavar="DIR", action="append", type=Path, help=RULES_HELP)
