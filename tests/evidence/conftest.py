from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _evidence_data import STORY


@pytest.fixture
def story_log(tmp_path: Path) -> Path:
    p = tmp_path / "train.log"
    p.write_bytes(STORY)
    return p


@pytest.fixture
def triage_json(capsys):
    """Run `triage logs ... --format json` in-process; return the parsed report."""
    from triage.cli import main

    def run(*args: str) -> dict[str, Any]:
        capsys.readouterr()
        rc = main(["logs", *args, "--format", "json"])
        out = capsys.readouterr()
        assert rc == 0, out.err
        return json.loads(out.out)

    return run
