"""Property tests: ingest, structure and engine never raise on any bytes; normalising
is idempotent.

In CI (CI=true) hypothesis runs the derandomized `ci` profile from tests/conftest.py:
the same examples every run. Locally it explores; a failure it finds is kept below as an
explicit `@example`.
"""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from triage.engine import analyze_text, get_rules
from triage.ingest.normalize import SourceState, normalize

RULES = get_rules()

# Bytes biased towards the things logs are made of.
TOKENS = st.sampled_from(
    [
        b"\n",
        b"\r",
        b"\r\n",
        b"\x1b[31m",
        b"\x1b[0m",
        b"\x00",
        b"\xff",
        b"[rank3]: ",
        b"[default1]:",
        b"3: ",
        b"Traceback (most recent call last):\n",
        b'  File "a.py", line 1, in f\n',
        b"RuntimeError: ",
        b"CUDA out of memory",
        b"Killed",
        b"100%|####| 10/10 [00:01<00:00]",
        b"During handling of the above exception, another exception occurred:\n",
        b"Root Cause (first observed failure):\n",
        b"  rank      : 3 (local_rank: 3)\n",
        b"  exitcode  : -9 (pid: 1)\n",
        b"=" * 60,
        b"E1129 13:02:11.123 1 a.cc:1] ",
        b"loss nan ",
        b"step 12 ",
        b"\\n",
        b"NCCL WARN ",
        b"Watchdog caught collective operation timeout",
    ]
)
LOGS = st.lists(st.one_of(TOKENS, st.binary(max_size=40)), max_size=60).map(b"".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LOGS)
def test_engine_never_raises(data: bytes):
    rep = analyze_text(data, rules=RULES)
    assert rep.end_state.kind
    for d in rep.diagnoses:
        assert 0.0 <= d.score <= 1.0


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(data: bytes):
    analyze_text(data, rules=RULES)


# Found by this property (issue 13): an invalid byte glued after a bar kept the escaped
# newline in the piece before the bar, so a second pass split it.
BAR_THEN_BAD_BYTE = b"RuntimeError: \\n100%|####| 10/10 [00:01<00:00]\xff"


def normalise_twice_changes_nothing(data: bytes) -> None:
    for raw_line in data.split(b"\n"):
        once = [p.text for p in normalize(raw_line, SourceState())]
        for text in once:
            twice = [p.text for p in normalize(text.encode("utf-8", "surrogatepass"), SourceState())]
            assert twice == [text]


@settings(max_examples=500, deadline=None)
@given(LOGS)
@example(BAR_THEN_BAD_BYTE)
def test_normalise_twice_changes_nothing(data: bytes):
    normalise_twice_changes_nothing(data)


def test_normalise_twice_on_a_bar_then_an_invalid_byte():
    once = [p.text for p in normalize(BAR_THEN_BAD_BYTE, SourceState())]
    assert once == ["RuntimeError:", "100%|####| 10/10 [00:01<00:00]", "\ufffd"]
    normalise_twice_changes_nothing(BAR_THEN_BAD_BYTE)


def test_ci_runs_the_same_examples_every_time():
    """CI=true loads a derandomized profile with no example database; locally, explore."""
    import importlib.util

    # by path: tests/history has a conftest module of its own
    spec = importlib.util.spec_from_file_location("suite_conftest", Path(__file__).parent / "conftest.py")
    assert spec is not None and spec.loader is not None
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)

    assert conftest.hypothesis_profile({"CI": "true"}) == "ci"
    assert conftest.hypothesis_profile({}) == "dev"
    assert conftest.hypothesis_profile({"CI": "false"}) == "dev"
    ci = settings.get_profile("ci")
    assert ci.derandomize and ci.database is None
    assert not settings.get_profile("dev").derandomize
    if os.environ.get("CI", "").lower() == "true" and not os.environ.get("HYPOTHESIS_PROFILE"):
        assert settings.default is not None and settings.default.derandomize


def test_fuzz_crash_1_torchrun_report_with_damaged_numbers():
    """bench/fuzz.py found it: a torchrun report whose rank/exitcode read '--9'."""
    from pathlib import Path

    data = (Path(__file__).parent / "data" / "fuzz-crash-1.bin").read_bytes()
    analyze_text(data, rules=RULES)
    text = (
        "Root Cause (first observed failure):\n[0]:\n  rank      : --9 (local_rank: 0)\n"
        "  exitcode  : --9 (pid: 1)\n" + "=" * 60 + "\n"
    )
    rep = analyze_text(text, rules=RULES)
    assert rep.end_state.kind
