"""Checks and remedies run as printed, and a log with no failure in it reads so.

A check names the real log file(s), the rank and the interpreter when the report knows
them; what no report can know is an obvious `<placeholder>`; each check says what its
output means. A log that just ends while training is not a crash: the console says no
failure is in it, `--fail-on possible` passes, and the JSON keeps `truncated-unknown`.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from triage.cli import main
from triage.engine import analyze, analyze_text, get_rules
from triage.model import Report
from triage.report import console

# What a user cannot run as printed: a file that is not theirs, a glob of files that may
# not exist, a made-up interpreter path, an elided command line.
UNRUNNABLE = (
    re.compile(r"\btrain\.log\b"),
    re.compile(r"rank\*\.log"),
    re.compile(r"node\*\.log"),
    re.compile(r"/path/to/"),
    re.compile(r"\btorchrun \.\.\."),
    re.compile(r"\bpython train\.py\b"),
    re.compile(r"\{(?:log|logs|python|rank|fact:[^}]*|match:[^}]*)\}"),  # left unfilled
)
LOG_NAME = "runs/job 7/stdout.txt"  # a space: the path must come out shell-quoted
HEALTHY = (
    "epoch 1\n"
    "step 100 loss 2.3100 lr 1e-4 tok/s 21000\n"
    "step 101 loss 2.3000 lr 1e-4 tok/s 21010\n"
    "step 102 loss 2.2900 lr 1e-4 tok/s 21005\n"
)
STORY = "Loading 5 target models...\nTarget 0 on cuda:0...\nT"
OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
    "total capacity of 79.19 GiB of which 1.02 GiB is free."
)


def _reports() -> list[tuple[str, Report]]:
    """Every rule's firing examples through the whole pipeline, under an unusual name."""
    out = []
    for rule in get_rules():
        for i, text in enumerate(rule.fire):
            out.append((f"{rule.id}[{i}]", analyze_text(text, name=LOG_NAME)))
    return out


REPORTS = _reports()


@pytest.mark.parametrize("case,report", REPORTS, ids=[c for c, _ in REPORTS])
def test_no_check_or_fix_is_unrunnable(case: str, report: Report):
    for d in report.diagnoses:
        for text in (*d.checks, *d.remedies):
            for bad in UNRUNNABLE:
                assert not bad.search(text), f"{case}: {d.signature}: {text!r} has {bad.pattern}"


# Rules whose checks read the log itself: each must name the file it was given.
READS_THE_LOG = (
    "cuda-oom",
    "nan-loss",
    "torchrun-child-failed",
    "killed-by-signal",
    "device-side-assert",
    "nccl-error",
    "nccl-timeout",
    "fx-tracing-flag-race",
    "truncated-unknown",
    "dataloader-worker-crash",
    "rendezvous-failure",
)


@pytest.mark.parametrize("case,report", REPORTS, ids=[c for c, _ in REPORTS])
def test_log_checks_name_the_real_file(case: str, report: Report):
    rules = {r.id: r for r in get_rules()}
    for d in report.diagnoses:
        if d.signature in READS_THE_LOG:
            assert any("'runs/job 7/stdout.txt'" in c for c in d.checks), f"{case}: {d.checks}"
        for raw, c in zip(rules[d.signature].checks, d.checks, strict=True):
            if "{log}" in raw or "{logs}" in raw:
                assert "'runs/job 7/stdout.txt'" in c, f"{case}: {c!r}"


def test_every_check_says_what_its_output_means():
    for rule in get_rules():
        for c in rule.checks:
            cmd, sep, meaning = c.partition("   # ")
            assert sep and cmd.strip() and len(meaning.split()) >= 3, f"{rule.id}: {c!r}"


def test_remedies_in_checks_moved_to_fixes():
    """Changing the training script is a fix to try, not a check to run."""
    for rule in get_rules():
        for c in rule.checks:
            assert "set_detect_anomaly" not in c and "_record_memory_history" not in c, rule.id
    by_id = {r.id: r for r in get_rules()}
    assert any("set_detect_anomaly(True)" in x for x in by_id["nan-loss"].remedies)
    assert any("_record_memory_history(" in x for x in by_id["cuda-oom"].remedies)


def test_check_names_the_file_the_evidence_is_in(tmp_path: Path):
    logs = tmp_path / "logs"
    logs.mkdir()
    for r in range(4):
        (logs / f"worker-{r}.out").write_text(f"step 10 loss 2.0\n{OOM if r == 2 else ''}\n")
    rep = analyze([str(logs)])
    oom = next(d for d in rep.diagnoses if d.signature == "cuda-oom")
    grep = next(c for c in oom.checks if "Tried to allocate" in c)
    assert str(logs / "worker-2.out") in grep
    assert "worker-0.out" not in grep


