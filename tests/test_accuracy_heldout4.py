"""The fifth held-out corpus (tests/corpus_heldout4): checks on the corpus itself.

tests/corpus and corpus_heldout..heldout3 have all been tuned against. tests/corpus_heldout4
was written before its author read rules/, triage/, fixtures/ or the other corpora, and it
is about precedence: every log with a signature holds two or more failure messages and
only one is the root cause. One rank's real error (CUDA OOM, illegal memory access,
device-side assert, a DataLoader crash, a missing module or a full disk on one node, an
Xid pasted below) is buried among watchdog timeouts, `Some NCCL operations have failed`,
ChildFailedError blocks naming the wrong rank, agent SIGTERMs and `CUDA error` re-raises;
chained exceptions with the root first; errors glued onto tqdm bars; per-rank logs
concatenated so the earliest failure in time is last in the file; alarming warnings before
the real failure; and benign logs whose scary cascades recovered. See bench/README.md,
"### fifth held-out corpus". The goals themselves are asserted in tests/test_accuracy.py
once the corpus is listed in its CORPORA.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HELDOUT4 = ROOT / "tests" / "corpus_heldout4"


from accuracy_support import acc  # noqa: E402  (tests/ is on sys.path)


def _blobs() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((HELDOUT4 / "logs").glob("*.log"))}


def test_heldout4_is_big_with_benign_cascades() -> None:
    labels = acc.load_labels(HELDOUT4)
    assert len(labels) >= 50
    counts = Counter(lb.expected for lb in labels)
    assert counts[acc.BENIGN] >= 10
    # precedence is about the causes that cascade: each of these leads several logs
    for sig in (
        "cuda-oom",
        "cuda-illegal-memory-access",
        "device-side-assert",
        "dataloader-worker-crash",
        "gpu-fell-off-bus",
        "gpu-ecc-error",
        "nccl-error",
        "host-oom-killed",
    ):
        assert counts[sig] >= 2, f"only {counts[sig]} logs led by {sig}"
    assert len({lb.expected for lb in labels} - {acc.BENIGN}) >= 20


def test_heldout4_also_is_really_in_the_log() -> None:
    # `also` may only name consequences whose text is in the log (a label must not excuse
    # a wrong confirmed diagnosis that has nothing to point at)
    marks = {
        "nccl-timeout": (b"Watchdog caught collective operation timeout", b"Timed out after"),
        "nccl-error": (b"NCCL error", b"ncclRemoteError", b"ncclSystemError", b"ncclUnhandledCudaError"),
        "torchrun-child-failed": (b"ChildFailedError",),
        "rendezvous-failure": (b"DistStoreError", b"waiting for clients"),
        "checkpoint-save-failed": (b"PytorchStreamWriter", b"Error while serializing"),
        "disk-full": (b"No space left on device", b"StorageFull"),
        "xid-error": (b"NVRM: Xid",),
        "dataloader-worker-crash": (b"exited unexpectedly",),
        "torch-compile-recompile-limit": (b"recompile_limit", b"cache_size_limit"),
        "cuda-launch-failure": (b"unspecified launch failure", b"cudaErrorLaunchFailure"),
        "fatal-signal": (b"Segmentation fault", b"SIGSEGV", b"SIGABRT", b"Aborted"),
    }
    for lb in acc.load_labels(HELDOUT4):
        text = lb.path.read_bytes()
        for sig in lb.also:
            assert any(m in text for m in marks[sig]), f"{lb.path.name}: `also` {sig} has no text in the log"


def test_heldout4_has_the_precedence_shapes_it_claims() -> None:
    blobs = _blobs()

    def count(needle: bytes) -> int:
        return sum(needle in b for b in blobs.values())

    def ranks(b: bytes) -> int:
        return len(set(re.findall(rb"\[rank(\d+)\]", b)))

    assert sum(ranks(b) >= 8 for b in blobs.values()) >= 12  # 8 to 64 ranks interleaved
    assert max(ranks(b) for b in blobs.values()) >= 64
    assert count(b"Watchdog caught collective operation timeout") >= 15
    assert count(b"Some NCCL operations have failed or timed out") >= 15
    assert count(b"ChildFailedError") >= 12
    assert count(b"Root Cause (first observed failure)") >= 12
    assert count(b"closing signal SIGTERM") >= 10
    assert count(b"The above exception was the direct cause") >= 4
    assert count(b"During handling of the above exception") >= 4
    glued = re.compile(rb"(it|it/s)\](Traceback|/pytorch/aten)|s/it, loss=[\d.]+\]/pytorch")
    assert sum(bool(glued.search(b)) for b in blobs.values()) >= 3  # errors glued onto bars
    assert (
        count(b"==> logs/rank") + count(b"----- rank") + count(b"### 0.err") >= 4
    )  # per-rank files concatenated
    assert count(b"NVRM: Xid") >= 4
    assert count(b"OVERFLOW! Rank 0 Skipping step") >= 3
    assert count(b"NCCL WARN") >= 5
    assert count(b"FutureWarning") >= 5
    assert any(not b.endswith(b"\n") for b in blobs.values())  # one paste cut mid-line


def test_heldout4_benign_logs_are_scary() -> None:
    # a benign log here must carry alarming text, or it measures nothing about precedence
    scary = (
        b"Error",
        b"error",
        b"WARN",
        b"OVERFLOW",
        b"overflow",
        b"SIGTERM",
        b"refused",
        b"out of memory",
        b"No space left",
        b"FAILED",
        b"Warning",
    )
    for lb in acc.load_labels(HELDOUT4):
        if lb.expected == acc.BENIGN:
            assert any(s in lb.path.read_bytes() for s in scary), f"{lb.path.name} is not alarming"
