"""The fast path confirms literal hits natively: a common literal (`:inf` is in every
`:INFO`) makes no window unless its clause's pattern matches the line; the native
pattern is a superset of the clause's regex; every engine finds the same lines; a folder
of many small rank logs takes the fast path; the per-line prefilter's automaton finds
what the alternation finds; the noise corpus lint names unselective literals."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from triage.cli import main
from triage.engine import Analysis, analyze, get_rules
from triage.engine.lint import noise_selectivity
from triage.engine.match import Matcher
from triage.engine.noise import SHAPES, noise_lines
from triage.ingest import Ingest
from triage.ingest.normalize import SourceState, normalize
from triage.ingest.reader import split_lines
from triage.ingest.scan import LiteralScanner
from triage.ingest.supersets import native_superset

ROOT = Path(__file__).resolve().parent.parent
LOGS = sorted((ROOT / "fixtures").glob("*/*/input.log"))
ENGINES = ("hyperscan", "ahocorasick_rs", "python")

HEALTHY = b"".join(
    f"[rank{i % 8}]:INFO:pkg.train:step {i} loss 2.41 acc 0.31 grad_norm 1.07 lr 6.00e-04 "
    f"tok/s 21610\n".encode()
    for i in range(5000)
)


def scanner(engine: str) -> LiteralScanner:
    a = Analysis(get_rules())
    plain, iplain, confirm = a.matcher.scan_literals()
    sc = LiteralScanner(plain, iplain, engine=engine, confirm=confirm)
    if sc.engine != engine:
        pytest.skip(f"{engine} not installed")
    return sc


def lines_of(buf: bytes, offsets: list[int]) -> set[int]:
    return {buf.count(b"\n", 0, o) for o in offsets}


@pytest.mark.parametrize("engine", ENGINES)
def test_common_literal_makes_no_window_unless_the_pattern_matches(engine):
    sc = scanner(engine)
    assert sc.offsets(HEALTHY) == []  # ':inf' is on every line, 'loss' too: nothing to read
    bad = HEALTHY + b"[rank3]:INFO:pkg.train:step 5001 loss inf acc 0.31\n" + HEALTHY
    assert lines_of(bad, sc.offsets(bad)) == {5000}


def test_native_superset_matches_wherever_the_clause_does():
    """On every line of every fixture: a clause that matches the clean text has a native
    pattern that matches the raw line."""
    rules = get_rules()
    m = Matcher(rules)
    natives: dict[int, re.Pattern[bytes] | None] = {}
    checked = 0
    for log in LOGS:
        state = SourceState()
        for raw in split_lines([log.read_bytes()]):
            for p in normalize(raw.data, state):
                for c in m.prefilter.hits(p.text):
                    if isinstance(c, tuple):
                        continue
                    if id(c) not in natives:
                        src = native_superset(c.pattern.pattern) if c.pattern is not None else None
                        natives[id(c)] = (
                            None if src is None else re.compile(src.encode(), re.IGNORECASE if c.icase else 0)
                        )
                    nat = natives[id(c)]
                    if nat is None or not c.search(p.text):
                        continue
                    checked += 1
                    assert nat.search(raw.data), (log, raw.lineno, c.rule_id, c.index)
    assert checked > 100


@pytest.mark.parametrize(
    "src,raw,clean",
    [
        (
            r"^RuntimeError: (?P<what>\w+) failed$",
            b"[rank1]: RuntimeError: d\xc3\xa9j\xc3\xa0 failed\r",
            "RuntimeError: déjà failed",
        ),
        (r"(?<![a-z])loss\s*[=:]\s*nan\b", b"2026-11-29 12:00:00 loss =\xc2\xa0nan", "loss =\u00a0nan"),
        (
            r"Xid.{0,40}: 79,",
            b"NVRM: Xid (PCI:0000:3b:00): 79, pid=1",
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=1",
        ),
        (r"(?>Killed)(?=\s|$)", b"line 3: 123 Killed", "line 3: 123 Killed"),
    ],
)
def test_native_superset_keeps_what_python_matches(src, raw, clean):
    assert re.search(src, clean)
    nat = native_superset(src)
    assert nat is not None and re.search(nat.encode(), raw)
    assert not re.search(nat.encode(), b"nothing here\n")


def test_native_superset_declines_what_it_cannot_express():
    assert native_superset(r"(a)\1") is None  # a backreference
    assert native_superset(r"\p{L}+ failed") is None
    assert native_superset(r"[é] x") is None  # a non-ASCII member of a class is several bytes


def test_engines_find_the_same_lines():
    buf = b"".join(p.read_bytes().rstrip(b"\n") + b"\n" for p in LOGS) + HEALTHY
    found = {}
    for engine in ENGINES:
        try:
            sc = scanner(engine)
        except pytest.skip.Exception:
            continue
        found[engine] = lines_of(buf, sc.offsets(buf))
    assert len(found) >= 2
    first = next(iter(found.values()))
    assert len(first) > 200
    for engine, got in found.items():
        assert got == first, (engine, sorted(got ^ first)[:10])


def test_hyperscan_database_is_cached(tmp_path, monkeypatch):
    pytest.importorskip("hyperscan")
    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path))
    first = scanner("hyperscan").offsets(HEALTHY + b"loss: inf\n")
    cached = list(tmp_path.glob("hs-*.db"))
    assert len(cached) == 1
    assert scanner("hyperscan").offsets(HEALTHY + b"loss: inf\n") == first
    cached[0].write_bytes(b"not a database")  # a damaged cache: compiled again
    assert scanner("hyperscan").offsets(HEALTHY + b"loss: inf\n") == first


def test_folder_of_small_rank_logs_takes_the_fast_path(tmp_path):
    cascade = (ROOT / "fixtures/cuda-oom/001-rank3-cascade-8ranks/input.log").read_bytes()
    folder = tmp_path / "logs"
    folder.mkdir()
    for r in range(40):
        (folder / f"rank{r}.log").write_bytes(HEALTHY[:60_000] + (cascade if r == 3 else b""))
    ing = Ingest([str(p) for p in sorted(folder.iterdir())], scanner=Analysis(get_rules()).scanner())
    assert sum(1 for _ in ing) < 40 * 300  # heads, tails and the cascade, not every line
    assert ing.skipped_lines > 0
    fast, full = analyze([str(folder)]), analyze([str(folder)], fast=False)
    assert fast.diagnoses[0].signature == full.diagnoses[0].signature == "cuda-oom"
    assert [d.signature for d in fast.diagnoses] == [d.signature for d in full.diagnoses]


def test_prefilter_automaton_finds_what_the_alternation_finds():
    pre = Matcher(get_rules()).prefilter
    assert pre._ac is not None
    ac = pre._ac
    texts = [x for p in LOGS for x in p.read_text(errors="replace").splitlines()]
    texts += noise_lines(per_shape=200)
    try:
        with_ac = [[id(t) for t in pre.hits(x)] for x in texts]
        pre._ac = None
        plain = [[id(t) for t in pre.hits(x)] for x in texts]
    finally:
        pre._ac = ac
    assert with_ac == plain
    assert sum(map(bool, plain)) > 500


def test_noise_corpus_is_many_shapes_and_the_same_every_time():
    lines = noise_lines()
    assert len(lines) >= 40_000 and lines == noise_lines()
    assert len(SHAPES) >= 10
    for marker in (
        "NCCL INFO",
        "[INFO] [",
        "iteration ",
        "'grad_norm'",
        "\r",
        "]: ",
        "I1129",
        "LOCAL_RANK",
        "- INFO -",
    ):
        assert any(marker in x for x in lines), marker


def test_shipped_rules_are_selective_on_the_noise_corpus():
    assert noise_selectivity(get_rules()) == []


RULE = """id = "my-step-guard"
title = "My step guard"
category = "numerics"
summary = "x"
remedies = ["y"]
checks = ["z   # what it tells"]

