"""The native module (triage/_native.c) reads what its Python reference reads: each
metric value of a line as the progress reader's regexes read it, and the lines of each
block's extremes as a plain Python loop over those regexes chooses them; it survives
any bytes; CI builds it and uses the build of the current source."""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import triage.structure.tables as T
from triage import native as native_mod
from triage.native import native as _native

native: Any = _native  # the tests that use it are skipped where it is None

ROOT = Path(__file__).resolve().parent.parent
LOGS = sorted([*(ROOT / "fixtures").glob("*/*/input.log"), *(ROOT / "tests").glob("corpus*/logs/*.log")])

needs_native = pytest.mark.skipif(native is None, reason="the native module is not built here")


# -- the reference ---------------------------------------------------------------------
def _value(rx, text: str) -> float | None:
    m = rx.search(text)
    if m is None:
        return None
    try:
        return float(m.group(1))
    except ValueError:
        return None


def ref_metrics(text: str) -> tuple[float | None, float | None, float | None]:
    """(loss, grad norm, tok/s): what `extremes` reads."""
    return _value(T.LOSS_RE, text), _value(T.GRAD_NORM_RE, text), _value(T.TOKS_RE, text)


def ref_line(text: str) -> tuple[int | None, float | None, float | None, float | None]:
    """(step, loss, grad norm, tok/s): what `metrics` reads."""
    m = T.STEP_RE.search(text)
    return (int(m.group(1)) if m else None, *ref_metrics(text))


def ref_extremes(data: bytes, block: int) -> list[tuple[int, int]]:
    """Of each `block` bytes (by line start): each metric's lowest and highest finite
    value's line (the first on a tie) and the first non-finite loss's line."""
    best: dict[tuple[int, int, str], tuple[float, int]] = {}
    bad: dict[int, int] = {}
    spans: dict[int, int] = {}
    start = 0
    while start < len(data):
        nl = data.find(b"\n", start)
        end = len(data) if nl < 0 else nl + 1
        text = data[start : end - 1 if nl >= 0 else end].decode("ascii")
        spans[start] = end
        b = start // block
        for m, v in enumerate(ref_metrics(text)):
            if v is None:
                continue
            if not math.isfinite(v):
                if m == 0:
                    bad.setdefault(b, start)
                continue
            lo, hi = best.get((b, m, "lo")), best.get((b, m, "hi"))
            if lo is None or v < lo[0]:
                best[b, m, "lo"] = (v, start)
            if hi is None or v > hi[0]:
                best[b, m, "hi"] = (v, start)
        start = end
    starts = {s for _v, s in best.values()} | set(bad.values())
    return [(s, spans[s]) for s in sorted(starts)]


def same(a: tuple[float | None, ...] | None, b: tuple[float | None, ...]) -> bool:
    assert a is not None
    return all(
        (x is None and y is None)
        or (x is not None and y is not None and (x == y or (math.isnan(x) and math.isnan(y))))
        for x, y in zip(a, b, strict=True)
    )


# -- lines to read ---------------------------------------------------------------------
def ascii_lines(data: bytes) -> list[bytes]:
    return [ln for ln in data.split(b"\n") if ln.isascii()]


def log_lines() -> list[str]:
    out: list[str] = []
    for p in LOGS:
        out.extend(ln.decode() for ln in ascii_lines(p.read_bytes()))
    return out


PIECES = (
    "loss",
    "Loss",
    "LOSS",
    "lOsS",
    "'loss'",
    '"loss"',
    "val_loss",
    "loss_scale",
    "xloss",
    "_loss",
    " is ",
    " is",
    "is ",
    "=",
    ":",
    " ",
    "  ",
    "\t",
    "\r",
    "\x1c",
    "'",
    '"',
    "tensor(",
    "TENSOR(",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "+inf",
    "infinity",
    "nanx",
    "1",
    "0",
    "00",
    "1.5",
    "-2.25",
    "+3",
    "1e5",
    "1.5e",
    "1e+",
    "2.5E-3",
    "1.2.3",
    ".5",
    "5.",
    "1e999",
    "12345678901234567890.5",
    "0.000000000000000000000001",
    "x",
    "_",
    "é",
    "grad_norm",
    "gradnorm",
    "GRAD_NORM",
    "grad norm",
    "grad_norm'",
    "tok/s",
    "TOK/S",
    "tokens/s",
    "tokens_per_second",
    "tokens_per_sec",
    "tok_per_s",
    "tok",
    "to",
    "lo",
    "gr",
    "step",
    "STEP",
    "Step",
    "_step",
    "global_step",
    "GLOBAL_STEP",
    "iter",
    "iteration",
    "iterations",
    "Iter",
    "xstep",
    "step:",
    "step=",
    "00000000000000000000000000042",
    ",",
    "|",
    "[",
    "]",
    "{",
    "}",
    "(",
    ")",
    "\u00a0",
)


