"""Every other CPU scenario, failing and fixed, end to end (marked slow: 10-60 s each)."""

from __future__ import annotations

import importlib.util

import pytest

# The scenarios run the real libraries: without the runtime extra there is nothing to run.
pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("torch", "transformers", "accelerate")),
    reason="needs torch, transformers and accelerate (pip install -e '.[runtime]')",
)

OTHER_CPU = [
    "host-oom-killed",
    "nan-loss",
    "dataloader-worker-crash",
    "truncated-unknown",
    "nccl-timeout",
    "checkpoint-save-failed",
]


@pytest.mark.slow
@pytest.mark.parametrize("name", OTHER_CPU)
def test_reproduced_and_diagnosed(repro, name):
    code, out, err = repro(name, timeout=300)
    assert out is not None, err
    assert out["reproduced"] is True, out
    assert out["top"] == name, out
    assert code == 0
    assert out["seconds"] < 120


@pytest.mark.slow
@pytest.mark.parametrize("name", OTHER_CPU)
def test_fixed(repro, name):
    code, out, err = repro(name, "--fix", timeout=300)
    assert out is not None, err
    assert out["fixed"] is True and out["reproduced"] is False, out
    assert out["exit_status"] == 0
    assert name not in out["diagnosed"]
    assert code == 0


@pytest.mark.slow
def test_host_oom_kill_came_from_the_watchdog_within_its_limit(repro):
    _code, out, _ = repro("host-oom-killed", timeout=300)
    assert out["killed_by"] == "memory-watchdog" and out["signal"] == "SIGKILL"
    assert out["peak_rss_mib"] < 640 + 200  # the child never got far past its limit


@pytest.mark.slow
def test_nccl_timeout_reports_whether_the_stalled_rank_is_named(repro):
    _code, out, _ = repro("nccl-timeout", timeout=300)
    assert out["stalled_rank"] == 1
    assert isinstance(out["stalled_rank_named"], bool)
    if not out["stalled_rank_named"]:
        assert any("stalled rank" in n for n in out["notes"])
