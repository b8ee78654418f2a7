"""The one-place registries: output formats (triage.report.FORMATS), repro scenarios
(discovered in triage.repro.scenarios), CLI subcommands (triage.cli.SUBCOMMANDS), and
the one fixture writer both `fixtures add` and `repro --record` use."""

from __future__ import annotations

import argparse
import types
from pathlib import Path

import pytest

from triage.cli import SUBCOMMANDS, build_parser
from triage.errors import TriageError
from triage.fixtures.write import next_fixture_dir, write_fixture
from triage.report import FORMATS, MARKUP_FORMATS, TEXT_FORMATS, format_help
from triage.repro import runner
from triage.repro.scenarios import all_scenarios, module_names
from triage.repro.spec import Scenario


def _sub(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def test_logs_format_choices_and_help_come_from_the_registry():
    logs = _sub(build_parser(), "logs")
    fmt = next(a for a in logs._actions if a.dest == "format")
    assert fmt.choices is not None
    assert (
        tuple(fmt.choices)
        == tuple(FORMATS)
        == (
            "console",
            "json",
            "markdown",
            "sarif",
            "junit",
            "github",
            "html",
        )
    )
    assert fmt.help == format_help()
    assert format_help().startswith("console (default), json (triage.report/1), markdown")
    assert format_help().endswith("or html (one self-contained page with charts; needs the html extra)")


def test_format_table_keeps_the_old_names():
    assert TEXT_FORMATS == ("json", "markdown", "sarif", "junit", "github", "html")
    assert MARKUP_FORMATS == ("markdown", "junit", "html")
    assert [f.name for f in FORMATS.values() if f.extra] == ["html"]


def test_subcommands_in_help_order():
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(action.choices) == ["logs", "rules", "snapshot", "fixtures", "watch", "repro", "history"]
    assert len(SUBCOMMANDS) == 7


def test_scenarios_are_discovered_in_listing_order():
    names = [s.name for s in all_scenarios()]
    assert names == [
        "fx-tracing-flag-race",
        "missing-accelerate",
        "host-oom-killed",
        "nan-loss",
        "dataloader-worker-crash",
        "truncated-unknown",
        "nccl-timeout",
        "checkpoint-save-failed",
        "cuda-oom",
        "flex-threads-cuda",
    ]
    assert "hide_module" in module_names()  # a payload helper, not a scenario


def test_write_fixture_writes_the_whole_folder(tmp_path):
    dest = tmp_path / "cuda-oom" / "001-x"
    write_fixture(dest, b"a\r\nb", 'source = "t"\n', "{}\n")
    assert (dest / "input.log").read_bytes() == b"a\r\nb"
    assert (dest / "expected.toml").read_text() == 'source = "t"\n'
    assert (dest / "evidence.json").read_text() == "{}\n"
    assert [p.name for p in dest.parent.iterdir()] == ["001-x"]  # no temporary left


@pytest.mark.parametrize("existing", ["empty", "full"])
def test_write_fixture_never_overwrites(tmp_path, existing):
    dest = tmp_path / "sig" / "001-x"
    dest.mkdir(parents=True)
    if existing == "full":
        (dest / "input.log").write_bytes(b"old\n")
    with pytest.raises(TriageError, match="already exists; refusing to overwrite"):
        write_fixture(dest, b"new\n", "", None)
    assert [p.name for p in dest.parent.iterdir()] == ["001-x"]
    assert [p.name for p in dest.iterdir()] == ([] if existing == "empty" else ["input.log"])


def test_write_fixture_unwritable_parent_is_one_line_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(TriageError, match="cannot create"):
        write_fixture(blocker / "sig" / "001-x", b"", "", None)


def test_next_fixture_dir_numbers_past_the_highest(tmp_path):
    assert next_fixture_dir(tmp_path / "none", "a") == tmp_path / "none" / "001-a"
    for name in ("001-a", "007-b", ".008-hidden.tmp", "notes"):
        (tmp_path / name).mkdir()
    assert next_fixture_dir(tmp_path, "c") == tmp_path / "008-c"


def _recorded_run(tmp_path: Path) -> tuple[Scenario, runner.Outcome, Path]:
    module = types.ModuleType("fake_scenario")
    sc = Scenario("fake", "nan-loss", "cpu", "s", "a failure", "a fix", module)
    out = runner.Outcome(scenario="fake", expected="nan-loss", fix=False, device="cpu", ok=True)
    out.versions = {"python": "3.11"}
    work = tmp_path / "work"
    work.mkdir()
    (work / "run.log").write_bytes(b"step 1 loss nan\n")
    return sc, out, work


def test_repro_record_uses_the_fixture_writer(tmp_path):
    sc, out, work = _recorded_run(tmp_path)
    root = tmp_path / "fixtures"
    first = runner.record_fixture(sc, out, work, root)
    second = runner.record_fixture(sc, out, work, root)
    assert first is not None and second is not None
    assert first == root / "nan-loss" / "001-repro-fake"
    assert second == root / "nan-loss" / "002-repro-fake"
    assert (first / "input.log").read_bytes() == b"step 1 loss nan\n"
    assert not (first / "evidence.json").exists()
    assert (
        (first / "expected.toml")
        .read_text()
        .startswith('source = "recorded from `triage repro fake` (python 3.11): a failure"')
    )
