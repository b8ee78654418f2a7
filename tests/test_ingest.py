"""ingest: decoding, ANSI, redraws, glued bars, prefixes, ranks, compression, caps."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from triage.errors import TriageError
from triage.ingest import Ingest, expand_paths
from triage.ingest.normalize import SourceState, normalize, peel, resolve_redraws, split_glued
from triage.ingest.reader import HEAD_KEEP, MAX_LINE, TAIL_KEEP, split_lines
from triage.ingest.scan import LiteralScanner


def norm(line: str) -> list[tuple[str, int | None]]:
    return [(p.text, p.rank) for p in normalize(line.encode(), SourceState())]


@pytest.mark.parametrize(
    "raw,text,rank",
    [
        (
            "[rank3]: torch.OutOfMemoryError: CUDA out of memory",
            "torch.OutOfMemoryError: CUDA out of memory",
            3,
        ),
        ("[default5]:[rank5]: ValueError: bad", "ValueError: bad", 5),
        ("[1,7]<stderr>: RuntimeError: x", "RuntimeError: x", 7),
        ("12: KeyError: 'a'", "KeyError: 'a'", 12),
        (
            "[rank2]:[E1129 17:32:24.829000000 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught",
            "[Rank 2] Watchdog caught",
            2,
        ),
        (
            "E1129 13:02:11.123456 4242 torch/distributed/run.py:874] failed (exitcode: -9)",
            "failed (exitcode: -9)",
            None,
        ),
        ("2026-11-29 13:02:11,123 - root - ERROR - loss is nan", "loss is nan", None),
        ("2026-11-29T13:02:11.123456789Z RuntimeError: boom", "RuntimeError: boom", None),
        ("Nov 29 13:02:11 node17 python[4242]: RuntimeError: boom", "RuntimeError: boom", None),
        ("[2026-11-29 13:02:11,001] [INFO] [engine.py:12:step] hello", "hello", None),
        ("INFO:torch.distributed.run:starting", "starting", None),
        ("[pod/trainer-0/main] RuntimeError: boom", "RuntimeError: boom", None),
        ("  1234 | RuntimeError: boom", "RuntimeError: boom", None),
        ("[trainer 2026-07-29 04:11:02] step 18424 | loss 2.41", "step 18424 | loss 2.41", None),
        ("[I 2023-11-14 10:52:37,408] A new study created in memory", "A new study created in memory", None),
        # a process's name and pid (Ray actors, SkyPilot nodes, vLLM workers): not a rank
        ("(RayTrainWorker pid=30871, ip=10.0.0.5) ValueError: bad", "ValueError: bad", None),
        ("(pid=9287, ip=172.31.31.127) SystemExit: 1", "SystemExit: 1", None),
        (
            "(worker1, rank=1, pid=31877, ip=10.44.0.6) Root Cause (first observed failure):",
            "Root Cause (first observed failure):",
            None,
        ),
        ("(head, rank=0, pid=4121) # Using devices", "# Using devices", None),
        ("(EngineCore_DP0 pid=812) RuntimeError: x", "RuntimeError: x", None),
        ("(raylet, ip=10.7.40.21) A worker died or was killed", "A worker died or was killed", None),
        ("(WorkerDict pid=3180442, ip=10.49.201.7) [rank11]: RuntimeError: x", "RuntimeError: x", 11),
    ],
)
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


def test_text_glued_after_a_bar_of_unknown_total_is_split():
    # Lightning's bar when the loader has no length: no percentage, "N/?" (the faulthandler's
    # report printed over it at a segfault)
    raw = "Epoch 0: |          | 912/? [01:33<00:00,  9.75it/s]Fatal Python error: Segmentation fault"
    assert [t for t, _ in norm(raw)] == [
        "Epoch 0: |          | 912/? [01:33<00:00,  9.75it/s]",
        "Fatal Python error: Segmentation fault",
    ]
    assert [t for t, _ in norm("Epoch 0: |          | 912/? [01:33<00:00,  9.75it/s]")] == [
        "Epoch 0: |          | 912/? [01:33<00:00,  9.75it/s]"
    ]


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
    lines = list(split_lines([data[i : i + 1000] for i in range(0, len(data), 1000)]))
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


# -- stdin closed (issue 13, item 2) ----------------------------------------------------


def run_with_stdin_closed(*args: str) -> subprocess.CompletedProcess[str]:
    """`triage ARGS <&-`: the real CLI in a child whose file descriptor 0 is closed."""
    return subprocess.run(
        [sys.executable, "-m", "triage", *args],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.close(0),
    )


def test_file_arguments_do_not_need_stdin(tmp_path: Path):
    log = tmp_path / "train.log"
    log.write_text("step 1 loss 2.0\nValueError: boom\n")
    r = run_with_stdin_closed("logs", str(log))
    assert r.returncode == 0, r.stderr
    assert "ValueError: boom" in r.stdout
    assert "internal error" not in r.stderr


def test_dash_with_stdin_closed_is_a_one_line_error():
    r = run_with_stdin_closed("logs", "-")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "stdin is closed" in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


# -- ranks from file names, natural order, viewer line numbers (item 6) -----------------


def ranks_of(tmp_path: Path, name: str, body: str) -> tuple[tuple[int, ...], list[int | None]]:
    p = tmp_path / name
    p.write_text(body)
    ing = Ingest([str(p)])
    lines = [line.rank for line in ing]
    return ing.sources[0].ranks, lines


@pytest.mark.parametrize(
    "name,rank",
    [
        ("012-cuda-oom-rank3-cascade.log", 3),  # a fixture's slug: 012 is its number, not a rank
        ("gpu-node-17-rank3.log", 3),  # node-17 is a host name; rank3 says the rank
        ("node-2-rank5.log", 5),
        ("job-4242-rank_1.out", 1),
        ("rank10.log", 10),
        ("train.rank7.txt", 7),
        ("local_rank2.log", 2),
        ("worker-3.log", 3),
        ("7.log", 7),
        ("llama3-8b.log", None),  # digits inside a word are not a rank
        ("run-2026-11-29.log", None),
        ("framework3.log", None),
    ],
)
def test_rank_from_file_name(tmp_path: Path, name: str, rank: int | None):
    ranks, lines = ranks_of(tmp_path, name, "step 1 loss 2.0\n")
    assert ranks == (() if rank is None else (rank,))
    assert lines == [rank]


def test_a_log_that_names_its_ranks_is_not_given_the_one_in_its_file_name(tmp_path: Path):
    """`012-cuda-oom-rank3-cascade.log` holding rank 5's lines: the content says the rank;
    the launcher's own lines (no prefix) are no rank's."""
    body = (
        "W1129 17:20:01.100000 24239 torch/distributed/run.py:792] starting\n"
        "[rank5]: torch.OutOfMemoryError: CUDA out of memory.\n"
        "[rank5]: step 1\n"
    )
    ranks, lines = ranks_of(tmp_path, "012-cuda-oom-rank3-cascade.log", body)
    assert ranks == (5,)
    assert lines == [None, 5, 5]


def test_a_per_rank_file_keeps_its_name_rank_for_unprefixed_lines(tmp_path: Path):
    ranks, lines = ranks_of(tmp_path, "rank3.log", "step 1\n[rank3]: ValueError: x\n")
    assert ranks == (3,)
    assert lines == [3, 3]


def test_folder_of_ranks_in_natural_order(tmp_path: Path):
    d = tmp_path / "logs"
    d.mkdir()
    for r in range(11):
        (d / f"rank{r}.log").write_text(f"step 1 rank {r}\n")
    paths = expand_paths([str(d)])
    assert [Path(p).name for p in paths] == [f"rank{r}.log" for r in range(11)]
    assert [line.rank for line in Ingest(paths)] == list(range(11))


def test_viewer_line_number_before_a_rank_prefix_is_peeled():
    assert norm("[51322] [rank0]: torch.OutOfMemoryError: CUDA out of memory") == [
        ("torch.OutOfMemoryError: CUDA out of memory", 0)
    ]
    assert norm("[7] Traceback (most recent call last):") == [("Traceback (most recent call last):", None)]


# -- what notes say (item 7) ------------------------------------------------------------


def big_line_log(tmp_path: Path, line_bytes: int) -> Path:
    p = tmp_path / "big.log"
    with open(p, "wb") as fh:
        fh.write(b"step 1 loss 2.0\n")
        fh.write(b"x" * line_bytes)
        fh.write(b"\nRuntimeError: boom\n")
    return p


@pytest.mark.parametrize("fast", [False, True], ids=["plain", "fast-path"])
def test_a_huge_line_is_noted_with_its_true_size(tmp_path: Path, fast: bool):
    size = 20 << 20  # several of the fast path's 8 MiB chunks
    p = big_line_log(tmp_path, size)
    ing = Ingest([str(p)], scanner=LiteralScanner(["RuntimeError"]) if fast else None, fast_min_bytes=0)
    lines = list(ing)
    assert [x.lineno for x in lines] == [1, 2, 3]
    assert len(lines[1].text) < MAX_LINE + 100  # still capped
    assert f"{size - HEAD_KEEP - TAIL_KEEP} bytes cut" in lines[1].text
    note = [n for n in ing.notes if "was cut" in n]
    assert note == [f"{p}:2: a line of {size:,} bytes (20.0 MiB) was cut to its head and tail"]


def test_a_huge_last_line_without_newline_on_the_fast_path(tmp_path: Path):
    p = tmp_path / "big.log"
    p.write_bytes(b"step 1\n" + b"y" * (17 << 20))
    ing = Ingest([str(p)], scanner=LiteralScanner(["RuntimeError"]), fast_min_bytes=0)
    lines = list(ing)
    assert lines[-1].lineno == 2
    assert any(f"a line of {17 << 20:,} bytes" in n for n in ing.notes)
    assert ing.sources[0].ends_without_newline


def test_cut_off_zstd_is_noted_like_a_cut_off_gzip(tmp_path: Path):
    zstd = pytest.importorskip("zstandard")
    blob = zstd.ZstdCompressor(write_checksum=True).compress(("step 1 loss 2.0\n" * 20000).encode())
    for cut, name in ((len(blob) // 2, "half.log.zst"), (len(blob) - 2, "no-checksum.log.zst")):
        p = tmp_path / name
        p.write_bytes(blob[:cut])
        ing = Ingest([str(p)])
        list(ing)
        assert ing.sources[0].truncated, name
        assert any("damaged or cut off" in x for x in ing.notes), name


def test_whole_zstd_frames_are_not_noted(tmp_path: Path):
    zstd = pytest.importorskip("zstandard")
    c = zstd.ZstdCompressor(write_checksum=True)
    # a skippable frame first, as pzstd and seekable zstd write: still zstd, still whole
    skippable = (0x184D2A50).to_bytes(4, "little") + (5).to_bytes(4, "little") + b"index"
    p = tmp_path / "frames.log.zst"
    p.write_bytes(skippable + c.compress(b"step 1\n") + skippable + c.compress(b"RuntimeError: boom\n"))
    ing = Ingest([str(p)])
    assert [x.text for x in ing] == ["step 1", "RuntimeError: boom"]
    assert ing.notes == [] and not ing.sources[0].truncated


CUT_NOTE = re.compile(r" \.\.\.\[\d+ bytes cut\]\.\.\. ")


@pytest.mark.parametrize("shift", range(12))
@pytest.mark.parametrize("fast", [False, True], ids=["plain", "fast-path"])
def test_a_colour_code_cut_by_the_line_cap_leaves_no_fragment(tmp_path: Path, shift: int, fast: bool):
    """Wherever the cap cuts a line full of colour codes, no `31m` or `[0` is left over."""
    unit = b"\x1b[31mERR\x1b[0m "  # 13 bytes: each shift puts the cuts at another byte of it
    n = (9 << 20) // len(unit) if fast else (3 * MAX_LINE) // len(unit)
    p = tmp_path / "colour.log"
    p.write_bytes(b"x" * shift + unit * n + b"\n")
    ing = Ingest([str(p)], scanner=LiteralScanner(["ERR"]) if fast else None, fast_min_bytes=0)
    (line,) = list(ing)
    assert CUT_NOTE.search(line.text)
    rest = CUT_NOTE.sub("|", line.text)
    assert set(rest) <= set("xER |"), sorted(set(rest) - set("xER |"))


# -- one line path (triage.ingest.lines): file, text and live feed agree -----------------


def _key(lines: list) -> list[tuple]:
    return [(x.source, x.lineno, x.text, x.rank, x.seq, x.ts) for x in lines]


HUGE = b"\x1b[31mERR\x1b[0m " * ((3 * MAX_LINE) // 13)
STORY = b"step 1 loss 2.0\n" + HUGE + b"\nRuntimeError: boom\n[12:00:01] last words"


@pytest.mark.parametrize("size", [1, 7, 1000, 70000, 1 << 20])
def test_splitter_gives_the_same_lines_for_any_chunking(size: int):
    from triage.ingest.lines import Splitter

    whole = list(split_lines([STORY]))
    sp = Splitter()
    got = [r for i in range(0, len(STORY), size) for r in sp.feed(STORY[i : i + size])]
    last = sp.finish()
    assert got + ([last] if last else []) == whole
    assert [r.lineno for r in whole] == [1, 2, 3, 4] and not whole[-1].complete
    assert whole[1].cut_bytes and whole[1].length == len(HUGE)


def test_text_file_and_live_feed_give_the_same_lines(tmp_path: Path):
    """A file read whole, an in-memory text and a live feed (by chunks and by lines) of
    the same bytes: the same `Line`s, the same SourceInfo, the same cut-line note."""
    from triage.ingest.lines import LineFeed, SourceLines
    from triage.watch.follow import LineSplitter

    p = tmp_path / "rank5.log"
    p.write_bytes(STORY)
    ing = Ingest([str(p)])
    want = _key(list(ing))
    assert {x[3] for x in want} == {5}  # the name's rank, as for every entry point
    text = SourceLines(str(p))
    assert _key(list(text.text(STORY))) == want
    assert [text.info()] == ing.sources and text.notes == ing.notes
    by_chunk = LineFeed(str(p))
    got = [x for i in range(0, len(STORY), 999) for x in by_chunk.feed(STORY[i : i + 999])]
    assert _key(got + by_chunk.finish()) == want
    assert by_chunk.info() == ing.sources[0] and by_chunk.notes == ing.notes
    # the watcher's path: LineSplitter (which caps) hands lines to the feed
    sp, by_line = LineSplitter(), LineFeed(str(p))
    got = []
    for i in range(0, len(STORY), 5000):
        got += [x for raw in sp.feed(STORY[i : i + 5000])[1] for x in by_line.line(raw)]
    assert _key(got + by_line.finish(sp.flush())) == want
    assert by_line.info() == ing.sources[0] and by_line.notes == ing.notes


def test_lines_from_text_numbers_and_notes_like_a_file():
    from triage.ingest.lines import SourceLines, lines_from_text

    lines = list(lines_from_text("a\n[rank2]: b\nc"))
    assert [(x.source, x.lineno, x.text, x.rank, x.seq) for x in lines] == [
        ("<text>", 1, "a", None, 1),
        ("<text>", 2, "b", 2, 2),
        ("<text>", 3, "c", None, 3),
    ]
    src = SourceLines("<text>")
    list(src.text(b"x" * (2 * MAX_LINE) + b"\n"))
    assert src.notes == ["<text>:1: a line of 131,072 bytes (128.0 KiB) was cut to its head and tail"]
    assert src.info().lines == 1 and not src.info().truncated


def test_one_cut_marker_and_recap_keeps_a_capped_line():
    """The watcher's cap and the file cap are one: a line capped once is not cut again."""
    from triage.ingest.lines import cap, cut_marker, recap
    from triage.watch.follow import LineSplitter

    def cap_line(data: bytes) -> bytes:
        return recap(data)[0]

    line = b"y" * (5 * MAX_LINE)
    (whole,) = list(split_lines([line]))
    assert cut_marker(whole.cut_bytes) in whole.data and cap(line) == (whole.data, whole.cut_bytes)
    assert cap_line(line) == whole.data and cap_line(whole.data) == whole.data
    sp = LineSplitter()
    assert sp.feed(line[:100_000]) == (b"", []) and len(sp.partial) <= MAX_LINE
    assert sp.feed(line[100_000:] + b"\n")[1] == [whole.data]
    short = b"z" * (MAX_LINE + 10)  # cut by 10 bytes: the capped line is longer than MAX_LINE
    assert cap_line(cap_line(short)) == cap_line(short) == cap(short)[0]


