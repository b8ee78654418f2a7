"""Wording drift, foreign prefixes, cascades and benign noise for the GPU, distributed,
numerics and process signatures (cuda-oom, nccl-timeout, nccl-error, rendezvous-failure,
torchrun-child-failed, cuda-illegal-memory-access, device-side-assert, nan-loss,
killed-by-signal, training-hang).

Each case is a small log in the wording of a named library version (shared/reference/
messages.md, or the installed torch 2.13 / transformers 5.24 sources), run through the
whole pipeline with every shipped rule.
"""

from __future__ import annotations

import pytest

from triage.engine import analyze_text, get_rules
from triage.model import Confidence

TB = 'Traceback (most recent call last):\n  File "/app/train.py", line 88, in <module>\n    main()\n'

# ---------------------------------------------------------------------------------------
# 1. Wording drift: (case id, log, expected first signature, must not appear)
DRIFT: list[tuple[str, str, str, tuple[str, ...]]] = [
    # cuda-oom across torch versions
    (
        "oom-1.4",
        TB
        + "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 11.17 GiB total capacity; 10.6 GiB already allocated; 3.81 MiB free; 258.77 MiB cached)\n",
        "cuda-oom",
        ("nan-loss",),
    ),
    (
        "oom-1.10",
        TB
        + "RuntimeError: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 0; 10.76 GiB total capacity; 9.51 GiB already allocated; 40.56 MiB free; 9.71 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n",
        "cuda-oom",
        (),
    ),
    (
        "oom-2.1-capacty",
        TB
        + "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacty of 23.65 GiB of which 1.12 GiB is free. Of the allocated memory 19.87 GiB is allocated by PyTorch, and 2.18 GiB is reserved by PyTorch but unallocated.\n",
        "cuda-oom",
        (),
    ),
    (
        "oom-2.10-alloc-conf",
        TB
        + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 3.12 GiB is free. Including non-PyTorch memory, this process has 76.05 GiB memory in use. If reserved but unallocated memory is large try setting PYTORCH_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n",
        "cuda-oom",
        (),
    ),
    (
        "oom-rocm",
        TB
        + "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 63.98 GiB of which 512.00 MiB is free.\n",
        "cuda-oom",
        (),
    ),
    (
        "oom-cuda-error",
        TB
        + "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported at some other API call,so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n",
        "cuda-oom",
        ("cuda-illegal-memory-access",),
    ),
    (
        "oom-cublas",
        TB + "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`\n",
        "cuda-oom",
        (),
    ),
    # CUDA faults: RuntimeError -> torch.AcceleratorError, trailer lines by version
    (
        "ima-1.13",
        TB
        + "RuntimeError: CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be asynchronously reported at some other API call,so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n",
        "cuda-illegal-memory-access",
        ("device-side-assert", "cuda-oom"),
    ),
    (
        "ima-2.13",
        TB
        + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\nSearch for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\nDevice-side assertion tracking was not enabled by user.\n",
        "cuda-illegal-memory-access",
        ("device-side-assert",),
    ),
    (
        "ima-terminate",
        "terminate called after throwing an instance of 'c10::AcceleratorError'\n  what():  CUDA error: an illegal memory access was encountered\nException raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:42 (most recent call first):\nAborted (core dumped)\n",
        "cuda-illegal-memory-access",
        (),
    ),
    (
        "ima-triton",
        TB + "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered\n",
        "cuda-illegal-memory-access",
        (),
    ),
    (
        "dsa-2.1",
        TB
        + "RuntimeError: CUDA error: device-side assert triggered\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1.\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n",
        "device-side-assert",
        ("cuda-illegal-memory-access",),
    ),
    (
        "dsa-2.13",
        TB
        + "torch.AcceleratorError: CUDA error: device-side assert triggered\nSearch for `cudaErrorAssert' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\nDevice-side assertion tracking was not enabled by user.\n",
        "device-side-assert",
        (),
    ),
    (
        "dsa-kernel-assert-only",
        '/opt/pytorch/aten/src/ATen/native/cuda/ScatterGatherKernel.cu:365: operator(): block: [0,0,0], thread: [12,0,0] Assertion `idx_dim >= 0 && idx_dim < index_size && "index out of bounds"` failed.\n',
        "device-side-assert",
        (),
    ),
    # NCCL timeouts, watchdog formats 1.x - 2.14
    (
        "to-1.10",
        "[E ProcessGroupNCCL.cpp:566] [Rank 0] Caught collective operation timeout: WorkNCCL(OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800287 milliseconds before timing out.\n",
        "nccl-timeout",
        ("nccl-error",),
    ),
    (
        "to-2.0",
        "[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=41, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800414 milliseconds before timing out.\n",
        "nccl-timeout",
        (),
    ),
    (
        "to-2.13",
        "[rank1]:[E1129 17:32:24.829000000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5523, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600016 milliseconds before timing out.\n",
        "nccl-timeout",
        (),
    ),
    (
        "to-aborted-reason",
        TB
        + "torch.distributed.DistBackendError: NCCL communicator was aborted on rank 3. Original reason for failure was: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=_ALLGATHER_BASE, NumelIn=1, NumelOut=8, Timeout(ms)=1800000) ran for 1800093 milliseconds before timing out.\n",
        "nccl-timeout",
        ("nccl-error",),
    ),
    (
        "to-gloo",
        TB
        + "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 5000ms for recv operation to complete\n",
        "nccl-timeout",
        (),
    ),
    # NCCL errors: >= 2.18 and older strings, 2.1+ DistBackendError, remote error
    (
        "ne-2.18",
        TB
        + "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3\nncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. \nLast error:\nsocketProgress: Connection closed by remote peer node2<47512>\n",
        "nccl-error",
        ("nccl-timeout",),
    ),
    (
        "ne-old-internal",
        TB
        + "RuntimeError: NCCL error in: /opt/pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:825, internal error, NCCL version 2.7.8\nncclInternalError: Internal check failed.\n",
        "nccl-error",
        (),
    ),
    (
        "ne-2.18-internal",
        TB
        + "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, internal error - please report this issue to the NCCL developers, NCCL version 2.18.1\n",
        "nccl-error",
        (),
    ),
    (
        "ne-remote",
        TB
        + "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:121, remote process exited or there was a network error, NCCL version 2.14.3\nncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n",
        "nccl-error",
        (),
    ),
    (
        "ne-invalid-usage-dup-gpu",
        TB
        + "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.20.5\nncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\nDuplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000\n",
        "nccl-error",
        (),
    ),
    (
        "ne-gloo-peer",
        TB
        + "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:2451. This is typically caused by a remote worker crashing.\n",
        "nccl-error",
        (),
    ),
    # rendezvous
    (
        "rdzv-store-barrier-2.0",
        TB
        + "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: store_based_barrier_key:1 (world_size=8, worker_count=4, timeout=0:30:00)\n",
        "rendezvous-failure",
        ("nccl-timeout",),
    ),
    (
        "rdzv-eaddrinuse-2.4",
        TB
        + "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use\n",
        "rendezvous-failure",
        (),
    ),
    (
        "rdzv-bind-2.0",
        TB
        + "RuntimeError: The server socket has failed to listen on any local network address. The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use). The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use).\n",
        "rendezvous-failure",
        (),
    ),
    (
        "rdzv-unique-id",
        TB
        + "torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout\n",
        "rendezvous-failure",
        ("nccl-timeout",),
    ),
    # torchrun report, 2.10 vs 2.13 exitcode format, other launchers
    (
        "tcf-2.13",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n============================================================\ntrain.py FAILED\n------------------------------------------------------------\nFailures:\n  <NO_OTHER_FAILURES>\n------------------------------------------------------------\nRoot Cause (first observed failure):\n[0]:\n  time      : 2026-11-29_17:32:30\n  host      : localhost\n  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 24243) \n  error_file: <N/A>\n  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n============================================================\n",
        "torchrun-child-failed",
        ("killed-by-signal",),
    ),
    (
        "tcf-mpirun",
        "mpirun detected that one or more processes exited with non-zero status, thus causing\nthe job to be terminated. The first process to do so was:\n\n  Process name: [[4242,1],3]\n  Exit code:    1\n",
        "torchrun-child-failed",
        (),
    ),
    # nan-loss
    (
        "nan-hf-4x",
        "{'loss': 2.3012, 'grad_norm': 1.91, 'learning_rate': 2e-05, 'epoch': 0.1}\n{'loss': nan, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.2}\n",
        "nan-loss",
        (),
    ),
    (
        "nan-ds-collapse",
        "[2024-05-02 11:03:19,221] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 2, reducing to 1\nException: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.\n",
        "nan-loss",
        (),
    ),
    (
        "nan-ds-old-overflow",
        "[deepspeed] OVERFLOW! Skipping step. Attempted loss scale: 2.0, reducing to 1.0\n",
        "nan-loss",
        (),
    ),
    (
        "nan-fairseq-min-scale",
        TB
        + "FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding. Try lowering the learning rate, using gradient clipping or increasing the batch size.\n",
        "nan-loss",
        (),
    ),
    (
        "nan-detectron2",
        TB
        + "FloatingPointError: Loss became infinite or NaN at iteration=1452!\nloss_dict = {'loss_cls': nan, 'loss_box_reg': nan}\n",
        "nan-loss",
        (),
    ),
    (
        "nan-megatron",
        " iteration     1200/  500000 | consumed samples:       614400 | lm loss: NaN | loss scale: 1.0 | grad norm: nan | number of skipped iterations:  12 | number of nan iterations:   3 |\n",
        "nan-loss",
        (),
    ),
    # killed-by-signal
    (
        "kill-slurm-preempt",
        "slurmstepd: error: *** JOB 77 ON node3 CANCELLED AT 2024-02-02T11:00:00 DUE TO PREEMPTION ***\n",
        "killed-by-signal",
        (),
    ),
    (
        "kill-agent-2.1",
        "WARNING:torch.distributed.elastic.agent.server.api:Received Signals.SIGINT death signal, shutting down workers\n",
        "killed-by-signal",
        (),
    ),
    ("kill-k8s-143", "command terminated with exit code 143\n", "killed-by-signal", ()),
    # training-hang
    (
        "hang-2.2-monitor",
        "[E ProcessGroupNCCL.cpp:1182] [Rank 0] NCCL monitor thread timeout. Basically, this could be due to CUDA or NCCL calls being unexpectedly blocking, especially when your program enters a deadlock state in watchdog or destructors. If you see this error, please file a bug to PyTorch.\n",
        "training-hang",
        (),
    ),
]


