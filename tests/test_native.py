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
