"""bench/gpu_check.sh runs on the GPU machine as it is: its dry run, on CPU, shows the
plan fits the device budget and that the tree runs from PYTHONPATH, installing and
fetching nothing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "gpu_check.sh"
# What would install or fetch: each is shadowed on PATH by a shim that records the call.
FETCHERS = ("pip", "pip3", "uv", "conda", "apt-get", "apt", "curl", "wget", "git")


def test_dry_run_fits_the_budget_and_fetches_nothing(tmp_path: Path) -> None:
    shims, calls = tmp_path / "bin", tmp_path / "calls.txt"
    shims.mkdir()
    for name in FETCHERS:
        shim = shims / name
        shim.write_text(f'#!/bin/sh\necho {name} "$@" >> {calls}\nexit 1\n')
        shim.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}",
        "PYTHON": sys.executable,
        "OUT": str(tmp_path / "out"),
    }
    env.pop("PYTHONPATH", None)  # the script itself must put the tree there
    p = subprocess.run(
        ["bash", str(SCRIPT), "--dry-run"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert not calls.exists(), calls.read_text()
    assert not (tmp_path / "out").exists()  # a dry run writes nothing
    steps = re.findall(r"^step (\S+) +(\d+)s ", p.stdout, re.M)
    assert [s for s, _ in steps] == ["machine", "snapshot", "cuda-oom", "race", "race-fix", "runtime"]
    m = re.search(
        r"^plan: 6 steps, (\d+)s of 480s with (\d+)s kill grace each, (\d+) of 8 files", p.stdout, re.M
    )
    assert m, p.stdout
    total, grace, files = (int(x) for x in m.groups())
    assert total == sum(int(s) + grace for _, s in steps) and total <= 480 and files <= 8


def test_script_installs_nothing_and_kills_whole_groups() -> None:
    text = SCRIPT.read_text()
    code = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
    for word in ("pip", "venv", "install", "curl", "wget", "http"):
        assert word not in code, word
    assert "setsid" in code and 'kill -KILL -- "-$pid"' in code


def test_dry_run_rejects_an_unknown_argument() -> None:
    p = subprocess.run(["bash", str(SCRIPT), "--bogus"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "usage" in p.stderr