@pytest.mark.parametrize(("case", "log", "first", "absent"), DRIFT, ids=[c[0] for c in DRIFT])
def test_wording_drift(case: str, log: str, first: str, absent: tuple[str, ...]) -> None:
    rep = analyze_text(log, rules=get_rules())
    got = [d.signature for d in rep.diagnoses]
    assert got and got[0] == first, (case, got)
    for sig in absent:
        assert sig not in got, (case, sig, got)


# ---------------------------------------------------------------------------------------
# 2. The same failure under every prefix and noise a log can carry: no rule may depend on
#    how a line starts.
CORES: dict[str, list[str]] = {
    "cuda-oom": [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.02 GiB is free."
    ],
    "nccl-timeout": [
        "[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=18013, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600034 milliseconds before timing out."
    ],
    "nccl-error": [
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5"
    ],
    "rendezvous-failure": [
        "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 7/8 clients joined."
    ],
    "torchrun-child-failed": ["failed (exitcode: 1) local_rank: 0 (pid: 4242) of binary: /usr/bin/python3"],
    "cuda-illegal-memory-access": ["RuntimeError: CUDA error: an illegal memory access was encountered"],
    "device-side-assert": ["torch.AcceleratorError: CUDA error: device-side assert triggered"],
    "nan-loss": ["step 1200 loss nan lr 3.0e-04"],
    "killed-by-signal": [
        "slurmstepd: error: *** JOB 991 ON node17 CANCELLED AT 2024-06-01T03:00:14 DUE TO TIME LIMIT ***"
    ],
    "training-hang": [
        "[PG ID 0 PG GUID 0(default_pg) Rank 0] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives."
    ],
}
HEALTHY = ["step 1198 loss 1.2031 lr 3.0e-04", "step 1199 loss 1.2011 lr 3.0e-04"]
BAR = " 42%|████▏     | 420/1000 [03:10<04:22,  2.21it/s]"

