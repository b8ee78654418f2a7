"""Both JUnit outputs (`triage logs --format junit` and `triage fixtures check --junit`)
validate against the strict schema Jenkins' xUnit plugin checks reports with
(tests/data/junit-10.xsd), with a real XML Schema validator.

That schema is stricter than most readers: a testcase takes no `file` or `line`, and
every testsuite needs `errors`. So the location of a diagnosis travels in its failure
message and its text, where every JUnit reader shows it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema  # the dev extra installs it: a missing validator fails, never skips
from samples import OOM_LINE, OOM_LOG

from triage.cli import main
from triage.engine import analyze, analyze_text
from triage.model import Confidence, Diagnosis, EndState, Evidence, Report, SourceInfo
from triage.report import junit

XSD = Path(__file__).parent / "data" / "junit-10.xsd"


@pytest.fixture(scope="module")
def schema():
    return xmlschema.XMLSchema(str(XSD))


@pytest.fixture()
def oom_log(tmp_path: Path) -> Path:
    p = tmp_path / "train.log"
    p.write_text(OOM_LOG)
    return p


def errors_of(schema, path_or_text: str | Path) -> list[str]:
    source = str(path_or_text) if isinstance(path_or_text, Path) else path_or_text
    return [str(e.reason) for e in schema.iter_errors(source)]


def test_the_schema_is_strict(schema):
    # the schema itself must reject what the issue reports, or the tests below prove nothing
    bad_case = (
        '<testsuites><testsuite name="t" tests="1" failures="0" errors="0">'
        '<testcase name="a" file="x.log" line="3"/></testsuite></testsuites>'
    )
    no_errors = '<testsuite name="t" tests="1" failures="0"><testcase name="a"/></testsuite>'
    props_in_case = (
        '<testsuite name="t" tests="1" failures="0" errors="0"><testcase name="a">'
        "<properties/></testcase></testsuite>"
    )
    for bad in (bad_case, no_errors, props_in_case):
        assert errors_of(schema, bad), bad
    ok = (
        '<testsuites><testsuite name="t" tests="1" failures="1" errors="0" time="0">'
        '<properties><property name="p" value="v"/></properties>'
        '<testcase name="a" classname="c" time="0.5"><failure message="m" type="t">x'
        "</failure></testcase><system-out>o</system-out></testsuite></testsuites>"
    )
    assert errors_of(schema, ok) == []


def test_logs_junit_of_a_crash_validates(schema, oom_log: Path, tmp_path: Path, capsys):
    out = tmp_path / "triage.xml"
    assert main(["logs", str(oom_log), "--format", "junit", "-o", str(out)]) == 0
    capsys.readouterr()
    assert errors_of(schema, out) == []
    case = ET.parse(out).getroot().find("testsuite/testcase")
    assert case is not None and case.get("name") == "cuda-oom"
    # the location is not lost with the attributes: the message and the text carry it
    fail = case.find("failure")
    assert fail is not None and f"{oom_log}:{OOM_LINE}" in (fail.get("message") or "")
    assert f"{oom_log}:{OOM_LINE}" in (fail.text or "")


@pytest.mark.parametrize(
    "text",
    [
        "step 1 loss 2.0000\nstep 2 loss 1.9000\nTraining completed.\n",  # healthy: one passing case
        "step 1 loss 2.0\nstep 2 loss 1.9\nstep 3 lo",  # cut off: an inference at the log's end
        "",
    ],
)
def test_logs_junit_of_other_logs_validates(schema, text: str):
    assert errors_of(schema, junit.render(analyze_text(text))) == []


def test_logs_junit_with_markup_and_control_characters_validates(schema):
    ev = Evidence(text="bad \x00\x1b[31m bytes </failure> & <![CDATA[ ]]>", source="a&b.log", line=1, rank=0)
    d = Diagnosis(
        signature="cuda-oom",
        rule="memory/cuda-oom",
        title="CUDA <out> of memory",
        confidence=Confidence.CONFIRMED,
        score=0.9,
        role="root-cause",
        evidence=(ev,),
    )
    rep = Report(
        sources=(SourceInfo("a&b.log", 1),),
        end_state=EndState("error"),
        diagnoses=(d,),
        notes=("a note with \x07 bell",),
    )
    assert errors_of(schema, junit.render(rep)) == []


def test_real_multi_rank_log_validates(schema, tmp_path: Path):
    log = tmp_path / "train.log"
    log.write_text(
        "".join(f"[rank{r}]: step 1 loss 2.0\n" for r in range(4))
        + "".join(f"[rank3]: {line}\n" for line in OOM_LOG.splitlines())
    )
    assert errors_of(schema, junit.render(analyze([str(log)]))) == []


def test_fixtures_check_junit_validates(schema, oom_log: Path, tmp_path: Path, capsys):
    fx = tmp_path / "fx"
    assert (
        main(
            [
                "fixtures",
                "add",
                str(oom_log),
                "--expect",
                "cuda-oom",
                "--dir",
                str(fx),
                "--source",
                "composed for this test",
            ]
        )
        == 0
    )
    xml = tmp_path / "fixtures.xml"
    assert main(["fixtures", "check", str(fx), "--junit", str(xml)]) == 0
    assert errors_of(schema, xml) == []
    exp = next(fx.rglob("expected.toml"))
    exp.write_text(exp.read_text().replace('"cuda-oom"', '"nan-loss"', 1))
    assert main(["fixtures", "check", str(fx), "--junit", str(xml)]) == 1
    capsys.readouterr()
    assert errors_of(schema, xml) == []
    root = ET.parse(xml).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("1", "1", "0")
    assert suite.find("testcase/failure") is not None
