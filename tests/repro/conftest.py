"""Helpers for the repro tests: run `triage repro ...` as users do, in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: runs a real scenario end to end (10-60 s each)")


def triage_repro(*args: str, timeout: float = 240) -> tuple[int, dict[str, Any] | None, str]:
    """(exit code, parsed JSON stdout or None, stderr) of `python -m triage repro ARGS`."""
    p = subprocess.run(
        [sys.executable, "-m", "triage", "repro", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    try:
        data = json.loads(p.stdout) if p.stdout.strip() else None
    except json.JSONDecodeError:
        data = None
    return p.returncode, data, p.stderr


@pytest.fixture
def repro():
    return triage_repro
