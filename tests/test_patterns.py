"""Rule regexes known to compile are compiled at first use; any other at load."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import regex

import triage.engine.patterns as P
from triage.engine.codes import code_table
from triage.engine.rules import load_rules, parse_rule
from triage.errors import RuleError

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(P, "CHECKED", P._Checked())
    code_table.cache_clear()  # the code tables' patterns too are made anew
    return tmp_path / "cache"


def _patterns(rules: list) -> list:
    return [c.pattern for r in rules for c in r.clauses if c.pattern is not None]


def test_the_second_load_is_lazy_and_matches_alike(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_rules()
    assert all(isinstance(p, regex.Pattern) for p in _patterns(first))
    assert P.CHECKED.path.is_file()
    monkeypatch.setattr(P, "CHECKED", P._Checked())  # a new process: the cache read again
    code_table.cache_clear()
    second = load_rules()
    lazy = _patterns(second)
    assert lazy and all(isinstance(p, P.LazyPattern) for p in lazy)
    assert all(p._rx is None for p in lazy)  # nothing compiled at load
    texts = (ROOT / "fixtures/cuda-oom/001-rank3-cascade-8ranks/input.log").read_text().splitlines()
    texts += ["RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", "Killed"]
    for old, new in zip(_patterns(first), lazy, strict=True):
        assert (new.pattern, new.flags & regex.IGNORECASE) == (old.pattern, old.flags & regex.IGNORECASE)
        assert new.groupindex == dict(old.groupindex)
        for t in texts:
            a, b = old.search(t), new.search(t)
            assert (a and a.span()) == (b and b.span())


def test_a_bad_regex_is_an_error_at_load_even_with_a_warm_cache(cache: Path) -> None:
    load_rules()  # warm: every shipped pattern listed
    path = ROOT / "rules/memory/cuda-oom.toml"
    data = tomllib.loads(path.read_text())
    line = next(m for m in data["match"] if m.get("kind", "line") == "line")
    line["regex"] += "("  # the shipped text, now unbalanced: never listed as compiling
    with pytest.raises(RuleError) as e:
        parse_rule(data, str(path))
    assert "bad regex" in str(e.value) and "cuda-oom.toml" in str(e.value)


def test_a_damaged_or_unwritable_cache_only_costs_time(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache.mkdir(parents=True)
    P.CHECKED.path.write_text("{not json")
    rules = load_rules()
    assert all(isinstance(p, regex.Pattern) for p in _patterns(rules))
    monkeypatch.setattr(P, "CHECKED", P._Checked())
    code_table.cache_clear()
    P.CHECKED.path.write_text('{"k": 3}')  # well-formed, wrong shape
    assert all(isinstance(p, regex.Pattern) for p in _patterns(load_rules()))
    monkeypatch.setenv("TRIAGE_CACHE_DIR", "/proc/no-such-place")
    monkeypatch.setattr(P, "CHECKED", P._Checked())
    assert len(load_rules()) == len(rules)
