"""The help a new user reads: every option explained, `triage logs --help` with the exit
codes and examples, `triage repro --list` as a table, and a README whose sample output
is what the command prints today."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from triage.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent


def _parsers(
    p: argparse.ArgumentParser, name: str = "triage"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, p
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


def test_every_option_of_every_subcommand_has_help():
    missing = []
    for name, p in _parsers(build_parser()):
        for a in p._actions:
            if isinstance(a, argparse._HelpAction | argparse._SubParsersAction):
                continue
            if not a.help or a.help == argparse.SUPPRESS:
                missing.append(f"{name} {'/'.join(a.option_strings) or a.dest}")
    assert not missing, missing


def test_logs_help_shows_exit_codes_and_three_examples(capsys):
    with pytest.raises(SystemExit) as e:
        main(["logs", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert re.search(r"exit codes", out, re.I)
    for code, words in (("0", "ran"), ("1", "--fail-on"), ("2", "usage"), ("3", "internal")):
        assert re.search(rf"^\s+{code}\s.*{re.escape(words)}", out, re.M), (code, out)
    examples = re.findall(r"^\s+triage logs \S", out, re.M)
    assert len(examples) >= 3, out


def _repro_list(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "triage", "repro", "--list", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_repro_list_is_a_table():
    p = _repro_list()
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert re.match(r"scenario\s+device\s+expects\s+what it does", lines[0]), lines[0]
    row = next(x for x in lines if x.startswith("fx-tracing-flag-race "))
    assert re.match(r"fx-tracing-flag-race\s+cpu\s+fx-tracing-flag-race\s+\S", row), row
    with pytest.raises(json.JSONDecodeError):
        json.loads(p.stdout)


def test_repro_list_json():
    p = _repro_list("--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert {"name", "expected", "device", "summary"} <= set(rows[0])


README_SAMPLE = re.compile(r"```\n\$ (triage logs (\S+))\n(.*?)```", re.S)


def test_readme_sample_output_is_what_the_command_prints(capsys):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    m = README_SAMPLE.search(readme)
    assert m, "the README opens with a sample `$ triage logs ...` block"
    assert main(["logs", m.group(2), "--width", "100", "--color", "never"]) == 0
    printed = capsys.readouterr().out
    sample = "\n".join(x.rstrip() for x in m.group(3).rstrip().splitlines())
    assert sample == "\n".join(x.rstrip() for x in printed.rstrip().splitlines()), (
        f"regenerate the README's sample with: {m.group(1)} --width 100 --color never"
    )


def test_readme_says_which_extras_need_what():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    extras = re.findall(r"^\s*(\w+)\s*=", (ROOT / "pyproject.toml").read_text(), re.M)
    for feature in (".zst", "TUI", "NVML"):
        line = next((x for x in readme.splitlines() if feature in x and "[" in x), "")
        named = re.search(r"\[(\w+)\]", line)
        assert named, f"README names no extra for {feature}"
        assert named.group(1) in extras, line
