"""`triage fixtures check [DIR] [--junit FILE]` and `triage fixtures add LOG --expect
SIGNATURE`: run the regression fixtures, and turn a real log into one. The fixture
library is triage.fixtures (runner.py checks, add.py trims, write.py writes)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from triage.cli.parser import add_rules_option
from triage.errors import ExitCode, TriageError


def register(sub: Any) -> None:
    """Add `fixtures check` and `fixtures add` to triage's subparsers."""
    fx = sub.add_parser("fixtures", help="regression fixtures of past crashes")
    fsub = fx.add_subparsers(dest="fixtures_command", required=True, parser_class=sub._parser_class)
    chk = fsub.add_parser("check", help="run every fixture; exit 1 when any regresses")
    chk.add_argument("dir", nargs="?", default="fixtures", help="fixtures folder (default: ./fixtures)")
    chk.add_argument("--junit", metavar="FILE", help="write JUnit XML here")
    add_rules_option(chk)
    chk.add_argument("--quiet", "-q", action="store_true", help="print only failures")
    chk.set_defaults(func=cmd_check)
    register_add(fsub)


def register_add(fsub: Any) -> None:
    """Add `fixtures add` to the `triage fixtures` subcommands."""
    add = fsub.add_parser(
        "add",
        help="write a regression fixture from a real log",
        description="Triage LOG, keep the lines its diagnosis rests on (plus head and tail), "
        "and write <dir>/<signature>/<NNN-slug>/{input.log, expected.toml, "
        "evidence.json}.",
    )
    add.add_argument("log", metavar="LOG", help="the log file (.gz/.zst too)")
    add.add_argument(
        "--expect",
        required=True,
        metavar="SIGNATURE",
        help="the signature this log must be diagnosed as (none: a healthy log)",
    )
    add.add_argument(
        "--evidence", metavar="SNAPSHOT", help="a snapshot JSON (triage snapshot) to reason with and keep"
    )
    add.add_argument(
        "--redact",
        nargs="?",
        const="secrets",
        choices=("secrets", "all"),
        help="mask tokens, keys and emails (all: also hosts, IPs, home paths)",
    )
    add.add_argument("--dir", default="fixtures", type=Path, help="fixtures folder (default: ./fixtures)")
    add.add_argument(
        "--name", metavar="SLUG", help="folder name after the number (default: from the log's file name)"
    )
    add.add_argument(
        "--source", metavar="TEXT", help="how the log was obtained (recorded from ..., a script that ...)"
    )
    add.add_argument("--whole", action="store_true", help="keep the whole log, untrimmed")
    add_rules_option(add)
    add.set_defaults(func=cmd_add)


# -- fixtures check ------------------------------------------------------------------


def cmd_check(args: argparse.Namespace) -> int:
    """Run every fixture under DIR; exit 1 when any regresses."""
    from triage.engine import get_rules
    from triage.fixtures.runner import check_fixture, discover

    root = Path(args.dir)
    fixtures = discover(root)
    rules = get_rules(args.rules)
    results = [check_fixture(fx, rules) for fx in fixtures]
    failed = [r for r in results if not r.ok]
    for r in results:
        if r.ok and args.quiet:
            continue
        sys.stdout.write(f"{'ok  ' if r.ok else 'FAIL'} {r.fixture.name}\n")
        for p in r.problems:
            sys.stdout.write(f"       {p}\n")
    sys.stdout.write(f"{len(results) - len(failed)} passed, {len(failed)} failed\n")
    if args.junit:
        _write_junit(Path(args.junit), results)
    return ExitCode.FAIL_ON if failed else ExitCode.OK


def _write_junit(path: Path, results: list[Any]) -> None:
    """One testsuite, one testcase per fixture, valid under the strict junit-10.xsd that
    Jenkins' xUnit plugin checks with (it requires `errors` on every testsuite)."""
    import xml.etree.ElementTree as ET

    from triage.report.junit import xml_text

    suite = ET.Element(
        "testsuite",
        name="triage-fixtures",
        tests=str(len(results)),
        failures=str(sum(not r.ok for r in results)),
        errors="0",
        skipped="0",
        time="0",
    )
    for r in results:
        case = ET.SubElement(suite, "testcase", classname="fixtures", name=xml_text(r.fixture.name), time="0")
        if not r.ok:
            # a problem quotes log text, which may hold characters XML 1.0 forbids
            f = ET.SubElement(case, "failure", message=xml_text(r.problems[0]), type="fixture-regressed")
            f.text = xml_text("\n".join(r.problems))
    try:
        ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
    except OSError as e:
        raise TriageError(f"{path}: cannot write ({e.strerror})") from None


# -- fixtures add --------------------------------------------------------------------


def cmd_add(args: argparse.Namespace) -> int:
    """`triage fixtures add`: write a fixture; exit 0 (warnings on stderr)."""
    from triage.engine import get_rules
    from triage.fixtures.add import add_fixture

    log, expect = args.log, args.expect.strip()
    _check_add_args(log, expect)
    rules = get_rules(args.rules)
    added = add_fixture(
        log,
        expect,
        rules,
        root=args.dir,
        name=args.name,
        evidence=args.evidence,
        redact=args.redact,
        source=args.source,
        whole=args.whole,
    )
    _print_added(added)
    if not args.source:
        sys.stderr.write(
            "triage: note: edit `source` in expected.toml to say how the log was "
            "obtained (or pass --source)\n"
        )
    return ExitCode.OK


def _check_add_args(log: str, expect: str) -> None:
    """Refuse a log that cannot be read twice and an --expect that is no signature id."""
    from triage.fixtures.add import SIGNATURE_RE

    if log == "-":
        raise TriageError("fixtures add reads the log twice: give a file, not - (stdin)")
    if not Path(log).is_file():
        what = "is a folder: give one log file" if Path(log).is_dir() else "no such file"
        raise TriageError(f"{log}: {what}")
    if not SIGNATURE_RE.match(expect):
        raise TriageError(
            f"--expect {expect!r}: a signature id is lowercase letters, digits "
            "and dashes (see: triage rules list)"
        )


def _print_added(added: Any) -> None:
    """What was written, and whether `fixtures check` passes on it."""
    from triage.fixtures.add import diagnoses_summary

    sys.stdout.write(
        f"wrote {added.dest}/ (input.log: {added.kept_lines} lines of {added.original_lines}"
        f"{'; redacted' if added.redacted else ''}"
        f"{'; evidence.json' if added.evidence else ''})\n"
    )
    if added.problems:
        sys.stdout.write("fixture does not pass yet:\n" + "".join(f"  {p}\n" for p in added.problems))
    else:
        sys.stdout.write(f"fixture passes: {diagnoses_summary(added.report)}\n")
