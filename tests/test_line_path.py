"""The per-line path's shortcuts say what the plain regexes say.

The hot path skips regexes behind cheap literal tests (the phase markers' literals, the
prefix peeler's first-character guard, the metric readers' substring guards). Each
shortcut must be exact: here every line of every fixture and corpus log, plus a few
made-up edge cases, is read both ways and the answers compared.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import triage.ingest.normalize as N
import triage.structure.tables as T
from triage.ingest.lines import lines_from_text, split_lines
from triage.ingest.normalize import Peeled, SourceState, normalize, normalize_plain, peel
from triage.structure.progress import _search_any, phase_of, step_loss

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ["fixtures", *(f"tests/{d}" for d in ("corpus", "corpus_heldout", "corpus_heldout2"))]
FOLDERS += ["tests/corpus_heldout3", "tests/corpus_heldout4", "tests/corpus_real"]

EDGE = [
    "",
    "step",
    "global_step=12 loss=1.0",
    "Loading checkpoint shards: 100%|##########| 2/2 [00:01<00:00,  1.2it/s]",
    "INFO:pkg.ckpt:Saving checkpoint to /ckpt/step_100/model.safetensors",
    "Resuming training from the latest checkpoint at step 40",
    "Loading the dataset ... Loading model ... Compiling",
    "epoch 3 iter 7 eval loss 2.0",
    "***** Running Evaluation ***** ***** Running training *****",
    "NCCL INFO Bootstrap : Using eth0 | NCCL INFO Channel 00/02",
    "  12 | [rank3]: 2026-11-29 12:00:01,123 - INFO - step 5",
    "[default0]:[rank0]:[E1129 13:02:11.1 ProcessGroupNCCL.cpp:616] watchdog",
    "rank12: INFO:x:y",
    "L12: text",
    "^C^CTraceback (most recent call last):",
    "ERROR | something",
    "\t 7 │ indented viewer line",
]


def _texts() -> Iterator[str]:
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.log")):
            for line in lines_from_text(path.read_bytes(), str(path)):
                yield line.text
    yield from EDGE


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return list(_texts())


def test_phase_markers_join_to_the_phase_regexes() -> None:
    for (name, rx), (name2, markers) in zip(T.PHASES, T.PHASE_MARKERS, strict=True):
        assert name == name2
        assert rx.pattern == "|".join(r for _lits, r in markers)
        for lits, r in markers:
            assert lits, f"{name}: a marker with no literal: {r}"
            if len(lits) == 1 and lits[0] == r:
                assert re.escape(r) == r or re.fullmatch(r, r), f"{name}: {r} is not plain"


def test_phase_of_agrees_with_the_alternation(texts: list[str]) -> None:
    bad = [t for t in texts if phase_of(t) != _search_any(t)]
    assert not bad[:5]


def peel_plain(text: str, state: SourceState) -> Peeled:
    """The prefix peeler with no shortcut: every row tried on every step."""
    p = Peeled(text)
    t = text
    for _ in range(8):
        m = N.SRUN_LABEL.match(t)
        if m:
            N._srun_label(int(m.group("r")), state, p)
            t = t[m.end() :]
            continue
        m2 = N.PREFIX_ANY.match(t)
        if m2 is None or m2.lastgroup is None or not 0 < m2.end() < len(t):
            break
        rx, handler = N._ROWS[m2.lastgroup]
        if handler is not None:
            handler(rx.match(t), p)  # type: ignore[arg-type]
        t = t[m2.end() :]
    p.text = t
    return p


def test_peel_agrees_with_the_plain_peeler(texts: list[str]) -> None:
    for t in texts:
        for x in (t, t.lstrip(), t.lower(), t.upper()):
            a, b = peel(x, SourceState()), peel_plain(x, SourceState())
            assert (a.text, a.rank, a.ts) == (b.text, b.rank, b.ts), x


_ASCII = [chr(i) for i in range(128)]
_CATEGORY = {"DIGIT": r"\d", "NOT_DIGIT": r"\D", "SPACE": r"\s", "NOT_SPACE": r"\S", "WORD": r"\w"}
_CATEGORY["NOT_WORD"] = r"\W"


def _in_class(items: list[tuple[Any, Any]], ch: str) -> bool:
    """Whether ASCII `ch` is in a parsed character class."""
    hit, negate = False, False
    for op, av in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            hit |= ch == chr(av)
        elif name == "RANGE":
            hit |= av[0] <= ord(ch) <= av[1]
        elif name == "CATEGORY":
            hit |= re.fullmatch(_CATEGORY[str(av).removeprefix("CATEGORY_")], ch) is not None
        else:
            raise AssertionError(f"class item {name}")
    return hit != negate


def _first(seq: Any) -> tuple[set[str], bool]:
    """The ASCII characters a match of a parsed pattern can start with, and whether it
    can match the empty string."""
    out: set[str] = set()
    for op, av in seq:
        name = str(op)
        if name in ("AT", "ASSERT", "ASSERT_NOT"):
            continue  # zero-width: the next item decides (a superset of the truth)
        if name == "LITERAL":
            return out | {chr(av)}, False
        if name in ("ANY", "NOT_LITERAL"):
            return out | set(_ASCII), False
        if name == "IN":
            return out | {c for c in _ASCII if _in_class(av, c)}, False
        if name == "SUBPATTERN":
            chars, empty = _first(av[-1])
        elif name == "BRANCH":
            subs = [_first(b) for b in av[1]]
            chars, empty = set().union(*(c for c, _e in subs)), any(e for _c, e in subs)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            chars, empty = _first(av[2])
            empty = empty or av[0] == 0
        else:
            raise AssertionError(f"op {name}")
        out |= chars
        if not empty:
            return out, False
    return out, True


def test_prefix_rows_by_first_character() -> None:
    """The rows peel tries for a line led by a lower- or upper-case letter are all the
    rows whose regex can start with one (the word-led rows' needed substrings: each one's
    regex holds its substring outside any optional part)."""
    parser = importlib.import_module("re._parser")
    for name, rx, _h in N.PREFIXES:
        chars, empty = _first(parser.parse(rx.pattern))
        assert not empty, name
        if chars & N._WORD_LED:
            assert name in N._WORD_ROWS, name
        if chars & N._UPPER_LED:
            assert name in N._UPPER_ROWS, name
    needs = {
        "slurm-node-rank": r"\d+: ",
        "compose": r"\s+\|",
        "py-logging-dash": " - ",
        "logger-name": r"\.py:",
    }
    assert set(needs) == N._WORD_ROWS
    patterns = {name: rx.pattern for name, rx, _h in N.PREFIXES}
    for name, need in needs.items():
        assert need in patterns[name], name


def test_step_loss_agrees_with_the_regexes(texts: list[str]) -> None:
    for t in texts:
        for x in (t, t.upper()):
            ms = T.STEP_RE.search(x) if ("step" in x or "iter" in x) else None
            ml = T.LOSS_RE.search(x) if "loss" in x else None
            want_loss = None
            if ml:
                try:
                    want_loss = float(ml.group(1))
                except ValueError:
                    want_loss = None
            got = step_loss(x)
            want = (int(ms.group(1)) if ms else None, want_loss)
            assert repr(got) == repr(want), x


def test_normalize_plain_agrees_with_normalize() -> None:
    """A line the one-piece path takes gives what `normalize` gives (and `normalize`
    gives one line wherever the one-piece path declines only for its own reasons)."""
    taken = 0
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.log")):
            for raw in split_lines([path.read_bytes()]):
                one = normalize_plain(raw.data, SourceState())
                whole = [(p.text, p.rank, p.ts) for p in normalize(raw.data, SourceState())]
                if one is not None:
                    taken += 1
                    assert whole == [(one.text, one.rank, one.ts)], raw.data[:200]
    assert taken > 10_000


def _logs() -> list[Path]:
    folders = [*FOLDERS, "tests/corpus_real3", "tests/corpus_real4"]
    return [p for folder in folders for p in sorted((ROOT / folder).rglob("*.log"))]


@pytest.mark.parametrize("size", [1, 7, 2048])
def test_a_batch_reads_as_its_lines_one_by_one(size: int) -> None:
    """`Analysis.feed_batch` (what `analyze` feeds) gives the report that `feed` of
    each line gives (what the watcher feeds), for batches that cut tracebacks, reports
    and quoted frames at every place (size 7) and for whole logs (2048)."""
    from triage.engine import Analysis, analyze_lines, get_rules
    from triage.ingest import Ingest
    from triage.report import render_to_string

    rules = get_rules()
    differ = []
    for path in _logs():
        ing = Ingest([str(path)])
        lines = list(ing)
        one = render_to_string(analyze_lines(lines, ing.sources, rules=rules), "json")
        a = Analysis(rules)
        for i in range(0, len(lines), size):
            a.feed_batch(lines[i : i + size])
        if render_to_string(a.report(ing.sources), "json") != one:
            differ.append(str(path.relative_to(ROOT)))
    assert not differ, f"{len(differ)} logs read otherwise in batches of {size}: {differ[:5]}"


def test_a_batch_without_the_automaton_reads_every_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ahocorasick-rs a batch is fed line by line: the same report."""
    import triage.structure as S
    from triage.engine import Analysis, analyze_text, get_rules
    from triage.ingest.literals import LinesWith

    text = (ROOT / "fixtures/cuda-oom/001-rank3-cascade-8ranks/input.log").read_text()
    want = analyze_text(text)
    monkeypatch.setattr(S, "_TRIGGERS", LinesWith(()))
    monkeypatch.setattr(S._TRIGGERS, "available", False)
    a = Analysis(get_rules())
    a.feed_batch(list(lines_from_text(text)))
    assert a.report(list(want.sources)).diagnoses == want.diagnoses
    assert a.lines == len(list(lines_from_text(text)))


def test_lines_with_maps_each_hit_to_its_line(texts: list[str]) -> None:
    """The batch finder's lines are those a per-line test finds, also where a
    character lower-cases to two ("İ") and so moves every later offset."""
    from triage.ingest.literals import LinesWith

    lits = ["error", "x y", "traceback (most recent call last)", "nccl"]
    edge = ["İİ ERROR", "", "no", "x y and Error", "x\ty", "İ" * 40 + "nccl", "a\nb error", "nccl"]
    for batch in (edge, texts[:5000], texts[5000:20000]):
        want = {i: {j for j, lit in enumerate(lits) if lit in t.lower()} for i, t in enumerate(batch)}
        want = {i: v for i, v in want.items() if v}
        assert LinesWith(lits, caseless=True).of(batch) == want
        assert set(LinesWith(lits, caseless=True, which=False).of(batch)) == set(want)
    with pytest.raises(ValueError):
        LinesWith(["a\nb"])