def test_a_named_timestamp_prefix_gives_the_line_its_time():
    """`[name YYYY-MM-DD HH:MM:SS]` (a logger's name and the time in one bracket) is peeled
    and timed like a bare ISO stamp, so a stall between such lines can be measured."""
    from triage.ingest.normalize import SourceState, normalize

    (p,) = list(normalize(b"[grug-train 2026-07-29 04:11:02] step 5 loss 1.0", SourceState()))
    (q,) = list(normalize(b"2026-07-29 04:11:02 step 5 loss 1.0", SourceState()))
    assert p.text == "step 5 loss 1.0" and p.ts is not None and p.ts == q.ts


def test_a_slashed_date_prefix_is_peeled_and_timed_like_iso():
    """`YYYY/MM/DD HH:MM:SS ` (Go's log package, some cluster log viewers) before each line is
    a timestamp, and the traceback under it keeps its indentation's meaning."""
    from triage.ingest.normalize import SourceState, normalize

    (p,) = list(normalize(b"2023/08/14 09:45:31 tarfile.ReadError: unexpected end of data", SourceState()))
    (q,) = list(normalize(b"2023-08-14 09:45:31 step 5", SourceState()))
    assert p.text == "tarfile.ReadError: unexpected end of data" and p.ts is not None and p.ts == q.ts


