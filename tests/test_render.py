"""Deterministic console rendering (golden file) of a hand-built Report."""

from __future__ import annotations

import io
import os
from pathlib import Path

from triage.model import Confidence, Diagnosis, EndState, Evidence, Report, RuledOut, SourceInfo
from triage.report import console

GOLDEN = Path(__file__).parent / "data" / "golden" / "console_story.txt"


def story_report() -> Report:
    ev = Evidence(text="RuntimeError: Detected that you are using FX to symbolically trace a "
                  "dynamo-optimized function. This is not supported at the moment.",
                  source="train.log", line=41, rank=None,
                  context=("  File \"/venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py\", line 745, in _fn",))
    top = Diagnosis(signature="fx-tracing-flag-race", rule="compile/fx-tracing-flag-race",
                    title="torch.compile called from several threads while another traces",
                    confidence=Confidence.CONFIRMED, score=0.92, role="root-cause",
                    summary="A compiled function was called while another thread traced.",
                    evidence=(ev,), checks=("grep -n 'symbolically trace' train.log",),
                    remedies=("Compile and warm up every shape before the threads start.",),
                    docs=("https://pytorch.org/docs/stable/torch.compiler_faq.html",))
    return Report(sources=(SourceInfo("train.log", 42, (), False),),
                  end_state=EndState("traceback", "model-loading", 42, "train.log", "..."),
                  diagnoses=(top,),
                  ruled_out=(RuledOut("missing-accelerate", "accelerate 1.13.0 imports in /root/venv/bin/python"),),
                  notes=("stderr of the drafter threads was appended from the capture file.",))


def render() -> str:
    buf = io.StringIO()
    console.render(story_report(), buf, width=100, color=False)
    return buf.getvalue()


def test_console_golden():
    text = render()
    if os.environ.get("UPDATE_GOLDEN") or not GOLDEN.exists():
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


def test_console_reads_verdict_first():
    lines = render().splitlines()
    assert lines[0].startswith("triage  train.log")
    assert "torch.compile called from several threads" in lines[2]
    body = "\n".join(lines)
    assert body.index("Diagnosis") < body.index("Ruled out") < body.index("note:")
    assert "line 41" in body and "missing-accelerate: accelerate 1.13.0" in body