PREFIXES: dict[str, object] = {
    "bare": lambda i: "",
    "rank-bracket": lambda i: "[rank3]: ",
    "torchrun-tee": lambda i: "[default3]:[rank3]: ",
    "srun-label": lambda i: "3: ",
    "openmpi": lambda i: "[1,3]<stderr>:",
    "glog": lambda i: f"E1129 13:02:1{i}.123456 4242 train.py:88] ",
    "journald": lambda i: f"Nov 29 13:02:1{i} gpu-node-7 python[4242]: ",
    "py-logging": lambda i: f"2024-11-29 13:02:1{i},123 - ERROR - trainer - ",
    "iso-ts": lambda i: f"2024-11-29T13:02:1{i}.123456Z ",
    "kubectl": lambda i: "[pod/trainer-3/main] ",
    "viewer-lineno": lambda i: f"{i + 1201:>6} | ",
    "pod-and-rank": lambda i: "[pod/trainer-3/main] [rank3]: ",
}


def _wrap(lines: list[str], prefix: object, glue_bar: bool = False) -> str:
    out = []
    for i, line in enumerate(lines):
        head = prefix(i)  # type: ignore[operator]
        if glue_bar and i == len(lines) - 1:
            line = BAR + line
        out.append(head + line)
    return "\n".join(out) + "\n"


