"""ingest: decoding, ANSI, redraws, glued bars, prefixes, ranks, compression, caps."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from triage.errors import TriageError
from triage.ingest import Ingest, expand_paths
from triage.ingest.normalize import SourceState, normalize, peel, resolve_redraws, split_glued
from triage.ingest.reader import HEAD_KEEP, MAX_LINE, split_lines


def norm(line: str) -> list[tuple[str, int | None]]:
    return [(p.text, p.rank) for p in normalize(line.encode(), SourceState())]


@pytest.mark.parametrize("raw,text,rank", [
    ("[rank3]: torch.OutOfMemoryError: CUDA out of memory", "torch.OutOfMemoryError: CUDA out of memory", 3),
    ("[default5]:[rank5]: ValueError: bad", "ValueError: bad", 5),
    ("[1,7]<stderr>: RuntimeError: x", "RuntimeError: x", 7),
    ("12: KeyError: 'a'", "KeyError: 'a'", 12),
    ("[rank2]:[E1129 17:32:24.829000000 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught",
     "[Rank 2] Watchdog caught", 2),
    ("E1129 13:02:11.123456 4242 torch/distributed/run.py:874] failed (exitcode: -9)",
     "failed (exitcode: -9)", None),
    ("2026-11-29 13:02:11,123 - root - ERROR - loss is nan", "loss is nan", None),
    ("2026-11-29T13:02:11.123456789Z RuntimeError: boom", "RuntimeError: boom", None),
    ("Nov 29 13:02:11 node17 python[4242]: RuntimeError: boom", "RuntimeError: boom", None),
    ("[2026-11-29 13:02:11,001] [INFO] [engine.py:12:step] hello", "hello", None),
    ("INFO:torch.distributed.run:starting", "starting", None),
    ("[pod/trainer-0/main] RuntimeError: boom", "RuntimeError: boom", None),
    ("  1234 | RuntimeError: boom", "RuntimeError: boom", None),
])
def test_prefixes_are_peeled(raw, text, rank):
    out = norm(raw)
    assert out == [(text, rank)]


def test_ansi_and_redraws():
    raw = "\x1b[32mEpoch 1:  10%|#   | 1/10\rEpoch 1:  20%|##  | 2/10\x1b[0m\r"
    assert norm(raw) == [("Epoch 1:  20%|##  | 2/10", None)]
    assert resolve_redraws("a\rb\r") == "b"


def test_text_glued_after_progress_bar_is_split():
    raw = "100%|##########| 10/10 [00:02<00:00,  4.51it/s]RuntimeError: CUDA error: an illegal memory access was encountered"
    texts = [t for t, _ in norm(raw)]
    assert texts[-1] == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert texts[0].startswith("100%|")


def test_collapsed_newlines_are_split():
    raw = 'Traceback (most recent call last):\\n  File "a.py", line 1, in <module>\\nValueError: x'
    parts = split_glued(raw)
    assert parts[-1] == "ValueError: x"


def test_srun_line_numbers_are_not_ranks():
    state = SourceState()
    ranks = [peel(f"{i}: hello", state).rank for i in range(1, 40)]
    assert ranks[-1] is None  # consecutive numbering: a viewer's line numbers


def test_huge_line_is_capped_with_marker():
    data = b"x" * (3 * MAX_LINE) + b"\nnext\n"
    lines = list(split_lines([data[i:i + 1000] for i in range(0, len(data), 1000)]))
    assert len(lines) == 2
    assert lines[0].cut_bytes > 0
    assert lines[0].data.startswith(b"x" * HEAD_KEEP)
    assert b"bytes cut" in lines[0].data
    assert lines[1].data == b"next"


def test_last_line_without_newline_is_incomplete():
    lines = list(split_lines([b"a\nb"]))
    assert [(x.data, x.complete) for x in lines] == [(b"a", True), (b"b", False)]


def test_gzip_and_folder_of_ranks(tmp_path: Path):
    d = tmp_path / "logs"
    d.mkdir()
    (d / "rank0.log").write_text("step 1 loss 2.0\n")
    with gzip.open(d / "rank1.log.gz", "wt") as fh:
        fh.write("ValueError: boom\n")
    ing = Ingest(expand_paths([str(d)]))
    got = [(line.text, line.rank) for line in ing]
    assert got == [("step 1 loss 2.0", 0), ("ValueError: boom", 1)]
    assert [s.ranks for s in ing.sources] == [(0,), (1,)]


def test_truncated_gzip_keeps_lines_read(tmp_path: Path):
    p = tmp_path / "t.log.gz"
    blob = gzip.compress(("line\n" * 20000).encode())
    p.write_bytes(blob[: len(blob) // 2])
    ing = Ingest([str(p)])
    n = sum(1 for _ in ing)
    assert n > 0
    assert ing.sources[0].truncated
    assert any("damaged or cut off" in x for x in ing.notes)


def test_zstd(tmp_path: Path):
    zstd = pytest.importorskip("zstandard")
    p = tmp_path / "t.log.zst"
    p.write_bytes(zstd.ZstdCompressor().compress(b"hello\nworld\n"))
    assert [x.text for x in Ingest([str(p)])] == ["hello", "world"]


def test_missing_and_empty_folder(tmp_path: Path):
    with pytest.raises(TriageError, match="no such file"):
        expand_paths([str(tmp_path / "nope.log")])
    with pytest.raises(TriageError, match="no log files"):
        expand_paths([str(tmp_path)])


def test_invalid_utf8_and_nul():
    out = [p.text for p in normalize(b"bad \xff\xfe byte \x00 here", SourceState())]
    assert out == ["bad \ufffd\ufffd byte  here"]


def test_damaged_gzip_keeps_the_unfinished_last_line(tmp_path: Path):
    body = b"step 1 loss 2.0\n" * 10 + b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB"
    blob = gzip.compress(body)
    p = tmp_path / "c.log.gz"
    p.write_bytes(blob[:-8])  # the trailer (CRC, size) is cut: the data itself is complete
    ing = Ingest([str(p)])
    texts = [x.text for x in ing]
    assert texts[-1].startswith("torch.OutOfMemoryError")
    assert ing.sources[0].truncated
