"""The `triage logs` command end to end: JSON contract, exit codes, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from triage.cli import main

ROOT = Path(__file__).resolve().parent.parent
CASCADE = ROOT / "fixtures" / "cuda-oom" / "001-rank3-cascade-8ranks" / "input.log"


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "triage", *args],
        input=stdin and stdin.decode("latin-1"),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "100"},
    )


def test_cascade_json(validate_report):
    out = run("logs", str(CASCADE), "--format", "json")
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    validate_report(rep)
    first = rep["diagnoses"][0]
    assert first["signature"] == "cuda-oom" and first["role"] == "root-cause"
    assert any(e["rank"] == 3 for e in first["evidence"])
    timeouts = [d for d in rep["diagnoses"] if d["signature"] == "nccl-timeout"]
    assert timeouts and all(d["role"] == "consequence" and d["explained_by"] == "cuda-oom" for d in timeouts)
    assert rep["sources"][0]["ranks"] == list(range(8))


def test_cut_off_log_is_reported_cut_off_and_nothing_confirmed(tmp_path: Path, validate_report):
    p = tmp_path / "train.log"
    p.write_bytes(b"Loading 5 target models...\nTarget 0 on cuda:0...\nT")
    out = run("logs", str(p), "--format", "json")
    rep = json.loads(out.stdout)
    validate_report(rep)
    assert rep["end_state"]["kind"] == "cut-mid-line"
    assert rep["end_state"]["last_phase"] == "model-loading"
    assert rep["sources"][0]["truncated"] is True
    assert rep["diagnoses"], "hypotheses are offered"
    assert all(d["confidence"] != "confirmed" for d in rep["diagnoses"])
    assert any("stderr" in n for n in rep["notes"])


def test_missing_file_one_line_exit_2():
    out = run("logs", "/nonexistent/train.log")
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert "no such file" in out.stderr


def test_binary_input_gets_a_result(tmp_path: Path, validate_report):
    p = tmp_path / "core.bin"
    p.write_bytes(os.urandom(200_000))
    out = run("logs", str(p), "--format", "json")
    assert out.returncode in (0, 2), out.stderr
    assert "Traceback" not in out.stderr
    if out.returncode == 0:
        validate_report(json.loads(out.stdout))


def test_stdin_and_fail_on(validate_report):
    data = CASCADE.read_bytes()
    out = run("logs", "-", "--format", "json", "--fail-on", "likely", stdin=data)
    assert out.returncode == 1
    validate_report(json.loads(out.stdout))
    out = run("logs", "-", "--fail-on", "confirmed", stdin=b"step 1 loss 2.0\nTraining completed.\n")
    assert out.returncode == 0


def test_usage_error_exit_2(capsys):
    assert main(["logs"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("triage: error:") and err.count("\n") == 1


def test_bad_rules_folder_names_file_and_key(tmp_path: Path, capsys):
    d = tmp_path / "myrules"
    d.mkdir()
    (d / "bad-rule.toml").write_text('id = "bad-rule"\ntitle = "x"\ncategory = "x"\nwat = 1\n')
    assert main(["logs", str(CASCADE), "--rules", str(d)]) == 2
    err = capsys.readouterr().err
    assert "bad-rule.toml" in err and "wat" in err


def test_output_file_not_clobbering_stdout(tmp_path: Path):
    out_file = tmp_path / "r.json"
    assert main(["logs", str(CASCADE), "--format", "json", "-o", str(out_file)]) == 0
    assert json.loads(out_file.read_text())["schema"] == "triage.report/1"


@pytest.mark.parametrize("cmd", [["rules", "list"], ["rules", "show", "cuda-oom"], ["rules", "lint"]])
def test_rules_commands(cmd):
    out = run(*cmd)
    assert out.returncode == 0, out.stderr + out.stdout
    assert out.stdout.strip()
