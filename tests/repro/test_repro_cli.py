"""`triage repro --list`, bad names, GPU scenarios on CPU, and the layering of repro."""

from __future__ import annotations

import subprocess
import sys


def test_list_names_at_least_six_cpu_scenarios(repro):
    code, rows, err = repro("--list", "--json")
    assert code == 0, err
    cpu = [r for r in rows if r["device"] == "cpu"]
    assert len(cpu) >= 6
    names = {r["name"] for r in rows}
    assert {
        "fx-tracing-flag-race",
        "missing-accelerate",
        "host-oom-killed",
        "nan-loss",
        "dataloader-worker-crash",
        "truncated-unknown",
        "nccl-timeout",
        "checkpoint-save-failed",
        "cuda-oom",
    } <= names
    for r in rows:
        assert r["expected"] and r["summary"] and r["fix"] and r["failure"]


def test_list_console(repro):
    p = subprocess.run(
        [sys.executable, "-m", "triage", "repro", "--list", "--format", "console"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0
    assert "fx-tracing-flag-race" in p.stdout and "cuda" in p.stdout


def test_unknown_scenario_is_one_line_exit_2(repro):
    code, out, err = repro("no-such-scenario")
    assert code == 2
    assert out is None
    assert err.count("\n") == 1 and "unknown scenario" in err and "Traceback" not in err


def test_no_name_is_usage_error(repro):
    code, _, err = repro()
    assert code == 2 and "Traceback" not in err


def test_gpu_scenario_skipped_on_cpu(repro):
    code, out, err = repro("cuda-oom")
    assert code == 0, err
    assert out["skipped"] and "--device cuda" in out["skipped"]
    assert out["reproduced"] is None and out["exit_status"] is None


def test_repro_imports_no_heavy_library():
    code = (
        "import sys\n"
        "from triage.repro import scenarios, runner\n"
        "import triage.cli.repro\n"
        "assert len(scenarios.all_scenarios()) >= 8\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'transformers', 'dflash_runtime', 'accelerate')]\n"
        "print(','.join(bad))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == ""
