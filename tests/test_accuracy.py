"""Accuracy on the independent corpus (tests/corpus): issue 4's goals, measured.

The corpus stands in for the hidden set of real third-party logs (see bench/README.md,
"## accuracy"); bench/accuracy.py scores it. These tests check the corpus itself (size,
coverage of every canonical signature, honest labels) and then hold triage to the
thresholds: top-1 >= 0.90, top-3 >= 0.97, no wrong `confirmed`, no benign log with a
likely/confirmed diagnosis.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from accuracy_support import CORPORA, acc, corpus

HELD_OUT = CORPORA[1:]


# Issue 4's goals, on every corpus: the tuning one and the held-out ones (each written by
# someone who had not read the rules; see bench/README.md "## accuracy").
@pytest.fixture(scope="module", params=CORPORA)
def scored(request: pytest.FixtureRequest) -> tuple[list, object]:
    return acc.score(corpus(request.param))


@pytest.mark.parametrize("name", HELD_OUT)
def test_heldout_labels_are_honest_and_alternates_rare(name: str) -> None:
    labels = acc.load_labels(corpus(name))
    for lb in labels:
        assert lb.origin.startswith("composed in the style of"), f"{name}/{lb.path.name}: origin"
        assert "copied" not in lb.origin, f"{name}/{lb.path.name}: no log is copied from a thread"
        if lb.alternates:
            assert lb.why, f"{name}/{lb.path.name}: an alternate needs a why"
    assert sum(bool(lb.alternates) for lb in labels) <= len(labels) // 10


def test_no_log_is_in_two_corpora() -> None:
    """A held-out log identical to one seen before measures nothing new."""
    seen: dict[bytes, str] = {}
    dup = []
    for name in CORPORA:
        for p in sorted((corpus(name) / "logs").glob("*")):
            data = p.read_bytes()
            if data in seen:
                dup.append(f"{name}/{p.name} = {seen[data]}")
            seen.setdefault(data, f"{name}/{p.name}")
    assert dup == []


@pytest.mark.parametrize("name", CORPORA)
def test_cli_takes_each_corpus(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = acc.main(["--corpus", str(corpus(name))])
    out = capsys.readouterr().out
    assert rc in (0, 1), out  # 2 would be a malformed corpus
    assert "top-1" in out


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
        assert lb.origin.startswith(("composed", "recorded")), (
            f"{lb.path.name}: origin must say how it was made"
        )
    # alternates are for genuinely ambiguous logs only
    assert sum(bool(lb.alternates) for lb in labels) <= len(labels) // 10


def test_bad_corpus_is_refused(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.log").write_text("step 1 loss 2.0\n")
    (tmp_path / "labels.toml").write_text(
        '[[log]]\npath = "logs/a.log"\nexpected = "no-such-sig"\norigin = "composed"\n'
    )
    with pytest.raises(acc.CorpusError, match="unknown signatures"):
        acc.load_labels(tmp_path)
    (tmp_path / "labels.toml").write_text(
        '[[log]]\npath = "logs/b.log"\nexpected = "none"\norigin = "composed"\n'
    )
    with pytest.raises(acc.CorpusError, match="no file"):
        acc.load_labels(tmp_path)


def test_scorer_counts_a_wrong_answer(tmp_path: Path) -> None:
    # a CUDA OOM labelled as something else must score as a miss with a wrong confirmed
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "oom.log").write_text(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 79.10 GiB of which 1.05 GiB is free.\n"
    )
    (tmp_path / "labels.toml").write_text(
        '[[log]]\npath = "logs/oom.log"\nexpected = "disk-full"\norigin = "composed"\n'
    )
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