def generated_lines(n: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    return ["".join(rnd.choice(PIECES) for _ in range(rnd.randint(1, 12))) for _ in range(n)]


# -- the tests -------------------------------------------------------------------------
@needs_native
def test_a_lines_values_are_what_the_regexes_read():
    lines = log_lines() + generated_lines(30_000, seed=16)
    checked = 0
    for text in lines:
        got = native.metrics(text)
        if not text.isascii():
            assert got is None, text
            continue
        assert same(got, ref_line(text)), (text, got, ref_line(text))
        checked += 1
    assert checked > 20_000


@needs_native
@pytest.mark.parametrize("block", [1, 97, 4096, 1 << 20])
def test_the_extremes_are_the_references(block):
    logs = b"\n".join(b"\n".join(ascii_lines(p.read_bytes())) for p in LOGS)
    gen = "\n".join(t for t in generated_lines(8000, seed=block) if t.isascii()).encode()
    for data in (logs, gen, gen + b"\n", b"", b"\n\n", b"loss 1", b"step 1 loss nan\nloss=2\n"):
        assert native.extremes(data, block) == ref_extremes(data, block)


@needs_native
def test_a_spike_between_samples_is_chosen():
    rows = [f"step {i} loss {2.0 - i * 1e-4:.4f} grad_norm 1.0 tok/s 21000\n" for i in range(20_000)]
    rows[12_345] = "step 12345 loss 9.75 grad_norm 88.0 tok/s 300\n"
    data = "".join(rows).encode()
    chosen = {data[s:e] for s, e in native.extremes(data, len(data) + 1)}
    assert rows[12_345].encode() in chosen  # the highest loss, grad norm; the lowest tok/s
    assert len(chosen) <= 7


@needs_native
def test_any_bytes_are_safe_and_give_whole_lines():
    rnd = random.Random(7)
    alphabet = b"loss: grad_norm=tok/s 1.5e3nan\n\r\x00\xff\xe9'\"tensor("
    for _ in range(300):
        data = bytes(rnd.choice(alphabet) for _ in range(rnd.randint(0, 400)))
        for block in (1, 16, 1 << 20):
            spans = native.extremes(data, block)
            assert spans == sorted(set(spans))
            for s, e in spans:
                assert s == 0 or data[s - 1] == ord("\n")
                assert e == len(data) or data[e - 1] == ord("\n")
                assert b"\n" not in data[s : e - 1]
    with pytest.raises(ValueError):
        native.extremes(b"loss 1\n", 0)
    with pytest.raises(TypeError):
        native.metrics(b"loss 1")


def test_ci_builds_the_current_source():
    """On CI the README's install builds the module, and its build is of this source (a
    stale build would be ignored, and the fast path would lose its full series)."""
    if not os.environ.get("CI"):
        pytest.skip("checked on CI, where a C compiler is present")
    assert native is not None, native_mod.status()


def test_a_stale_build_is_not_used(tmp_path, monkeypatch):
    """triage/native.py loads the module only when it was built from the source beside
    it, and not at all with TRIAGE_NATIVE=0."""
    code = "import triage.native as n; print(n.native is not None)"
    env = {**os.environ, "TRIAGE_NATIVE": "0"}
    off = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert off.stdout.strip() == "False"
    if native is None:
        pytest.skip("no build to check")
    src = Path(native_mod.__file__).with_name("_native.c")
    assert native_mod.load(src) is native
    changed = tmp_path / "_native.c"
    changed.write_bytes(src.read_bytes() + b"/* an edit not yet built */\n")
    assert native_mod.load(changed) is None
    monkeypatch.setenv("TRIAGE_NATIVE", "0")
    assert native_mod.load(src) is None


# -- plain: a line cleaned and peeled --------------------------------------------------
# Prefix pieces in the shapes the rows of normalize.PREFIXES read, near misses beside
# them; "#" is a run of digits of a random length, "9" one digit of another script.
PREFIX_PIECES = (
    "[default#]:",
    "[trainer#]: ",
    "[role#]:\t",
    "[def#]:",
    "[rank#]:",
    "[rank#]: ",
    "rank#]: ",
    "rank#: ",
    "rank#:",
    "[#,#]<stdout>:",
    "[#,#]<stderr>: ",
    "[#,#]<stdin>:",
    "node-#: #: ",
    "a-#: #: ",
    "-#: #: ",
    "(RayTrainWorker pid=#, ip=10.0.0.#) ",
    "(pid=#) ",
    "(w, rank=#, pid=#)",
    "(x,pid=#)",
    "(pid=)",
    "(raylet) ",
    "(raylet, ip=1.2.3.#)",
    "[pod/a-#/b.c] ",
    "[pod/a/] ",
    "trainer-#  | ",
    "trainer-#  |   ",
    "svc  | x",
    "ab |",
    "x_# | ",
    "####-##-## ##:##:##,### ",
    "####-##-##T##:##:##.#Z ",
    "[####/##/## ##:##:##] ",
    "####-##-## ##:##:##.##########|",
    "####-##-## ##:##:##+##:##: ",
    "[####-##-## ##:##:##][",
    "####-##-## ##:##:##-####",
    "[trainer ####-##-## ##:##:##] ",
    "[x ####-##-## ##:##:##,#]",
    "I#### ##:##:##.# # file.py:#] ",
    "[W#### ##:##:##.####### a:b:#]",
    "E#### ##:##:## # #:#] ",
    "F#### ##:##:## x]",
    "[W a/b.cc:#] ",
    "[I x:#]",
    "Nov  # ##:##:## host kernel: ",
    "Foo # ##:##:##.# h p[#]: ",
    "Dec ### ##:##:## a b: ",
    "Tue Nov # ##:##:## #### ",
    "Sun Jan ## ##:##:## ####[",
    "Mon Xyz # ##:##:## #### ",
    "[Tue Nov # ##:##:## ####] ",
    "[Tue Nov # ##:##:## #####]",
    "[ #.######] ",
    "[#.##] ",
    "##:##:## ",
    "[##:##:##,#] ",
    "##:##:##.#]\t",
    "##:##:##",
    "[INFO] [a.py:#:f] ",
    "[WARNING]",
    "[INFO] [x:#:] ",
    "INFO:root:",
    "WARNING:pkg.train:",
    "INFOX:a:",
    "x - INFO - ",
    "- a.b - ERROR - ",
    "-- WARN - ",
    "[INFO|a.py:#] ####-##-## ##:##:##,### >> ",
    "[INFO|a.py:#]  >> ",
    "[ERR|x:#]",
    "[app][INFO] - ",
    "[ INFO ] ",
    "[INFO ]",
    "WARNING: ",
    "ERROR | ",
    "INFO - ",
    "INFO -",
    "ERRORS: ",
    "a.py:#] ",
    "x.b.py:#]\t",
    ".py:#] ",
    "^C^C",
    "^C ",
    "^C",
    "  # | ",
    "  #│ ",
    "        # | ",
    "########|",
    "[#] ",
    "[#]  ",
    "L#: ",
    "#: ",
    "  #: ",
    "    #: ",
    "#:",
)
PLAIN_TAILS = (
    "",
    " ",
    "\t",
    "\u00a0",
    "\u3000",
    "é",
    "日本語",
    "]",
    "[",
    ":",
    "|",
    "-",
    " - ",
    ">>",
    ".",
    "x",
    "step 10 loss 2.3",
    "Traceback (most recent call last):",
    '  File "t.py", line 3',
    "RuntimeError: x",
    " 50%|███       | 5/10 [00:01<00:01, 2.00it/s]",
    " 7%|#| 1/9 [00:01<00:09] x",
    "|1/2 [x]",
    "/? [",
    "\\n",
    "\\n  File",
    "\r",
    "\r \r",
    "\r\u00a0",
    "█▉",
)


def prefixed_lines(n: int, seed: int) -> list[bytes]:
    rnd = random.Random(seed)

    def fill(piece: str) -> str:
        out = []
        for ch in piece:
            if ch == "#":
                ch = (
                    "\u0663"
                    if rnd.random() < 0.01
                    else str(rnd.randint(0, 10 ** rnd.choice((1, 2, 4, 8, 19))))
                )
            out.append(ch)
        return "".join(out)

    lines = []
    for _ in range(n):
        text = "".join(fill(rnd.choice(PREFIX_PIECES)) for _ in range(rnd.choice((1, 1, 2, 3, 4, 6))))
        text += rnd.choice(PLAIN_TAILS)
        if rnd.random() < 0.05:
            text = rnd.choice(("", "  ")) + "\r" + text + rnd.choice(("", "\r"))
        data = text.encode()
        lines.append(data + b"\xff" if rnd.random() < 0.01 else data)
    return lines


def _plain_differences(lines: list[bytes]) -> tuple[int, list[Any]]:
    """(lines the module read, those where it read other than the Python path)."""
    from triage.ingest.normalize import SourceState, normalize_plain_python, peeled

    read, bad = 0, []
    mine, theirs = SourceState(), SourceState()
    for data in lines:
        got = native.plain(data)
        if got is None:
            continue
        read += 1
        a, b = peeled(got, mine), normalize_plain_python(data, theirs)
        if b is None or (a.text, a.rank, a.ts) != (b.text, b.rank, b.ts) or mine != theirs:
            bad.append((data, got, b))
            mine, theirs = SourceState(), SourceState()
    return read, bad


@needs_native
def test_plain_peels_every_log_line_as_the_python_path_does():
    lines = [ln for p in LOGS for ln in p.read_bytes().split(b"\n")]
    read, bad = _plain_differences(lines)
    assert bad == []
    assert read > 0.9 * len(lines)


@needs_native
@pytest.mark.parametrize("seed", [1, 2])
def test_plain_peels_generated_prefixes_as_the_python_path_does(seed):
    lines = prefixed_lines(25_000, seed)
    read, bad = _plain_differences(lines)
    assert bad[:5] == []
    assert read > 0.8 * len(lines)


@needs_native
def test_plain_counts_srun_labels_as_the_source_state_does():
    """Labels that count up line by line are line numbers (SourceState), after 20."""
    lines = [f"{i}: step {i} loss 1.0".encode() for i in range(1, 40)]
    lines += [b"3: [rank5]: x", b"[rank5]: 3: x", b"  7: x", b"12345: x", b"1: 2: x"]
    read, bad = _plain_differences(lines)
    assert bad == [] and read == len(lines) - 1  # two labels on a line: the Python path


@needs_native
def test_plain_knows_the_rows_in_table_order():
    from triage.ingest.normalize import PREFIXES

    assert tuple(name for name, _rx, _h in PREFIXES) == native.PREFIX_ROWS


@needs_native
def test_plain_leaves_what_it_cannot_read_to_python():
    for data in (b"\x1b[31mred\x1b[0m", b"a\x00b", b"x\\n  File", b"10%|#| 1/9 [00:01<00:09] glued"):
        assert native.plain(data) is None, data
    assert native.plain(b"[rank1]: 2026-01-02 03:04:05 hi")[:3] == ("hi", 1, 1767323045.0)
    assert native.plain(b"\xffx")[0] == "\ufffdx"  # any bytes: decoded as _clean decodes them
    assert native.plain("not bytes") is None


# -- bar: a tqdm bar's count and clock -------------------------------------------------
BAR_PIECES = (
    "1", "12", "123", "/", "0/10", " [", "[", "00:01<", "1:02:03<", "14:27:51<", "1 day, ",
    "2 days, ", "3 day,", "x", "%|", " ", "  45%|####  |", ":", "<", "]", "9" * 20, "Epoch 1: ",
    "00:0", "1:2:3<", "12:345<", "é",
)  # fmt: skip


@needs_native
def test_bar_reads_what_the_regex_reads():
    from triage.structure.progress import bar_of

    rnd = random.Random(11)
    lines = [
        ln for p in LOGS for ln in p.read_bytes().decode("utf-8", "replace").replace("\r", "\n").split("\n")
    ]
    lines = [ln for ln in lines if "<" in ln and " [" in ln]
    lines += ["".join(rnd.choice(BAR_PIECES) for _ in range(rnd.randint(1, 10))) for _ in range(30_000)]
    read = 0
    for text in lines:
        got = native.bar(text)
        if got is False:
            assert not text.isascii() or "9" * 19 in text, text
            continue
        read += 1
        assert got == bar_of(text), text
    assert read > 0.8 * len(lines)


# -- phase: the phase a line marks -----------------------------------------------------
def _phase_pieces() -> list[str]:
    pieces = [lit for _name, rows in T.PHASE_MARKERS for lits, _rx in rows for lit in lits]
    return [
        *pieces,
        "Loading the ", "Loading 3 ", "target ", "pretrained ", "models", "model", "s", " shards",
        "checkpoint", "the ", "latest ", "distributed ", "sharded ", "Resuming from ",
        "Resume training from ", "full ", "a ", "(num_proc=4):", ":", "=", " ", "1", "12", "/",
        "3/10 [", "00:01<", "1:02:03<", "x", "_", "é", "\u0663", "ation", " step", " loss",
        "uation", "split", "train ", "test ", "on ", "[", "]", "aving ", "S", "L", "l", "R", "{",
    ]  # fmt: skip


@needs_native
def test_phase_is_what_the_phase_alternation_finds():
    from triage.structure.progress import _search_any

    assert tuple(name for name, _rows in T.PHASE_MARKERS) == native.PHASE_NAMES
    rnd = random.Random(5)
    pieces = _phase_pieces()
    lines = [
        ln for p in LOGS for ln in p.read_bytes().decode("utf-8", "replace").replace("\r", "\n").split("\n")
    ]
    lines += ["".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 8))) for _ in range(40_000)]
    found = 0
    for text in lines:
        got = native.phase(text)
        name = None if got is None else native.PHASE_NAMES[got]
        assert name == _search_any(text), text
        found += name is not None
    assert found > 10_000


