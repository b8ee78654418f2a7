"""`triage history --format html -o FILE`: a run's past crashes on one page (issue 19's
history view), through the real CLI and the default SQLite store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

CUT = "Loading 5 target models...\nTarget 0 on cuda:0...\nT"
CRASH = (
    'step 1 loss 2.0\nTraceback (most recent call last):\n  File "t.py", line 1, in <module>\n'
    "ValueError: bad config\n"
)


def triage(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "triage", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_history_page_holds_every_crash_of_the_run(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(CUT)
    assert triage("logs", str(log), "--run", "story", cwd=tmp_path).returncode == 0
    log.write_text(CRASH)
    assert triage("logs", str(log), "--run", "story", cwd=tmp_path).returncode == 0
    page = tmp_path / "history.html"
    r = triage("history", "--run", "story", "--format", "html", "-o", str(page), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    text = page.read_text()
    # newest first: the ValueError crash, then the cut-off one with its hypotheses
    assert text.index("ValueError: bad config") < text.index("cut-mid-line in model-loading")
    assert text.count('<article id="crash-') == 2
    # the page is not overwritten, and html needs a file to write
    again = triage("history", "--run", "story", "--format", "html", "-o", str(page), cwd=tmp_path)
    assert again.returncode == 2 and "not overwritten" in again.stderr
    no_out = triage("history", "--format", "html", cwd=tmp_path)
    assert no_out.returncode == 2 and len(no_out.stderr.strip().splitlines()) == 1
