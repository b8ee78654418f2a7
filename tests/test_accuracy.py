"""Accuracy on the independent corpus (tests/corpus): issue 4's goals, measured.

The corpus stands in for the hidden set of real third-party logs (see bench/README.md,
"## accuracy"); bench/accuracy.py scores it. These tests check the corpus itself (size,
coverage of every canonical signature, honest labels) and then hold triage to the
thresholds: top-1 >= 0.90, top-3 >= 0.97, no wrong `confirmed`, no benign log with a
likely/confirmed diagnosis.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_accuracy", ROOT / "bench" / "accuracy.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


acc = _load_bench()


# Issue 4's goals, on every corpus: the tuning one and the held-out ones (each written by
# someone who had not read the rules; see bench/README.md "## accuracy").
CORPORA = ["corpus", "corpus_heldout", "corpus_heldout2", "corpus_heldout3", "corpus_heldout4"]


@pytest.fixture(scope="module", params=CORPORA)
def scored(request: pytest.FixtureRequest) -> tuple[list, object]:
    return acc.score(ROOT / "tests" / request.param)


def test_corpus_is_big_and_covers_every_signature() -> None:
    labels = acc.load_labels(acc.CORPUS)
    assert len(labels) >= 80
    counts = Counter(lb.expected for lb in labels)
    thin = {s: counts[s] for s in acc.CANONICAL if counts[s] < 3}
    assert not thin, f"canonical signatures with fewer than 3 corpus logs: {thin}"
    assert counts[acc.BENIGN] >= 12


def test_labels_are_honest_and_alternates_rare() -> None:
    labels = acc.load_labels(acc.CORPUS)
    for lb in labels:
        assert lb.origin.startswith("composed"), f"{lb.path.name}: origin must say how it was made"
    # alternates are for genuinely ambiguous logs only
    assert sum(bool(lb.alternates) for lb in labels) <= len(labels) // 10


def test_bad_corpus_is_refused(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.log").write_text("step 1 loss 2.0\n")
    (tmp_path / "labels.toml").write_text('[[log]]\npath = "logs/a.log"\nexpected = "no-such-sig"\n'
                                          'origin = "composed"\n')
    with pytest.raises(acc.CorpusError, match="unknown signatures"):
        acc.load_labels(tmp_path)
    (tmp_path / "labels.toml").write_text('[[log]]\npath = "logs/b.log"\nexpected = "none"\n'
                                          'origin = "composed"\n')
    with pytest.raises(acc.CorpusError, match="no file"):
        acc.load_labels(tmp_path)


def test_scorer_counts_a_wrong_answer(tmp_path: Path) -> None:
    # a CUDA OOM labelled as something else must score as a miss with a wrong confirmed
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "oom.log").write_text(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 79.10 GiB of which 1.05 GiB is free.\n")
    (tmp_path / "labels.toml").write_text('[[log]]\npath = "logs/oom.log"\nexpected = "disk-full"\n'
                                          'origin = "composed"\n')
    results, summary = acc.score(tmp_path)
    assert results[0].top1 is False and results[0].diagnoses[0][0] == "cuda-oom"
    assert summary.wrong_confirmed == 1 and not summary.passed


def test_no_crash_on_any_corpus_log(scored: tuple[list, object]) -> None:
    results, _ = scored
    assert [r.path for r in results if r.error] == []


def test_top1_top3(scored: tuple[list, object]) -> None:
    results, s = scored
    misses = [f"{r.path}: {r.diagnoses[:3]}" for r in results if not r.benign and not r.top1]
    assert s.top1 >= acc.TOP1_MIN, f"top-1 {s.top1:.3f}; misses:\n" + "\n".join(misses)
    assert s.top3 >= acc.TOP3_MIN, f"top-3 {s.top3:.3f}; misses:\n" + "\n".join(misses)


def test_no_wrong_confirmed(scored: tuple[list, object]) -> None:
    results, _ = scored
    wrong = {r.path: r.wrong_confirmed for r in results if r.wrong_confirmed}
    assert not wrong, f"confirmed diagnoses that are wrong: {wrong}"


def test_benign_logs_get_no_likely_or_confirmed(scored: tuple[list, object]) -> None:
    results, _ = scored
    bad = {r.path: r.diagnoses for r in results if r.benign_violation}
    assert not bad, f"benign logs diagnosed: {bad}"
