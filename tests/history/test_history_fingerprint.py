"""Fingerprints (the same failure as data) and the run a crash belongs to."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from triage.engine import analyze_text
from triage.history import changed_facts, derive_run, fingerprint
from triage.history.fingerprint import in_app_frame, mask

TB = """[rank{rank}]: Traceback (most recent call last):
[rank{rank}]:   File "/home/{user}/proj/train.py", line {line}, in main
[rank{rank}]:     loss = step(batch)
[rank{rank}]:   File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1775, in _call_impl
[rank{rank}]:     return forward_call(*args, **kwargs)
[rank{rank}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {gib} GiB. GPU {rank} has a total capacity of 79.19 GiB of which {free} MiB is free. Process {pid} has 77.06 GiB memory in use.
"""


def _fp(**kw: object):
    base = {"rank": 3, "user": "ana", "line": 40, "gib": "4.64", "free": 211, "pid": 24242}
    return fingerprint(analyze_text(TB.format(**{**base, **kw})))


def test_same_failure_same_fingerprint_whatever_varies() -> None:
    a = _fp()
    b = _fp(rank=5, user="bo", line=52, gib="1.20", free=9, pid=7)
    assert a.id == b.id and a.kind == "error"
    assert a.parts["signature"] == "cuda-oom"
    assert a.parts["frame"] == "train.py:main"  # the innermost frame of the user's code
    assert "24242" not in a.parts["error"] and "<n>" in a.parts["error"]


def test_another_failure_another_fingerprint() -> None:
    other = fingerprint(
        analyze_text(
            "Traceback (most recent call last):\n"
            '  File "/home/ana/proj/train.py", line 40, in main\n'
            "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        )
    )
    assert other.id != _fp().id


def test_a_cut_off_log_is_its_end() -> None:
    a = fingerprint(analyze_text("Loading 5 target models...\nTarget 0 on cuda:0...\nT"))
    b = fingerprint(analyze_text("Loading 3 target models...\nTarget 2 on cuda:2...\nT"))
    c = fingerprint(analyze_text("Loading 5 target models...\nstep 10 loss 2.1\nst"))
    assert a.kind == "end" and a.parts == {
        "end_state": "cut-mid-line",
        "last_phase": "model-loading",
        "last_line": "T",
    }
    assert a.id == b.id and a.id != c.id


def test_mask_covers_what_varies() -> None:
    text = (
        "2026-12-01T20:01:02.5Z [rank7] NCCL WARN at 0x7f3a9c00 in /tmp/x/y.so "
        "uuid 123e4567-e89b-12d3-a456-426614174000 pid 981 tok/s"
    )
    assert mask(text) == "<time> [rank<n>] NCCL WARN at <addr> in <path> uuid <uuid> pid <n> tok/s"


@settings(max_examples=60, derandomize=True)
@given(
    st.integers(0, 10**9),
    st.integers(0, 4095),
    st.from_regex(r"/[a-z]{1,8}(/[a-z]{1,8}){0,3}", fullmatch=True),
)
def test_mask_is_stable_over_numbers_and_paths(n: int, rank: int, path: str) -> None:
    a = mask(f"rank {rank}: error {n} reading {path}/shard-{n}.bin")
    assert a == "rank <n>: error <n> reading <path>"


def test_in_app_frame_skips_libraries() -> None:
    frames = (
        'File "/srv/app/loop.py", line 9, in run',
        'File "/usr/lib/python3.11/threading.py", line 982, in run',
        'File "/venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py", line 1, in w',
    )
    assert in_app_frame(frames) == "loop.py:run"
    assert in_app_frame(frames[1:]) is None


def test_run_order_of_precedence() -> None:
    env = {"SLURM_JOB_NAME": "dflash-8gpu"}
    assert derive_run(["a.log"], name="exp1", env=env).key == "run:exp1"
    assert derive_run(["a.log"], tmux="train:0.1", env=env).key == "tmux:train"
    assert derive_run(["a.log"], env=env).key == "job:dflash-8gpu"
    assert derive_run(["-"], env={}, cwd="/work/exp").key == "cwd:/work/exp"


def test_run_of_a_log_masks_job_ids() -> None:
    a = derive_run(["logs/slurm-4411.out"], env={}, cwd="/w")
    b = derive_run(["logs/slurm-4412.out"], env={}, cwd="/w")
    c = derive_run(["logs/other.out"], env={}, cwd="/w")
    assert a.key == b.key == "log:/w/logs/slurm-N.out" and c.key != a.key
    assert derive_run(["r/rank0.log", "r/rank1.log"], env={}, cwd="/w").key == "log:/w/r"


def test_changed_facts_needs_two_snapshots_and_known_values() -> None:
    old = {
        "package.accelerate": None,
        "torch.version": "2.11.0",
        "gpu.count": {"unknown": "x"},
        "log.steps": 3,
    }
    new = {"package.accelerate": "1.13.0", "torch.version": "2.11.0", "gpu.count": 8, "log.steps": 9}
    assert changed_facts(old, new) == {"package.accelerate": [None, "1.13.0"]}
    assert changed_facts({}, new) == {}
