"""A log hard-wrapped at a terminal's width is read as if it had not been; a log whose
long lines only look alike (padding, banners, one message every rank repeats, a logger
that shortens messages) is left as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.engine import analyze_text, get_rules
from triage.ingest.lines import SourceLines, lines_from_text, split_lines
from triage.ingest.unwrap import wrap_width

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(ROOT.glob("fixtures/*/*/input.log"))


def hard_wrap(text: str, width: int, newline: str = "\n") -> str:
    """What a terminal `width` columns wide shows of `text`, copied out."""
    out = []
    for line in text.split("\n"):
        while len(line) > width:
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return newline.join(out)


def top(text: str) -> tuple[str, str] | None:
    r = analyze_text(text, rules=get_rules())
    return (r.diagnoses[0].signature, r.diagnoses[0].confidence.label) if r.diagnoses else None


@pytest.mark.parametrize("width", [80, 100, 120])
def test_every_fixture_wrapped_at_a_terminal_width_reads_as_before(width: int) -> None:
    differ = []
    for path in FIXTURES:
        text = path.read_text(encoding="utf-8", errors="replace")
        if top(hard_wrap(text, width)) != top(text):
            differ.append(path.parent.name)
    # without joining, 14 of 108 differed at 100 columns and 26 at 80
    assert len(differ) <= len(FIXTURES) // 50, differ


def test_a_wrapped_line_is_joined_and_keeps_its_first_number() -> None:
    msg = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 3; 79.10 GiB total capacity)"
    lines = [f"step {i} loss 2.{i:02d}" for i in range(5)] + [
        "Traceback (most recent call last):",
        '  File "/srv/job/train.py", line 88, in <module> -- a frame line long enough to be cut',
        "    out = model(**batch)",
        msg,
        "some other line that is long enough to be cut by the terminal at its width too, yes",
    ]
    wrapped = hard_wrap("\n".join(lines) + "\n", 64, "\r\n")
    src = SourceLines("train.log")
    got = list(src.text(wrapped))
    texts = [x.text for x in got]
    assert msg in texts and got[texts.index(msg)].lineno == 10
    assert src.info().lines == wrapped.count("\n")  # the physical lines, all read
    assert any("hard-wrapped at 64 columns" in n for n in src.notes)
    assert top(wrapped) == ("cuda-oom", "confirmed")


def _raws(text: str) -> list:
    return list(split_lines([text.encode()]))


@pytest.mark.parametrize(
    "text",
    [
        # every rank prints the same long message: as long each time, not cut
        "\n".join(
            [
                f"[rank{i % 8}]: W ProcessGroupNCCL.cpp:1234 ... a long warning that every rank prints."
                for i in range(16)
            ]
            + ["short"] * 10
        ),
        # a pane's border pads every line to the same width
        "\n".join(f"step {i} loss 2.{i:02d}".ljust(90) + "x" for i in range(40)),
        # Megatron's iteration lines, padded, ending in "|"
        "\n".join(
            [
                f" [2025-10-02 12:20:{i:02d}] iteration {i:7d}/ 50 | lr: 1.0E-04 | " + "loss 2.3 |".rjust(60)
                for i in range(12)
            ]
            + ["Step Time : 7.1s"] * 12
        ),
        # a banner as wide as the widest line
        "\n".join(["=" * 80, "Epoch 1 of 3: training the model on the data", "=" * 80] * 5),
        # a logger that cuts its messages at 100 characters: each next line is a new record
        "\n".join(("2026-12-02 03:44:01,123 INFO trainer: " + "x" * 100)[:100] for _ in range(5))
        + "\n"
        + "\n".join(f"2026-12-02 03:44:0{i},123 INFO step {i}" for i in range(9)),
    ],
    ids=["repeated", "padded-pane", "megatron-padded", "banner", "shortening-logger"],
)
def test_lines_that_only_look_wrapped_are_left_alone(text: str) -> None:
    assert wrap_width(_raws(text)) is None
    assert [x.text for x in lines_from_text(text)] == [x.text for x in lines_from_text(text + "\n")][
        : len(text.split("\n"))
    ]


def test_a_short_log_or_a_narrow_terminal_is_not_unwrapped() -> None:
    assert wrap_width(_raws("a\nb\n")) is None
    assert wrap_width(_raws(hard_wrap("word " * 200, 40))) is None  # under MIN_WIDTH