MATRIX = [(sig, name) for sig in CORES for name in PREFIXES]


@pytest.mark.parametrize(("sig", "prefix"), MATRIX, ids=[f"{s}-{p}" for s, p in MATRIX])
def test_prefix_matrix(sig: str, prefix: str) -> None:
    log = _wrap(HEALTHY + CORES[sig], PREFIXES[prefix])
    rep = analyze_text(log, rules=get_rules())
    got = [d.signature for d in rep.diagnoses]
    assert got and got[0] == sig, (prefix, got, log)


@pytest.mark.parametrize("sig", sorted(CORES))
def test_glued_to_progress_bar(sig: str) -> None:
    log = _wrap(HEALTHY + CORES[sig], PREFIXES["bare"], glue_bar=True)
    rep = analyze_text(log, rules=get_rules())
    got = [d.signature for d in rep.diagnoses]
    assert got and got[0] == sig, (got, log)


# ---------------------------------------------------------------------------------------
# 3. Cascades: the cause leads and the echoes are its consequences.
TORCHRUN_SIGTERM_TAIL = """\
W1129 17:32:25.001000 24239 torch/distributed/elastic/multiprocessing/api.py:908] Sending process 24243 closing signal SIGTERM
E1129 17:32:26.512000 24239 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: 1) local_rank: 1 (pid: 24244) of binary: /venv/bin/python
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-29_17:32:26
  host      : node17
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 24243)  (SIGTERM)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 24243
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-29_17:32:25
  host      : node17
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 24244) 
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""

CASCADES: list[tuple[str, str, str, dict[str, str], tuple[str, ...]]] = [
    # (id, log, leader, {consequence: explained_by}, must not appear)
    (
        "dsa-then-nccl-and-torchrun",
        "[rank1]: RuntimeError: CUDA error: device-side assert triggered\n"
        "[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:121, remote process exited or there was a network error, NCCL version 2.20.5\n"
        + TORCHRUN_SIGTERM_TAIL,
        "device-side-assert",
        {"nccl-error": "device-side-assert", "torchrun-child-failed": "device-side-assert"},
        ("killed-by-signal",),
    ),
    (
        "ima-then-watchdog-timeouts",
        "[rank1]: torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
        "[rank0]:[E1129 17:42:24.829000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600016 milliseconds before timing out.\n"
        + TORCHRUN_SIGTERM_TAIL,
        "cuda-illegal-memory-access",
        {"nccl-timeout": "cuda-illegal-memory-access"},
        ("killed-by-signal",),
    ),
    (
        "timeout-first-then-remote-errors",
        "[rank0]:[E1129 17:42:24.829 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600016 milliseconds before timing out.\n"
        "[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:121, remote process exited or there was a network error, NCCL version 2.20.5\n",
        "nccl-timeout",
        {"nccl-error": "nccl-timeout"},
        (),
    ),
    (
        "remote-error-first-then-timeouts",
        "[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:121, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
        "[rank0]:[E1129 17:42:24.829 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600016 milliseconds before timing out.\n",
        "nccl-error",
        {"nccl-timeout": "nccl-error"},
        (),
    ),
    (
        "oom-then-lightning-sigterm-on-peers",
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 1 has a total capacity of 39.38 GiB of which 2.11 GiB is free.\n"
        "[rank0]: [rank: 0] Received SIGTERM: 15\n" + TORCHRUN_SIGTERM_TAIL,
        "cuda-oom",
        {"torchrun-child-failed": "cuda-oom"},
        (),
    ),
    (
        "hang-then-killed-by-hand",
        'step 40 loss 1.11\nTimeout (0:10:00)!\nThread 0x00007f1122a7bb80 (most recent call first):\n  File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 3252 in all_reduce\n'
        "W1129 19:07:04.801000 9889 torch/distributed/elastic/agent/server/api.py:753] Received 15 death signal, shutting down workers\n"
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 9889 got signal: 15\n",
        "training-hang",
        {"killed-by-signal": "training-hang"},
        (),
    ),
    (
        "time-limit-then-remote-errors",
        "slurmstepd: error: *** STEP 991.0 ON node17 CANCELLED AT 2024-06-01T03:00:14 DUE TO TIME LIMIT ***\n"
        "1: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n",
        "killed-by-signal",
        {"nccl-error": "killed-by-signal"},
        (),
    ),
    (
        "plain-exception-then-torchrun-sigterms",
        "[rank1]: "
        + TB.replace("\n", "\n[rank1]: ").rstrip("[rank1]: ")
        + "\n[rank1]: ValueError: too many values to unpack (expected 2)\n"
        + TORCHRUN_SIGTERM_TAIL,
        # no signature covers a ValueError: the root error leads, the launcher's report follows
        "unclassified-error",
        {"torchrun-child-failed": "unclassified-error"},
        ("killed-by-signal",),
    ),
]


@pytest.mark.parametrize(
    ("case", "log", "leader", "consequences", "absent"), CASCADES, ids=[c[0] for c in CASCADES]
)
def test_cascades(
    case: str, log: str, leader: str, consequences: dict[str, str], absent: tuple[str, ...]
) -> None:
    rep = analyze_text(log, rules=get_rules())
    by = {d.signature: d for d in rep.diagnoses}
    assert rep.diagnoses and rep.diagnoses[0].signature == leader, (case, list(by))
    assert rep.diagnoses[0].role == "root-cause"
    for sig, cause in consequences.items():
        assert sig in by, (case, sig, list(by))
        assert by[sig].role == "consequence" and by[sig].explained_by == cause, (
            case,
            sig,
            by[sig].role,
            by[sig].explained_by,
        )
    for sig in absent:
        assert sig not in by, (case, sig, list(by))


# ---------------------------------------------------------------------------------------
# 4. Alarming but healthy lines: nothing likely or confirmed.
BENIGN: list[tuple[str, str]] = [
    (
        "nccl-init-info",
        "node1:311:311 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory No plugin found (libnccl-net.so), using internal implementation\nnode1:311:402 [0] NCCL INFO Channel 00/02 :    0   1   2   3\nnode1:311:402 [0] NCCL INFO Connected all rings\nstep 1 loss 2.31\nTraining completed.\n",
    ),
    (
        "nccl-warn-optional",
        "node1:311:311 [0] misc/ibvwrap.cc:106 NCCL WARN Failed to open libibverbs.so[.1]\n[2025-03-20 10:00:00] node1:311:402 [0] init.cc:521 NCCL WARN NVLS multicast support is not available on dev 0\nstep 1 loss 2.31\nTraining completed.\n",
    ),
    (
        "use-cache-gc",
        "`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`...\nCaching is incompatible with gradient checkpointing in Qwen3DecoderLayer. Setting `past_key_value=None`.\n{'loss': 1.93, 'grad_norm': 2.1, 'learning_rate': 1e-05, 'epoch': 0.1}\n{'train_runtime': 12.1, 'train_loss': 1.93}\n",
    ),
    (
        "ds-warmup-overflow",
        "".join(
            f"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {2**k}, reducing to {2 ** (k - 1)}\n"
            for k in range(32, 26, -1)
        )
        + "[deepspeed] fp16 dynamic loss scale overflow! Skipping step. Attempted loss scale: 65536, reducing to 32768\nsteps: 100 loss: 2.9811\nTraining completed.\n",
    ),
    (
        "apex-warmup-overflow",
        "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0\nGradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 16384.0\nepoch 0 iter 100 loss 3.1\nTraining completed.\n",
    ),
    (
        "deprecations",
        "/venv/lib/python3.11/site-packages/transformers/trainer.py:2601: FutureWarning: `torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', args...)` instead.\n/venv/lib/python3.11/site-packages/torch/_utils.py:831: UserWarning: TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage class.\nFutureWarning: `gradient_checkpointing` is deprecated and will be removed in v6. Use `activation_checkpointing` instead.\n[W320 10:00:04.118201331 Utils.hpp:164] Warning: Environment variable NCCL_ASYNC_ERROR_HANDLING is deprecated; use TORCH_NCCL_ASYNC_ERROR_HANDLING instead (function operator())\nstep 1 loss 2.0\nTraining completed.\n",
    ),
    (
        "c10d-ipv6-and-retry",
        "[W socket.cpp:464] [c10d] The server socket cannot be initialized on [::]:29500 (errno: 97 - Address family not supported by protocol).\n[W socket.cpp:697] [c10d] The client socket has failed to connect to [node0]:29500 (errno: 111 - Connection refused).\nstep 1 loss 2.0\nTraining completed.\n",
    ),
    (
        "barrier-device-unknown",
        "[rank0]:[W320 10:00:06.551231114 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 0]  using GPU 0 to perform barrier as devices used by this process are currently unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect.\nstep 1 loss 2.0\nTraining completed.\n",
    ),
    (
        "cuda-hints-in-config-dump",
        "env: CUDA_LAUNCH_BLOCKING=0 TORCH_USE_CUDA_DSA=0 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True NCCL_DEBUG=WARN\nlogging_nan_inf_filter=True,\nstep 1 loss 2.0\nTraining completed.\n",
    ),
]


@pytest.mark.parametrize(("case", "log"), BENIGN, ids=[c[0] for c in BENIGN])
def test_benign_logs_get_no_confident_diagnosis(case: str, log: str) -> None:
    rep = analyze_text(log, rules=get_rules())
    loud = [(d.signature, d.confidence.label) for d in rep.diagnoses if d.confidence >= Confidence.LIKELY]
    assert not loud, (case, loud)
