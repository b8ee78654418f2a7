"""Deterministic console rendering (golden file) of a hand-built Report."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from triage.model import Confidence, Diagnosis, EndState, Evidence, Report, RuledOut, SourceInfo
from triage.report import console

GOLDEN = Path(__file__).parent / "data" / "golden" / "console_story.txt"
UPDATE_GOLDEN = "TRIAGE_UPDATE_GOLDEN"  # the one refresh variable (tests/conftest.py)


def story_report() -> Report:
    ev = Evidence(
        text="RuntimeError: Detected that you are using FX to symbolically trace a "
        "dynamo-optimized function. This is not supported at the moment.",
        source="train.log",
        line=41,
        rank=None,
        context=(
            '  File "/venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py", line 745, in _fn',
        ),
    )
    top = Diagnosis(
        signature="fx-tracing-flag-race",
        rule="compile/fx-tracing-flag-race",
        title="torch.compile called from several threads while another traces",
        confidence=Confidence.CONFIRMED,
        score=0.92,
        role="root-cause",
        summary="A compiled function was called while another thread traced.",
        evidence=(ev,),
        checks=("grep -n 'symbolically trace' train.log",),
        remedies=("Compile and warm up every shape before the threads start.",),
        docs=("https://pytorch.org/docs/stable/torch.compiler_faq.html",),
    )
    return Report(
        sources=(SourceInfo("train.log", 42, (), False),),
        end_state=EndState("traceback", "model-loading", 42, "train.log", "..."),
        diagnoses=(top,),
        ruled_out=(RuledOut("missing-accelerate", "accelerate 1.13.0 imports in /root/venv/bin/python"),),
        notes=("stderr of the drafter threads was appended from the capture file.",),
    )


def render() -> str:
    buf = io.StringIO()
    console.render(story_report(), buf, width=100, color=False)
    return buf.getvalue()


def test_console_golden(golden):
    golden(GOLDEN, render())


def test_a_missing_golden_file_fails_and_is_not_written(golden, tmp_path: Path, monkeypatch):
    """A fresh clone without a golden file must go red, not write what it got and pass."""
    monkeypatch.delenv(UPDATE_GOLDEN, raising=False)
    path = tmp_path / "golden" / "missing.txt"
    with pytest.raises(pytest.fail.Exception, match=f"missing: run with {UPDATE_GOLDEN}=1"):
        golden(path, render())
    assert not path.exists()


def test_the_refresh_variable_rewrites_a_golden_file(golden, tmp_path: Path, monkeypatch):
    monkeypatch.setenv(UPDATE_GOLDEN, "1")
    path = tmp_path / "golden" / "new.txt"
    golden(path, "fresh\n")
    assert path.read_text() == "fresh\n"


def test_console_reads_verdict_first():
    lines = render().splitlines()
    assert lines[0].startswith("triage  train.log")
    assert "torch.compile called from several threads" in lines[2]
    body = "\n".join(lines)
    assert body.index("Diagnosis") < body.index("Ruled out") < body.index("note:")
    assert "line 41" in body and "missing-accelerate: accelerate 1.13.0" in body
