"""The accuracy scorer (bench/accuracy.py) itself, on small corpora written here.

It must refuse a malformed corpus, count a wrong answer as a miss, and hold a corpus to
the thresholds its flags give (issue 4's by default, printed as before). What triage
scores on the real corpora is in tests/test_accuracy.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from accuracy_support import acc, corpus


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


# a CUDA OOM in torch 2.x wording: a log every scorer case below can count as found
OOM_TEXT = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.10 GiB of which 1.05 GiB is free.\n"
)


def test_scorer_counts_a_wrong_answer(tmp_path: Path) -> None:
    # a CUDA OOM labelled as something else must score as a miss with a wrong confirmed
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "oom.log").write_text(OOM_TEXT)
    (tmp_path / "labels.toml").write_text(
        '[[log]]\npath = "logs/oom.log"\nexpected = "disk-full"\norigin = "composed"\n'
    )
    results, summary = acc.score(tmp_path)
    assert results[0].top1 is False and results[0].diagnoses[0][0] == "cuda-oom"
    assert summary.wrong_confirmed == 1 and not summary.passed


def _mixed_corpus(tmp_path: Path) -> Path:
    """Two signature logs (one found, one missed) and two benign logs (one quiet, one not)."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "oom.log").write_text(OOM_TEXT)
    (tmp_path / "logs" / "missed.log").write_text("step 1 loss 2.0\nstep 2 loss 1.9\n")
    (tmp_path / "logs" / "quiet.log").write_text("step 1 loss 2.0\nstep 2 loss 1.9\n")
    (tmp_path / "logs" / "loud.log").write_text("step 1 loss 2.0\nKilled\n")
    entries = [("oom", "cuda-oom"), ("missed", "nan-loss"), ("quiet", "none"), ("loud", "none")]
    (tmp_path / "labels.toml").write_text(
        "".join(
            f'[[log]]\npath = "logs/{name}.log"\nexpected = "{sig}"\norigin = "composed"\n'
            for name, sig in entries
        )
    )
    return tmp_path


def test_thresholds_are_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mixed = str(_mixed_corpus(tmp_path))
    results, s = acc.score(Path(mixed))
    # the premise: half the signature logs right, half the benign logs quiet, nothing else wrong
    assert (s.top1, s.top3, s.benign_violations, s.wrong_confirmed) == (0.5, 0.5, 1, 0), results
    assert s.benign_quiet == 0.5 and not s.passed
    assert acc.main(["--corpus", mixed]) == 1  # today's thresholds: zero benign violations
    assert acc.main(["--corpus", mixed, "--top1-min", "0.5", "--top3-min", "0.5"]) == 1
    assert acc.main(["--corpus", mixed, "--benign-min", "0.5"]) == 1
    capsys.readouterr()
    assert acc.main(["--corpus", mixed, "--top1-min", "0.5", "--top3-min", "0.5", "--benign-min", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "(goal >= 0.5)" in out and "benign quiet 0.500 (goal >= 0.5)" in out and "PASS" in out


def test_default_thresholds_print_as_before(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    acc.main(["--corpus", str(_mixed_corpus(tmp_path))])
    out = capsys.readouterr().out
    assert f"(goal >= {acc.TOP1_MIN})" in out and f"(goal >= {acc.TOP3_MIN})" in out
    assert "benign violations 1/2 (goal 0)" in out


@pytest.mark.parametrize("flag", ["--benign-min", "--top1-min", "--top3-min"])
@pytest.mark.parametrize("value", ["1.5", "-0.1", "most"])
def test_a_bad_threshold_is_refused(flag: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        acc.main(["--corpus", str(corpus("corpus_real")), flag, value])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert flag in err and "a fraction from 0 to 1" in err