def test_openmpi_timestamp_output_is_peeled():
    # mpirun --timestamp-output: ctime glued before OpenMPI's [job,rank]<stream>: label
    state = SourceState()
    p = peel("Wed Mar  6 21:04:17 2024[1,3]<stderr>:RuntimeError: NCCL error", state)
    assert (p.text, p.rank) == ("RuntimeError: NCCL error", 3)
    later = peel("Wed Mar  6 21:04:18 2024 x", state).ts
    assert p.ts is not None and later == p.ts + 1
    assert peel("Wed is when the run started", state).ts is None


def test_a_compose_prefix_keeps_the_lines_indentation():
    # docker compose prints each line of a service after "name-N  | ", indentation kept:
    # a traceback's frames stay frames
    state = SourceState()
    assert peel('trainer-1  |   File "/app/train.py", line 3, in main', state).text.startswith("  File ")
    assert peel("trainer_1  | Traceback (most recent call last):", state).text.startswith("Traceback")
    assert peel("loss      |   2.31", state).text == "loss      |   2.31"  # a table row is no service


def test_dmesg_T_lines_get_their_time():
    # `dmesg -T` writes the kernel's ctime in brackets: an Xid line is placed in time
    state = SourceState()
    p = peel("[Tue Nov 25 03:14:07 2026] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.", state)
    q = peel("Tue Nov 25 03:14:08 2026 step 5 loss 1.0", state)
    assert p.text.startswith("NVRM: Xid") and p.ts is not None and q.ts == p.ts + 1
    assert peel("[Tue Foo 25 03:14:07 2026] x", state).ts is None  # no such month: no time


def test_a_rank_label_alone_is_that_ranks_blank_line():
    # torchrun --tee and c10d's excepthook print a rank's empty line as its label alone
    state = SourceState()
    for raw, rank in (("[rank3]: ", 3), ("[default2]:", 2), ("[1,5]<stdout>:", 5)):
        p = peel(raw.rstrip(), state)
        assert (p.text, p.rank) == ("", rank)
    assert peel("rank3]:", state).text == "rank3]:"  # no such launcher label: left as it is
