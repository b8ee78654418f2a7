"""Paths and loaders shared by the evidence tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = ROOT / "tests" / "data" / "snapshots"
FIXTURES = ROOT / "fixtures"
STORY = b"Loading 5 target models...\nTarget 0 on cuda:0...\nT"


def snapshot(name: str) -> dict[str, Any]:
    """A recorded (composed) snapshot from tests/data/snapshots."""
    return json.loads((SNAPSHOTS / f"{name}.json").read_text(encoding="utf-8"))