[[match]]
literal = ["{lit}"]
icase = true
regex = '{rx}'

[examples]
fire = ["{fire}"]
quiet = ["ok"]
"""


def test_noise_lint_names_an_unselective_literal(tmp_path, capsys):
    d = tmp_path / "r"
    d.mkdir()
    (d / "my-step-guard.toml").write_text(
        RULE.format(lit="INFO:", rx=r"INFO:\S+:step \d+", fire="INFO:pkg:step 3")
    )
    assert main(["rules", "lint", "--rules", str(d), "--only"]) == 1
    out = capsys.readouterr().out
    assert "my-step-guard.toml: match[0].literal: 'INFO:'" in out and "noise lines" in out


def test_noise_lint_passes_a_common_literal_with_a_selective_regex(tmp_path):
    d = tmp_path / "r"
    d.mkdir()
    (d / "my-step-guard.toml").write_text(RULE.format(lit=":inf", rx=r"loss:inf\b", fire="loss:inf"))
    from triage.engine.rules import load_rules

    rules = load_rules([d], include_default=False)
    assert noise_selectivity(rules, include_structure=False) == []


def test_fast_path_metric_series_covers_the_whole_run(tmp_path):
    """The loss curve of a big log read on the fast path has points all along the run,
    not only from its head and tail."""
    p = tmp_path / "train.log"
    n = 90_000  # about 6 MiB
    p.write_bytes(
        b"".join(
            f"step {i} loss {3.0 - i * 1e-5:.5f} acc 0.61 tok/s 21512 lr 3.0e-4 pad {'x' * 20}\n".encode()
            for i in range(1, n + 1)
        )
    )
    rep = analyze([str(p)])
    assert any("Fast scan" in x for x in rep.notes)
    steps = sorted(x for s in rep.series if s.name == "loss" for x, _y in s.points)
    assert steps and steps[0] < 300 and steps[-1] > n - 300
    middle = [x for x in steps if n * 0.2 < x < n * 0.8]
    assert len(middle) >= 4  # 1 MiB apart: about six samples in all
    gaps = [b - a for a, b in itertools.pairwise(steps)]
    assert max(gaps) < n / 4


@pytest.mark.parametrize("engine", ENGINES)
def test_caseless_confirm_literal_is_not_hidden_by_a_plain_one(engine):
    """A case-sensitive plain literal ("Error", a structure trigger) and a caseless
    clause literal that lower-cases to the same bytes: both kinds of hits still count."""
    from triage.ingest.scan import Confirm

    sc = LiteralScanner(
        ["Error"],
        [],
        engine=engine,
        confirm=[Confirm(("error",), True, native_superset("error: boom") or "")],
    )
    if sc.engine != engine:
        pytest.skip(f"{engine} not installed")
    buf = b"ok\nERROR: boom\nok\nan Error here\nok\nerror: fine\n"
    assert {1, 3} <= lines_of(buf, sc.offsets(buf))
    assert 5 not in lines_of(buf, sc.offsets(buf)) or engine == "ahocorasick_rs"


def test_pattern_hyperscan_refuses_falls_back_to_its_literals(tmp_path, monkeypatch):
    pytest.importorskip("hyperscan")
    from triage.ingest.scan import Confirm

    monkeypatch.setenv("TRIAGE_CACHE_DIR", str(tmp_path))
    # a pattern that matches the empty string: hyperscan will not compile it
    refused = [Confirm(("boom",), False, "(?:zz)*"), Confirm(("bang",), False, "bang!")]
    buf = b"ok\nboom\nok\nbang!\nbang\n"
    for _ in range(2):  # the second build finds the fallback under the refused set's key
        sc = LiteralScanner([], [], engine="hyperscan", confirm=refused)
        assert lines_of(buf, sc.offsets(buf)) == {1, 3}
    assert len(list(tmp_path.glob("hs-*.db"))) == 2
