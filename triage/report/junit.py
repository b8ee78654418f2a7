"""The JUnit XML view: CI systems that read test reports show a crash as a failed test.

A testsuite named `triage`, one testcase per diagnosis (classname `triage.<category>`,
name the signature). Root causes (and contributing causes) at likely or confirmed are
`<failure>`s; possible causes and consequences pass, with their text in system-out, so
a guess never turns a build red. A log with no diagnosis is one passing testcase.

The output validates against the strict schema Jenkins' xUnit plugin checks reports with
(junit-10.xsd): a testcase takes only name, classname and time here (no `file`/`line`:
that schema rejects them), so where a diagnosis points is written in its failure message
and on the first line of its text; every testsuite carries `errors`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from triage.model import Diagnosis, Report
from triage.report.common import describe_log, is_failure, location, verdict, where

# XML 1.0 forbids most control characters even escaped; logs carry them (NUL, \x1b ...).
_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def xml_text(text: str) -> str:
    """Text safe for XML 1.0: forbidden characters become U+FFFD."""
    return _XML_BAD.sub("\ufffd", text)


def _at(d: Diagnosis, r: Report) -> str:
    """`path:line` (or `path`) where a diagnosis points, "" when nowhere."""
    path, line = location(d, r)
    if not path:
        return ""
    return f"{path}:{line}" if line else path


def _details(d: Diagnosis, at: str) -> str:
    lines = [f"{d.title} ({d.signature}): {d.confidence.label}, {d.role}"]
    if at:
        lines.append(f"at: {at}")
    if d.explained_by:
        lines.append(f"consequence of: {d.explained_by}")
    if d.summary:
        lines.append(d.summary)
    if d.evidence:
        lines.append("")
        lines.append("evidence:")
        for e in d.evidence:
            if d.role != "consequence":  # the cause's frames, not the victims'
                lines += [f"      {c}" for c in e.context[-2:]]
            lines.append(f"  > {where(e)}  {e.text}")
    for e in d.counter_evidence:
        lines.append(f"  against: {e.text}")
    if d.role != "consequence":
        lines += [f"check: {c}" for c in d.checks]
        lines += [f"fix: {x}" for x in d.remedies]
        lines += [f"docs: {x}" for x in d.docs]
    return "\n".join(lines)


def _case(suite: ET.Element, d: Diagnosis, r: Report) -> bool:
    at = _at(d, r)
    case = ET.SubElement(
        suite,
        "testcase",
        {"classname": f"triage.{d.category or 'diagnosis'}", "name": d.signature, "time": "0"},
    )
    text = xml_text(_details(d, at))
    failed = is_failure(d)
    if failed:
        message = f"{d.title} ({d.signature}, {d.confidence.label})"
        fail = ET.SubElement(
            case,
            "failure",
            {"message": xml_text(f"{message} at {at}" if at else message), "type": d.signature},
        )
        fail.text = text
    else:
        ET.SubElement(case, "system-out").text = text
    return failed


def junit_element(r: Report) -> ET.Element:
    """The `<testsuites>` element (render() serialises it)."""
    root = ET.Element("testsuites", {"name": "triage"})
    suite = ET.SubElement(root, "testsuite", {"name": "triage", "time": "0", "errors": "0", "skipped": "0"})
    props = ET.SubElement(suite, "properties")
    for name, value in (("log", describe_log(r)), ("end_state", r.end_state.kind), ("verdict", verdict(r))):
        ET.SubElement(props, "property", {"name": name, "value": xml_text(value)})
    failures = 0
    for d in r.diagnoses:
        failures += _case(suite, d, r)
    tests = len(r.diagnoses)
    if not r.diagnoses:
        tests = 1
        case = ET.SubElement(
            suite, "testcase", {"classname": "triage", "name": "no-known-failure", "time": "0"}
        )
        ET.SubElement(case, "system-out").text = xml_text(verdict(r))
    notes = "\n".join([*r.notes, *(f"ruled out {x.signature}: {x.because}" for x in r.ruled_out)])
    if notes:
        ET.SubElement(suite, "system-out").text = xml_text(notes)
    for el in (root, suite):
        el.set("tests", str(tests))
        el.set("failures", str(failures))
    root.set("errors", "0")
    return root


def render(r: Report) -> str:
    """JUnit XML text with an XML declaration."""
    root = junit_element(r)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
