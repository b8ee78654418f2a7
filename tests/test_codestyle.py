"""The tree is formatted, lint-clean and type-checked, as pyproject.toml configures.

Each check runs the tool the way a contributor would, from the repository root with no
arguments beyond the mode (`ruff format --check .`, `ruff check .`, `mypy`: mypy's
`files` in pyproject cover triage, dflash_runtime and tests), and prints the tool's
output when it fails. A check is skipped only where its tool is not installed (both are
in the `dev` extra).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(module: str, *args: str) -> None:
    """Run `python -m MODULE ARGS...` at the repository root; fail with its output
    unless it exits 0."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[dev]')")
    env = {**os.environ, "NO_COLOR": "1", "MYPY_FORCE_COLOR": "0"}
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    shown = " ".join([module, *args])
    assert proc.returncode == 0, f"`{shown}` exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"


def test_ruff_format_check() -> None:
    _run("ruff", "format", "--check", ".")


def test_ruff_check() -> None:
    _run("ruff", "check", ".")


def test_mypy() -> None:
    _run("mypy")
