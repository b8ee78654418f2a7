"""The CI and sharing views: SARIF 2.1.0, JUnit XML, GitHub annotations, Markdown.

Real logs go through the whole pipeline (composed from the exact torch 2.2-2.8
OutOfMemoryError text of shared/reference/messages.md); hand-built Reports pin the
escaping and the level mapping; golden files pin the layout of each view.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from samples import OOM_LINE, OOM_LOG

from triage import __version__
from triage.cli import main
from triage.engine import analyze, analyze_text
from triage.model import (
    Confidence,
    Diagnosis,
    EndState,
    Evidence,
    Report,
    RuledOut,
    SourceInfo,
)
from triage.report import github as gh
from triage.report import junit, markdown, render_to_string, sarif

GOLDEN = Path(__file__).parent / "data" / "golden"
HEALTHY_LOG = "step 1 loss 2.0000\nstep 2 loss 1.9000\nTraining completed.\n"
HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"

# The parts of SARIF 2.1.0 (OASIS sarif-schema-2.1.0.json) that consumers rely on:
# required properties, types and enums of sarifLog, run, tool, reportingDescriptor,
# result, location and region. (The full schema is not shipped in any package here.)
SARIF_SUBSET = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "$schema": {"type": "string", "format": "uri"},
        "version": {"enum": ["2.1.0"]},
        "runs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["tool"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "rules": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["id"],
                                            "properties": {
                                                "id": {"type": "string"},
                                                "shortDescription": {"type": "object", "required": ["text"]},
                                                "fullDescription": {"type": "object", "required": ["text"]},
                                                "helpUri": {"type": "string"},
                                                "defaultConfiguration": {
                                                    "type": "object",
                                                    "properties": {
                                                        "level": {
                                                            "enum": ["none", "note", "warning", "error"]
                                                        }
                                                    },
                                                },
                                            },
                                        },
                                    },
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["message"],
                            "properties": {
                                "ruleId": {"type": "string"},
                                "ruleIndex": {"type": "integer", "minimum": -1},
                                "level": {"enum": ["none", "note", "warning", "error"]},
                                "message": {
                                    "type": "object",
                                    "anyOf": [{"required": ["text"]}, {"required": ["id"]}],
                                },
                                "locations": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "properties": {
                                                    "artifactLocation": {
                                                        "type": "object",
                                                        "properties": {"uri": {"type": "string"}},
                                                    },
                                                    "region": {
                                                        "type": "object",
                                                        "properties": {
                                                            "startLine": {"type": "integer", "minimum": 1}
                                                        },
                                                    },
                                                },
                                            }
                                        },
                                    },
                                },
                                "partialFingerprints": {
                                    "type": "object",
                                    "additionalProperties": {"type": "string"},
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


@pytest.fixture()
def oom_log(tmp_path: Path) -> Path:
    p = tmp_path / "train.log"
    p.write_text(OOM_LOG)
    return p


@pytest.fixture()
def healthy_log(tmp_path: Path) -> Path:
    p = tmp_path / "healthy.log"
    p.write_text(HEALTHY_LOG)
    return p


def hand_report() -> Report:
    """A report exercising every field: a likely cause, a possible one, a consequence,
    snapshot facts, ruled out, notes and characters that need escaping everywhere."""
    ev = Evidence(
        text="RuntimeError: Detected that you are using FX to symbolically trace a "
        "dynamo-optimized function. 100% <sure>, `quoted`, a|b",
        source="logs/train.log",
        line=41,
        rank=2,
        context=('  File "/venv/torch/_dynamo/eval_frame.py", line 745',),
    )
    fact = Evidence(
        text="torch 2.11.0; inductor cache cold (0 entries)", source="snapshot", fact="inductor_cache.cold"
    )
    race = Diagnosis(
        signature="fx-tracing-flag-race",
        rule="compile/fx-tracing-flag-race",
        title="torch.compile called from several threads, while another traces",
        confidence=Confidence.LIKELY,
        score=0.7,
        role="root-cause",
        summary="A compiled function was called while another thread traced: 50% of runs.\nSecond line.",
        evidence=(ev, fact),
        checks=("grep -n 'symbolically trace' train.log   # the message",),
        remedies=("Compile and warm up every shape before the threads start.",),
        docs=("https://pytorch.org/docs/stable/torch.compiler_faq.html",),
        category="compile",
    )
    acc = Diagnosis(
        signature="missing-accelerate",
        rule="env/missing-accelerate",
        title="transformers needs accelerate",
        confidence=Confidence.POSSIBLE,
        score=0.35,
        role="root-cause",
        summary="accelerate is not importable.",
        evidence=(Evidence(text="Target 0 on cuda:0... T", source="logs/train.log", line=42),),
        checks=("/root/venv/bin/python -c 'import accelerate'",),
        category="env",
    )
    child = Diagnosis(
        signature="torchrun-child-failed",
        rule="distributed/torchrun-child-failed",
        title="torchrun: a worker process failed",
        confidence=Confidence.CONFIRMED,
        score=0.4,
        role="consequence",
        explained_by="fx-tracing-flag-race",
        evidence=(
            Evidence(
                text="torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
                source="logs/train.log",
                line=60,
                rank=0,
            ),
        ),
        category="distributed",
    )
    return Report(
        sources=(SourceInfo("logs/train.log", 61, (0, 1, 2, 3), False),),
        end_state=EndState("traceback", "model-loading", 61, "logs/train.log", "..."),
        diagnoses=(race, acc, child),
        ruled_out=(RuledOut("host-oom-killed", "kernel log shows no OOM killer"),),
        notes=("stderr of the drafter threads was <appended> from the capture file.",),
        ranks=(0, 1, 2, 3),
        evidence_summary={"torch": "2.11.0", "GPUs": "8"},
    )


# -- SARIF ---------------------------------------------------------------------------


def test_sarif_of_a_real_log(oom_log: Path):
    rep = analyze([str(oom_log)])
    data = json.loads(sarif.render(rep))
    jsonschema.validate(data, SARIF_SUBSET)
    assert data["version"] == "2.1.0" and "sarif-2.1.0" in data["$schema"]
    run = data["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert set(rules) == {d.signature for d in rep.diagnoses}
    oom = rules["cuda-oom"]
    assert oom["name"] == "CudaOom" and oom["properties"]["category"] == "memory"
    assert oom["helpUri"].startswith("https://") and oom["shortDescription"]["text"]
    res = run["results"][0]
    assert res["ruleId"] == "cuda-oom" and res["level"] == "error"
    assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == "cuda-oom"
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == oom_log.as_uri()  # an absolute path: file://
    assert loc["region"]["startLine"] == OOM_LINE
    assert "CUDA out of memory" in res["message"]["text"]


def test_sarif_levels_and_relative_uri():
    data = sarif.sarif_dict(hand_report())
    jsonschema.validate(data, SARIF_SUBSET)
    levels = {r["ruleId"]: r["level"] for r in data["runs"][0]["results"]}
    assert levels == {
        "fx-tracing-flag-race": "warning",
        "missing-accelerate": "note",
        "torchrun-child-failed": "note",
    }  # a confirmed consequence is a note
    uri = data["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri["uri"] == "logs/train.log"
    assert data["runs"][0]["properties"]["ruledOut"][0]["signature"] == "host-oom-killed"


def test_sarif_fingerprint_is_stable_across_runs_and_line_shifts():
    a = analyze_text(OOM_LOG, name="train.log")
    b = analyze_text("epoch 1\n" * 7 + OOM_LOG, name="train.log")
    fa = sarif.sarif_dict(a)["runs"][0]["results"][0]
    fb = sarif.sarif_dict(b)["runs"][0]["results"][0]
    assert fa["partialFingerprints"] == sarif.sarif_dict(a)["runs"][0]["results"][0]["partialFingerprints"]
    assert fa["partialFingerprints"] == fb["partialFingerprints"]
    assert fa["locations"] != fb["locations"]  # the line moved, the alert is the same
    other = analyze_text(OOM_LOG.replace("CUDA out of memory", "HIP out of memory"))
    assert (
        sarif.sarif_dict(other)["runs"][0]["results"][0]["partialFingerprints"] != fa["partialFingerprints"]
    )


def test_sarif_of_a_healthy_log_has_no_results():
    data = json.loads(sarif.render(analyze_text(HEALTHY_LOG)))
    jsonschema.validate(data, SARIF_SUBSET)
    assert data["runs"][0]["results"] == [] and data["runs"][0]["tool"]["driver"]["rules"] == []


# -- JUnit ---------------------------------------------------------------------------


def test_junit_parses_with_a_failure(oom_log: Path):
    rep = analyze([str(oom_log)])
    root = ET.fromstring(junit.render(rep))
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "triage"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [d.signature for d in rep.diagnoses]
    failed = [c for c in cases if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["cuda-oom"]
    assert suite.get("failures") == "1" and suite.get("tests") == str(len(cases))
    fail = failed[0].find("failure")
    assert fail is not None and "CUDA out of memory" in (fail.text or "")
    # strict JUnit (junit-10.xsd) has no file/line on a testcase: the message says where
    assert f"at {oom_log}:{OOM_LINE}" in (fail.get("message") or "")


def test_junit_fails_only_likely_root_causes():
    root = ET.fromstring(junit.render(hand_report()))
    status = {c.get("name"): c.find("failure") is not None for c in root.iter("testcase")}
    assert status == {
        "fx-tracing-flag-race": True,
        "missing-accelerate": False,
        "torchrun-child-failed": False,
    }


def test_junit_survives_control_characters_and_markup():
    ev = Evidence(text="bad \x00\x1b[31m bytes </failure> & <![CDATA[ ]]>", source="a.log", line=1)
    d = Diagnosis(
        signature="cuda-oom",
        rule="memory/cuda-oom",
        title="CUDA out of memory",
        confidence=Confidence.CONFIRMED,
        score=0.9,
        role="root-cause",
        evidence=(ev,),
    )
    rep = Report(sources=(SourceInfo("a.log", 1),), end_state=EndState("error"), diagnoses=(d,))
    root = ET.fromstring(junit.render(rep))
    text = root.find("testsuite/testcase/failure").text  # type: ignore[union-attr]
    assert text is not None and "</failure> & <![CDATA[ ]]>" in text and "\x00" not in text


def test_junit_of_a_healthy_log_passes():
    root = ET.fromstring(junit.render(analyze_text(HEALTHY_LOG)))
    assert root.get("failures") == "0" and len(list(root.iter("testcase"))) == 1


# -- GitHub annotations ----------------------------------------------------------------


def test_github_error_annotation(oom_log: Path):
    out = gh.render(analyze([str(oom_log)])).splitlines()
    assert out[0].startswith(f"::error file={oom_log},line={OOM_LINE},title=cuda-oom%3A ")
    assert "::" in out[0][2:] and "CUDA out of memory" in out[0]


def test_github_escaping():
    assert gh.escape_data("100%\r\nnext") == "100%25%0D%0Anext"
    assert gh.escape_property("a, b: c%") == "a%2C b%3A c%25"
    lines = gh.render(hand_report()).splitlines()
    assert len(lines) == 4  # three diagnoses and one note, each on one line
    kinds = [line.split(" ", 1)[0] for line in lines]
    assert kinds == ["::warning", "::notice", "::notice", "::notice"]
    head, _, message = lines[0][2:].partition("::")
    props = dict(p.split("=", 1) for p in head.split(" ", 1)[1].split(","))
    assert props == {
        "file": "logs/train.log",
        "line": "41",
        "title": "fx-tracing-flag-race%3A torch.compile called from several "
        "threads%2C while another traces (likely)",
    }
    assert "50%25 of runs.%0ASecond line." in message and "\n" not in message


def test_github_names_an_unrecognised_error(tmp_path: Path):
    log = tmp_path / "odd.log"
    log.write_text(
        'Traceback (most recent call last):\n  File "t.py", line 3, in <module>\nValueError: something odd\n'
    )
    out = gh.render(analyze([str(log)]))
    # no signature names its cause: the root error itself is annotated, as a possible cause
    assert out.startswith(f"::notice file={log},line=3,title=unclassified-error")
    assert "Evidence: ValueError: something odd" in out


# -- Markdown ------------------------------------------------------------------------


def test_markdown_of_a_real_log(oom_log: Path):
    text = markdown.render(analyze([str(oom_log)]))
    assert text.startswith("### triage: CUDA out of memory (`cuda-oom`, **confirmed**)")
    assert "| 1 | `cuda-oom` | CUDA out of memory | **confirmed** | root cause |" in text
    assert f"{oom_log}:{OOM_LINE} | torch.OutOfMemoryError" in text
    assert "**Checks**" in text and "```sh\nnvidia-smi" in text and "**Fixes**" in text


def test_markdown_sections_and_escaping():
    text = markdown.render(hand_report())
    assert text.startswith("### triage: torch.compile called from several threads")
    assert "`fx-tracing-flag-race`" in text and "| 2 | `missing-accelerate` |" in text
    assert "logs/train.log:41 rank 2 | RuntimeError" in text
    assert "### Ruled out" in text and "`host-oom-killed`: kernel log shows no OOM killer" in text
    assert "&lt;appended&gt;" in text  # prose cannot open HTML
    assert "| `torch` | 2.11.0 |" in text and "| `GPUs` | 8 |" in text
    assert "- supports: torch 2.11.0; inductor cache cold (0 entries)" in text
    # log text only inside code: the evidence block holds it verbatim
    block = text.split("**Evidence**", 1)[1].split("```text\n", 1)[1].split("\n```", 1)[0]
    assert "100% <sure>, `quoted`, a|b" in block


def test_markdown_fence_outlasts_backticks_in_the_log():
    ev = Evidence(text="print('```')  # three backticks in a log line", source="a.log", line=3)
    d = Diagnosis(
        signature="cuda-oom",
        rule="memory/cuda-oom",
        title="CUDA out of memory",
        confidence=Confidence.CONFIRMED,
        score=0.9,
        role="root-cause",
        evidence=(ev,),
    )
    rep = Report(sources=(SourceInfo("a.log", 3),), end_state=EndState("error"), diagnoses=(d,))
    text = markdown.render(rep)
    assert "````text\n" in text and "\n````" in text


def test_markdown_of_a_healthy_log():
    text = markdown.render(analyze_text(HEALTHY_LOG, name="healthy.log"))
    assert text.startswith("### triage: No failure found") and "|" not in text.split("\n")[0]


# -- the CLI: --format, --fail-on, --redact --------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "markdown", "sarif", "junit", "github"])
def test_fail_on_likely(fmt: str, oom_log: Path, healthy_log: Path, capsys):
    assert main(["logs", str(oom_log), "--format", fmt, "--fail-on", "likely"]) == 1
    assert capsys.readouterr().out
    assert main(["logs", str(healthy_log), "--format", fmt, "--fail-on", "likely"]) == 0
    assert main(["logs", str(oom_log), "--format", fmt]) == 0  # no gate, no failure


@pytest.mark.parametrize("fmt", ["console", "json", "markdown", "sarif", "junit", "github"])
def test_redact_every_format(fmt: str):
    rep = analyze_text(
        f"HF_TOKEN={HF} python train.py\n"
        + OOM_LOG.replace("Tried to allocate", f"token {HF} Tried to allocate"),
        name="train.log",
    )
    plain = render_to_string(rep, fmt, width=200, color="never", verbose=True)
    assert HF in plain  # the report does carry it...
    red = render_to_string(rep, fmt, width=200, color="never", verbose=True, redact="secrets")
    assert HF not in red  # ...and --redact masks it
    if fmt in ("json", "sarif"):
        json.loads(red)
    if fmt == "junit":  # placeholders are escaped like any text: the XML stays well-formed
        red = "".join(ET.fromstring(red).itertext())
    assert "<HF_TOKEN_1>" in red


# -- golden files ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "render"),
    [
        ("report_hand.md", markdown.render),
        ("report_hand.sarif", sarif.render),
        ("report_hand.junit.xml", junit.render),
        ("report_hand.github.txt", gh.render),
    ],
)
def test_golden(name: str, render, golden):
    golden(GOLDEN / name, render(hand_report()).replace(__version__, "VERSION"))


def test_markdown_prose_keeps_code_spans_verbatim():
    text = markdown.prose("run `cmd 2>&1 | tee train.log` or <b> & more")
    assert text == "run `cmd 2>&1 | tee train.log` or &lt;b&gt; &amp; more"
    assert markdown.cell("a | b `x|y`\nnext") == "a \\| b `x\\|y` next"