def test_check_names_the_rank_at_fault():
    cascade = (
        Path(__file__).resolve().parent.parent
        / "fixtures"
        / "cuda-oom"
        / "001-rank3-cascade-8ranks"
        / "input.log"
    )
    oom = next(d for d in analyze([str(cascade)]).diagnoses if d.signature == "cuda-oom")
    assert any("in rank 3's environment" in c for c in oom.checks), oom.checks
    alone = next(d for d in analyze_text(OOM).diagnoses if d.signature == "cuda-oom")
    assert any("in each rank's environment" in c for c in alone.checks), alone.checks


def test_many_rank_files_read_as_their_folder_glob(tmp_path: Path):
    logs = tmp_path / "logs"
    logs.mkdir()
    for r in range(12):
        (logs / f"rank{r}.log").write_text(
            "step 10 loss 2.0\n"
            "Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for "
            "600000 milliseconds before timing out.\n"
        )
    rep = analyze([str(logs)])
    d = next(x for x in rep.diagnoses if x.signature == "nccl-timeout")
    assert any(f"{logs}/*.log" in c for c in d.checks), d.checks


def test_compressed_log_is_read_through_a_decompressor(tmp_path: Path):
    p = tmp_path / "run.log.gz"
    p.write_bytes(gzip.compress(f"step 1 loss 2.0\n{OOM}\n".encode()))
    rep = analyze([str(p)])
    grep = next(c for d in rep.diagnoses for c in d.checks if "Tried to allocate" in c)
    assert f"<(gzip -dc {p})" in grep


def test_stdin_is_named_as_a_placeholder():
    """stdin is gone once read: a check cannot grep it, so it asks for the file."""
    p = subprocess.run(
        [sys.executable, "-m", "triage", "logs", "-", "--format", "json"],
        input=f"{OOM}\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    rep = json.loads(p.stdout)
    grep = next(c for d in rep["diagnoses"] for c in d["checks"] if "Tried to allocate" in c)
    assert "<your log file>" in grep and "'-'" not in grep and "<stdin>" not in grep


def test_interpreter_comes_from_torchrun_then_from_the_snapshot():
    log = (
        "Traceback (most recent call last):\n"
        '  File "/work/train.py", line 3, in <module>\n'
        "    import wandb\n"
        "ModuleNotFoundError: No module named 'wandb'\n"
        "torch.distributed.elastic.multiprocessing.api:[ERROR] failed (exitcode: 1) "
        "local_rank: 0 (pid: 4242) of binary: /opt/envs/run/bin/python3\n"
    )
    d = next(x for x in analyze_text(log).diagnoses if x.signature == "missing-module")
    assert d.checks[0].startswith('/opt/envs/run/bin/python3 -c "import wandb;')
    snap = analyze_text(log, facts={"python.executable": "/root/venv/bin/python"})
    d = next(x for x in snap.diagnoses if x.signature == "missing-module")
    assert d.checks[0].startswith("/root/venv/bin/python -c")


def _console(rep: Report) -> str:
    buf = io.StringIO()
    console.render(rep, buf, width=100, color=False)
    return buf.getvalue()


def test_healthy_excerpt_says_no_failure_and_how_to_tell(tmp_path: Path):
    p = tmp_path / "excerpt.log"
    p.write_text(HEALTHY)
    text = _console(analyze([str(p)]))
    assert "Not proven" not in text and "Most likely" not in text
    assert "No failure is in this log" in text
    assert "ends while training (still running, or cut off)" in text
    assert "Possible causes" not in text and "Diagnosis" not in text
    assert "What would tell" in text
    assert str(p) in text  # "is it still growing?" names the file
    assert "If the run is gone" in text  # nothing says that the run died


def test_healthy_excerpt_passes_fail_on_possible_and_keeps_json(tmp_path: Path, capsys):
    p = tmp_path / "excerpt.log"
    p.write_text(HEALTHY)
    assert main(["logs", str(p), "--fail-on", "possible"]) == 0
    capsys.readouterr()
    assert main(["logs", str(p), "--format", "json", "--fail-on", "possible"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert [d["signature"] for d in rep["diagnoses"]] == ["truncated-unknown"]


def test_cut_off_log_still_offers_hypotheses(tmp_path: Path, capsys):
    p = tmp_path / "story.log"
    p.write_text(STORY)
    text = _console(analyze([str(p)]))
    assert "Possible causes" in text and "missing-accelerate" in text
    assert "host-oom-killed" in text
    # the honest state is said, not ranked as cause number 1
    assert not re.search(r"^\d+ truncated-unknown", text, re.M)
    assert "No failure is in this log" not in text
    assert "No error is in this log" in text
    assert main(["logs", str(p), "--fail-on", "possible"]) == 1
    capsys.readouterr()


def test_one_line_is_singular(tmp_path: Path):
    p = tmp_path / "one.log"
    p.write_text(f"{OOM}\n")
    text = _console(analyze([str(p)]))
    assert "(1 line;" in text and "1 lines" not in text
    from triage.report.common import describe_log

    assert describe_log(analyze([str(p)])).startswith("1 line;")
