"""The story's two hypotheses, reproduced on the real libraries and fixed (CI runs these)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

# The scenarios run the real libraries: without the runtime extra there is nothing to run.
pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("torch", "transformers", "accelerate")),
    reason="needs torch, transformers and accelerate (pip install -e '.[runtime]')",
)

KEYS = {"scenario", "expected", "reproduced", "diagnosed", "fixed", "log", "seconds", "exit_status"}


def _torch_has_session_flag() -> bool:
    """This interpreter's torch holds the compile-session flag (read from its files)."""
    from triage.repro.scenarios.fx_tracing_flag_race import torch_state

    return bool(torch_state(sys.executable)["session_flag"])


def test_fx_race_says_why_it_cannot_reproduce_on_a_torch_with_the_session_flag(repro):
    if not _torch_has_session_flag():
        pytest.skip("this torch lacks the compile-session flag: the scenario runs there")
    for extra in ((), ("--fix",)):
        code, out, err = repro("fx-tracing-flag-race", *extra)
        assert out is not None, err
        assert code == 0 and out["ok"] is True, out
        # Nothing was run and nothing is claimed: no substitute trigger.
        assert out["reproduced"] is None and out["fixed"] is None and out["exit_status"] is None
        assert "cannot reproduce on torch" in out["skipped"]
        assert "_compile_session_context" in out["skipped"] and "--python" in out["skipped"]


def test_fx_race_fixed_by_warming_every_shape_first(repro):
    if _torch_has_session_flag():
        pytest.skip("the compile-session flag closes the window on this torch (2.13)")
    code, out, err = repro("fx-tracing-flag-race", "--fix")
    assert out is not None, err
    assert code == 0, out
    assert out["reproduced"] is False and out["fixed"] is True and out["exit_status"] == 0
    assert "fx-tracing-flag-race" not in out["diagnosed"]
    assert any(t.startswith("done steps=6") for t in out["log_tail"])


def test_missing_accelerate_reproduced_diagnosed_and_recorded(repro, tmp_path):
    code, out, err = repro(
        "missing-accelerate", "--keep", str(tmp_path / "runs"), "--record", str(tmp_path / "fixtures")
    )
    assert out is not None, err
    assert code == 0, out
    assert out["reproduced"] is True
    assert out["exit_status"] == 1
    assert out["top"] == "missing-accelerate"
    assert "fx-tracing-flag-race" not in out["diagnosed"]
    log = Path(out["log"])
    text = log.read_text()
    # transformers' own check refused the device_map: accelerate was really invisible to it.
    assert "requires `accelerate`" in text or "requires Accelerate" in text
    assert "Target 0 on cpu..." in text  # the runtime got as far as loading its target
    # The recorded fixture passes `triage fixtures check`.
    made = list((tmp_path / "fixtures" / "missing-accelerate").glob("001-repro-missing-accelerate"))
    assert made, out["notes"]
    exp = tomllib.loads((made[0] / "expected.toml").read_text())
    assert "triage repro missing-accelerate" in exp["source"] and "torch" in exp["source"]
    assert exp["diagnoses"][0]["signature"] == "missing-accelerate"
    assert (made[0] / "input.log").read_bytes() == log.read_bytes()
    chk = subprocess.run(
        [sys.executable, "-m", "triage", "fixtures", "check", str(tmp_path / "fixtures")],
        capture_output=True,
        text=True,
    )
    assert chk.returncode == 0, chk.stdout + chk.stderr


def test_missing_accelerate_fixed_with_accelerate(repro):
    code, out, err = repro("missing-accelerate", "--fix")
    assert out is not None, err
    assert code == 0, out
    assert out["reproduced"] is False
    assert out["fixed"] is True
    assert out["exit_status"] == 0
    assert any(t.startswith("done steps=2") for t in out["log_tail"])
