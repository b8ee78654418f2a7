"""Following a file across rotation and truncation; splitting chunks into lines; the
end-of-capture check against a dead pane's screen."""

from __future__ import annotations

import os
from pathlib import Path

from triage.watch.follow import Follower, LineSplitter
from triage.watch.session import missing_tail


def _lines(f: Follower, sp: LineSplitter) -> list[str]:
    out: list[str] = []
    for chunk in f.poll():
        if chunk.fresh and sp.partial:
            out.append(sp.flush().decode())
        _blob, lines = sp.feed(chunk.data)
        out += [x.decode() for x in lines]
    return out


def test_follow_survives_rotation_and_truncation(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    f, sp = Follower(str(log)), LineSplitter()
    assert _lines(f, sp) == []  # not there yet: waits
    with log.open("a") as w:
        w.write("a1\na2\npart")
        w.flush()
        assert _lines(f, sp) == ["a1", "a2"]
        w.write("ial\na3\n")
        w.flush()
        assert _lines(f, sp) == ["partial", "a3"]
        # logrotate (create mode): the writer still has the old file open for a moment
        os.rename(log, tmp_path / "train.log.1")
        w.write("a4 (late, in the old file)\n")
        w.flush()
    log.write_text("b1\nb2\n")
    assert _lines(f, sp) == ["a4 (late, in the old file)", "b1", "b2"]
    assert f.rotations == 1
    # copytruncate: the same file is cut to zero and written again
    with log.open("r+") as w:
        w.truncate(0)
    with log.open("a") as w:
        w.write("c1\n")
    assert _lines(f, sp) == ["c1"]
    assert f.truncations == 1
    with log.open("a") as w:
        w.write("c2\n")
    assert _lines(f, sp) == ["c2"]
    f.close()


def test_unfinished_line_before_rotation_is_ended(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("one\ntwo-without-newline")
    f, sp = Follower(str(log)), LineSplitter()
    assert _lines(f, sp) == ["one"]
    os.rename(log, tmp_path / "x.log.1")
    log.write_text("three\n")
    assert _lines(f, sp) == ["two-without-newline", "three"]


def test_splitter_bounds_a_line_that_never_ends() -> None:
    sp = LineSplitter()
    for _ in range(200):
        blob, lines = sp.feed(b"\r 10%|#####     | 10/100 [00:01<00:09]" * 100)
        assert lines == [] and blob == b""
    assert len(sp.partial) < 100_000
    blob, lines = sp.feed(b"\ndone\n")
    assert len(lines) == 2 and b"bytes cut" in lines[0] and lines[1] == b"done"


def test_missing_tail_aligns_on_the_last_lines() -> None:
    screen = ["step 1", "step 2", "step 3", "Traceback (most recent call last):", "  x", "RuntimeError: boom"]
    assert missing_tail(screen, ["step 1", "step 2", "step 3"]) == screen[3:]
    assert missing_tail(screen, screen) == []
    # cannot align (the screen renders differently): add nothing rather than repeat
    assert missing_tail(screen, ["something else entirely"]) == []
    # repeated lines: the latest place where our tail occurs wins
    rep = ["x", "x", "x", "y"]
    assert missing_tail(rep, ["x", "x", "x"]) == ["y"]


def test_gpu_sampler_reads_nvml_values_and_never_raises(monkeypatch) -> None:
    """The NVML adapter with a stand-in pynvml module (no GPU on CI): values are read
    per device, a field that errors is N/A for that field only, and the panel shows them."""
    import sys
    import types

    from triage.tui.widgets import gpu_text
    from triage.watch.gpu import GpuSampler

    class Err(Exception):
        pass

    nv = types.ModuleType("pynvml")
    nv.nvmlInit = lambda: None  # type: ignore[attr-defined]
    nv.nvmlDeviceGetCount = lambda: 2  # type: ignore[attr-defined]
    nv.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    nv.nvmlDeviceGetName = lambda h: b"NVIDIA H200"  # type: ignore[attr-defined]

    def mem(h: int) -> object:
        if h == 1:
            raise Err("not supported")
        return types.SimpleNamespace(used=72 << 30, total=141 << 30)

    nv.nvmlDeviceGetMemoryInfo = mem  # type: ignore[attr-defined]
    nv.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=98)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    s = GpuSampler().sample()
    assert s.unknown is None and s.busy is True
    assert (s.devices[0].memory_used_mib, s.devices[0].memory_total_mib) == (72 * 1024, 141 * 1024)
    assert s.devices[1].memory_used_mib is None and s.devices[1].utilization_pct == 98
    text = gpu_text(s).plain
    assert " 72.0/141G" in text and "98%" in text and "N/A" in text

    def broken() -> None:
        raise Err("NVML Shared Library Not Found")

    nv.nvmlInit = broken  # type: ignore[attr-defined]
    s2 = GpuSampler().sample()
    assert s2.devices == () and "Library Not Found" in (s2.unknown or "") and s2.busy is None
