"""`triage rules lint` on a user's own rule folder: bad files are reported by name and
key; catastrophic regex shapes, unselective literals and wrong examples are caught."""

from __future__ import annotations

from pathlib import Path

from triage.cli import main

GOOD = """id = "my-oom"
title = "My OOM"
category = "memory"
summary = "x"
remedies = ["lower the batch"]
checks = ["nvidia-smi"]

[[match]]
literal = "MyAllocator exhausted"
regex = 'MyAllocator exhausted after \\d+ tries'

[examples]
fire = ["MyAllocator exhausted after 3 tries"]
quiet = ["MyAllocator ok"]
"""


def write(d: Path, name: str, text: str) -> Path:
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_text(text)
    return p


def lint(d: Path, capsys) -> tuple[int, str]:
    rc = main(["rules", "lint", "--rules", str(d), "--only"])
    out = capsys.readouterr()
    return rc, out.out + out.err


def test_good_user_rule_passes(tmp_path: Path, capsys):
    write(tmp_path / "r", "my-oom.toml", GOOD)
    rc, out = lint(tmp_path / "r", capsys)
    assert rc == 0, out


def test_nested_quantifier_is_rejected(tmp_path: Path, capsys):
    write(tmp_path / "r", "my-oom.toml", GOOD.replace("after \\d+ tries", "(a+)+ tries"))
    rc, out = lint(tmp_path / "r", capsys)
    assert rc == 1 and "nested quantifier" in out and "my-oom.toml" in out


def test_example_that_does_not_fire_is_reported(tmp_path: Path, capsys):
    write(
        tmp_path / "r",
        "my-oom.toml",
        GOOD.replace('fire = ["MyAllocator exhausted after 3 tries"]', 'fire = ["MyAllocator exhausted"]'),
    )
    rc, out = lint(tmp_path / "r", capsys)
    assert rc == 1 and "examples.fire[0]" in out


def test_common_word_literal_is_rejected(tmp_path: Path, capsys):
    write(
        tmp_path / "r",
        "my-oom.toml",
        GOOD.replace('literal = "MyAllocator exhausted"', 'literal = "error"')
        .replace("MyAllocator exhausted after", "error MyAllocator exhausted after")
        .replace('fire = ["MyAllocator', 'fire = ["error MyAllocator'),
    )
    rc, out = lint(tmp_path / "r", capsys)
    assert rc == 1 and "common word" in out


def test_bad_file_named_with_key(tmp_path: Path, capsys):
    write(tmp_path / "r", "my-oom.toml", GOOD.replace("[[match]]\n", "[[match]]\nbogus = 1\n"))
    rc, out = lint(tmp_path / "r", capsys)
    assert rc == 1 and "my-oom.toml" in out and "match[0].bogus" in out


def test_bad_regex_named(tmp_path: Path, capsys):
    write(tmp_path / "r", "my-oom.toml", GOOD.replace("after \\d+ tries", "after (\\d+ tries"))
    rc, out = lint(tmp_path / "r", capsys)
    assert rc == 1 and "match[0].regex" in out and "bad regex" in out


def test_shipped_rules_lint_clean(capsys):
    assert main(["rules", "lint"]) == 0, capsys.readouterr().out