@needs_native
def test_the_c_is_used_only_while_it_reads_the_python_tables(monkeypatch):
    """plain(), bar() and phase() were written from normalize.PREFIXES, _BAR_RE and
    tables.PHASE_MARKERS: the module says which regexes, and a table edited since is
    read in Python."""
    from triage.ingest import normalize
    from triage.structure import progress

    assert normalize.native_plain is native.plain
    assert progress.phase_of._native is native.phase
    assert progress._native_bar is native.bar
    rows = (*(rx.pattern for _name, rx, _h in normalize.PREFIXES), normalize.SRUN_LABEL.pattern)
    assert native_mod.written_from("plain", PREFIX_PATTERNS=rows) is native.plain
    edited = (rows[0] + "x?", *rows[1:])
    assert native_mod.written_from("plain", PREFIX_PATTERNS=edited) is None
    assert native_mod.written_from("bar", BAR_PATTERNS=(progress._BAR_RE.pattern + "x?",)) is None
    phase, markers = T.PHASE_MARKERS[-1]
    monkeypatch.setattr(T, "PHASE_MARKERS", [*T.PHASE_MARKERS[:-1], (phase, (*markers, (("zz",), "zz")))])
    assert progress._PhaseFinder()._native is None


@needs_native
def test_line_is_the_line_the_python_builder_makes():
    import dataclasses
    import gc
    import pickle

    from triage.model import Line, _line_builder

    native.line_type(Line)
    for args in (("a.log", 3, "text", 2, 9, 1.5), ("<stdin>", 1, "", None, 0, None)):
        a, b = native.line(*args), _line_builder()(*args)
        assert type(a) is Line and a == b and hash(a) == hash(b)
        assert dataclasses.astuple(a) == (*args, "")
        assert pickle.loads(pickle.dumps(a)) == a
        assert not gc.is_tracked(a)  # strings and numbers only: in no cycle
        with pytest.raises(dataclasses.FrozenInstanceError):
            a.text = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        native.line("a", 1, "x")
    with pytest.raises(TypeError):
        native.line("a", 1, ["x"], None, 0, None)  # only what cannot be in a cycle
    with pytest.raises(TypeError):
        native.line_type(int)


@needs_native
def test_the_rows_plain_skips_by_first_character_cannot_match_there():
    """plain() tries only the rows a line's first character may start (PREFIX_LEADS):
    every other row's regex matches no line led by that character."""
    from triage.ingest.normalize import PREFIXES

    rnd = random.Random(3)
    tails = [t.replace("#", "1") for t in PREFIX_PIECES] + ["", " x", "1: x", "12:34:56 x", "INFO - x"]
    for i, (name, rx, _h) in enumerate(PREFIXES):
        for c in map(chr, range(128)):
            if native.PREFIX_LEADS[ord(c)] >> i & 1:
                continue
            for tail in rnd.sample(tails, 40):
                assert rx.match(c + tail) is None, (name, c + tail)
