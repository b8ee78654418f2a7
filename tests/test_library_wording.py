"""Every shipped rule on small logs in the wording of a named library version.

Each case is a few lines as a named release of torch, transformers, safetensors, NCCL or
a launcher prints them (shared/reference/messages.md, or the installed torch 2.13 /
transformers 5.24 / safetensors 0.8 sources), run through the whole pipeline with every
shipped rule:

1. wording drift and precedence: the expected signature leads and the listed ones are not
   diagnosed at all, for the GPU, distributed, numerics and process signatures (cuda-oom,
   nccl-timeout, nccl-error, rendezvous-failure, torchrun-child-failed,
   cuda-illegal-memory-access, device-side-assert, nan-loss, killed-by-signal,
   training-hang) and for the environment, compile, data and I/O ones;
2. the same failure under every line prefix a log can carry, and glued onto a progress bar;
3. cascades: the cause leads and the echoes are its consequences;
4. alarming but healthy logs: nothing likely or confirmed.
"""

from __future__ import annotations

import pytest

from triage.engine import analyze_text, get_rules
from triage.model import Confidence

RULES = get_rules()
TB = 'Traceback (most recent call last):\n  File "/app/train.py", line 88, in <module>\n    main()\n'
ENV_TB = 'Traceback (most recent call last):\n  File "/app/train.py", line 42, in <module>\n    main()\n'

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

# The environment, compile, data and I/O signatures (missing modules and extensions,
# checkpoint load and save, torch.compile and inductor, the dataloader, disk and host
# memory, the hub): (case id, log, expected first signature, must not appear)
ENV_DRIFT: list[tuple[str, str, str, tuple[str, ...]]] = [
    # missing-module / missing-accelerate / extension-import-error
    (
        "mm-no-module",
        ENV_TB + "ModuleNotFoundError: No module named 'deepspeed'\n",
        "missing-module",
        ("missing-accelerate", "extension-import-error"),
    ),
    (
        "mm-accelerate-is-its-own",
        ENV_TB + "ModuleNotFoundError: No module named 'accelerate'\n",
        "missing-accelerate",
        ("missing-module",),
    ),
    (
        "mm-transformers-too-old",
        ENV_TB
        + "ValueError: The checkpoint you are trying to load has model type `qwen3` but Transformers does "
        "not recognize this architecture. This could be because of an issue with the checkpoint, or because "
        "your version of Transformers is out of date.\n",
        "missing-module",
        (),
    ),
    (
        "ext-fa2-4.36",
        ENV_TB + "ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the "
        "following error: the package flash_attn seems to be not installed. Please refer to the documentation "
        "of https://huggingface.co/docs/transformers/perf_infer_gpu_one#flashattention-2 to install Flash "
        "Attention 2.\n",
        "extension-import-error",
        ("missing-module",),
    ),
    (
        "ext-fa2-cpu-4.40",
        ENV_TB + "ValueError: FlashAttention2 has been toggled on, but it cannot be used due to "
        "the following error: Flash Attention 2 is not available on CPU. Please make sure torch can access a "
        "CUDA device.\n",
        "extension-import-error",
        (),
    ),
    (
        "ext-fa3-5.x",
        ENV_TB + "ImportError: FlashAttention3 has been toggled on, but it cannot be used due to the "
        "following error: the package for FlashAttention3 doesn't seem to be installed.\n",
        "extension-import-error",
        (),
    ),
    (
        "ext-no-module-flash-attn",
        ENV_TB + "ModuleNotFoundError: No module named 'flash_attn'\n",
        "extension-import-error",
        ("missing-module",),
    ),
    (
        "ext-failed-to-import-undefined-symbol",
        "[rank0]: RuntimeError: Failed to import transformers.models.llama.modeling_llama because of the "
        "following error (look up to see its traceback):\n[rank0]: /usr/local/lib/python3.10/dist-packages/"
        "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n",
        "extension-import-error",
        (),
    ),
    (
        "ext-torchvision-nms",
        ENV_TB + "RuntimeError: operator torchvision::nms does not exist\n",
        "extension-import-error",
        (),
    ),
    (
        "ext-deepspeed-op-build",
        "ninja: build stopped: subcommand failed.\n"
        + ENV_TB
        + "RuntimeError: Error building extension 'fused_adam'\n",
        "extension-import-error",
        (),
    ),
    # hub-unreachable
    (
        "hub-4.30",
        ENV_TB + "OSError: ./out/final is not a local folder and is not a valid model identifier listed "
        "on 'https://huggingface.co/models'\nIf this is a private repository, make sure to pass a token having "
        "permission to this repo with `use_auth_token` or log in with `huggingface-cli login` and pass "
        "`use_auth_token=True`.\n",
        "hub-unreachable",
        (),
    ),
    (
        "hub-4.x-this-file",
        ENV_TB + "OSError: We couldn't connect to 'https://huggingface.co' to load this file, "
        "couldn't find it in the cached files and it looks like meta-llama/Llama-2-7b-hf is not the path to a "
        "directory containing a file named config.json.\nCheckout your internet connection or see how to run "
        "the library in offline mode at 'https://huggingface.co/docs/transformers/installation#offline-mode'.\n",
        "hub-unreachable",
        (),
    ),
    (
        "hub-requests-unreachable",
        'requests.exceptions.ConnectionError: (MaxRetryError("HTTPSConnectionPool('
        "host='huggingface.co', port=443): Max retries exceeded with url: /api/models/gpt2 (Caused by "
        "NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f>: Failed to establish a new "
        "connection: [Errno 101] Network is unreachable'))\"), '(Request ID: 1)')\n",
        "hub-unreachable",
        (),
    ),
    (
        "hub-gated",
        ENV_TB + "OSError: You are trying to access a gated repo.\nMake sure to have access to it at "
        "https://huggingface.co/meta-llama/Llama-3.1-8B.\n401 Client Error. (Request ID: Root=1-6)\n",
        "hub-unreachable",
        (),
    ),
    (
        "hub-dataset",
        ENV_TB + "datasets.exceptions.DatasetNotFoundError: Dataset 'my-org/sft-mix' doesn't exist on "
        "the Hub or cannot be accessed.\n",
        "hub-unreachable",
        (),
    ),
    # inductor-compile-error
    (
        "ind-2.5-backend-failed",
        ENV_TB + "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
        'CompilationError: at 12:4:\n    tmp0 = tl.load(in_ptr0 + (x0), xmask)\n\nSet TORCH_LOGS="+dynamo" and '
        "TORCHDYNAMO_VERBOSE=1 for more information\n\n\nYou can suppress this exception and fall back to eager "
        "by setting:\n    import torch._dynamo\n    torch._dynamo.config.suppress_errors = True\n",
        "inductor-compile-error",
        (),
    ),
    (
        "ind-2.0-debug-wrapper",
        ENV_TB + "torch._dynamo.exc.BackendCompilerFailed: debug_wrapper raised "
        "AssertionError: libcuda.so cannot found!\n",
        "inductor-compile-error",
        (),
    ),
    (
        "ind-triton-key",
        ENV_TB + "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nImportError: "
        "cannot import name 'triton_key' from 'triton.compiler.compiler' (/venv/lib/python3.10/site-packages/"
        "triton/compiler/compiler.py)\n",
        "inductor-compile-error",
        (),
    ),
    (
        "ind-oom-inner-is-oom",
        ENV_TB + "torch._inductor.exc.InductorError: OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n",
        "cuda-oom",
        ("inductor-compile-error",),
    ),
    (
        "ind-fx-race-inner",
        ENV_TB + "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
        "RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized function. This "
        "is not supported at the moment.\n",
        "fx-tracing-flag-race",
        (),
    ),
    # torch-compile-recompile-limit
    (
        "rc-2.2-cache-size",
        "W0301 12:00:01.000000 140 torch/_dynamo/convert_frame.py:744] [2/8] torch._dynamo "
        "hit config.cache_size_limit (8)\nW0301 12:00:01.000000 140 torch/_dynamo/convert_frame.py:744] [2/8]    "
        "function: 'forward' (/app/model.py:88)\nstep 10 loss 1.9\nTraining completed.\n",
        "torch-compile-recompile-limit",
        (),
    ),
    (
        "rc-fail-on-hit",
        ENV_TB
        + "torch._dynamo.exc.FailOnRecompileLimitHit: Hard failure due to fail_on_recompile_limit_hit\n",
        "torch-compile-recompile-limit",
        (),
    ),
    # dataloader-shm / dataloader-worker-crash
    (
        "shm-old-write",
        ENV_TB + "RuntimeError: Caught RuntimeError in DataLoader worker process 0.\nOriginal "
        'Traceback (most recent call last):\n  File "/x/collate.py", line 1, in f\n    y()\nRuntimeError: '
        "unable to write to file </torch_18614_1735245345_0>: No space left on device (28)\n",
        "dataloader-shm",
        ("disk-full",),
    ),
    (
        "shm-open-emfile",
        ENV_TB + "RuntimeError: unable to open shared memory object </torch_31_2451_3> in "
        "read-write mode: Too many open files (24)\n",
        "dataloader-shm",
        (),
    ),
    (
        "worker-killed-is-sigkill",
        ENV_TB + "RuntimeError: DataLoader worker (pid 4122) is killed by signal: Killed. \n",
        "host-oom-killed",
        (),
    ),
    (
        "worker-caught-keyerror",
        ENV_TB + "KeyError: Caught KeyError in DataLoader worker process 2.\nOriginal "
        'Traceback (most recent call last):\n  File "/app/ds.py", line 9, in __getitem__\n    x = self.meta[i]'
        "\nKeyError: 'image_17'\n",
        "dataloader-worker-crash",
        (),
    ),
    # checkpoint-load-corrupt
    (
        "load-2.4-weights-only",
        ENV_TB + "_pickle.UnpicklingError: Weights only load failed. This file can still be "
        "loaded, to do so you have two options \n\t(1) Re-running `torch.load` with `weights_only` set to "
        "`False` will likely succeed, but it can result in arbitrary code execution. Do it only if you got the "
        "file from a trusted source.\n\t(2) Alternatively, to load with `weights_only=True` please check the "
        "recommended steps in the following error message.\n\tWeightsUnpickler error: Unsupported global: GLOBAL "
        "numpy.core.multiarray._reconstruct was not an allowed global by default.\n",
        "checkpoint-load-corrupt",
        (),
    ),
    (
        "load-1.13-weights-only",
        ENV_TB + "_pickle.UnpicklingError: Weights only load failed. Re-running "
        "`torch.load` with `weights_only` set to `False` will likely succeed, but it can result in arbitrary "
        "code execution.Do it only if you get the file from a trusted source. WeightsUnpickler error: "
        "Unsupported class numpy.core.multiarray._reconstruct\n",
        "checkpoint-load-corrupt",
        (),
    ),
    (
        "load-safetensors-0.4",
        ENV_TB + "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge\n",
        "checkpoint-load-corrupt",
        (),
    ),
    (
        "load-zip-corrupt-file",
        ENV_TB + "RuntimeError: PytorchStreamReader failed reading file data/2: invalid "
        "header or archive is corrupted\n",
        "checkpoint-load-corrupt",
        (),
    ),
    (
        "load-hf-tf-hint",
        ENV_TB + "OSError: Unable to load weights from pytorch checkpoint file for "
        "'/ckpt/pytorch_model.bin' at '/ckpt/pytorch_model.bin'. If you tried to load a PyTorch model from a TF "
        "2.0 checkpoint, please set from_tf=True.\n",
        "checkpoint-load-corrupt",
        (),
    ),
    # checkpoint-save-failed / disk-full
    (
        "save-writer-2.0",
        ENV_TB + "RuntimeError: [enforce fail at inline_container.cc:471] . PytorchStreamWriter "
        "failed writing file data/5: file write failed\n",
        "checkpoint-save-failed",
        ("disk-full",),
    ),
    (
        "save-safetensors-0.4",
        ENV_TB + "safetensors_rust.SafetensorError: Error while serializing: IoError(Os { "
        'code: 28, kind: StorageFull, message: "No space left on device" })\n',
        "checkpoint-save-failed",
        ("disk-full",),
    ),
    (
        "save-shared-tensors",
        ENV_TB + "RuntimeError: \n            Some tensors share memory, this will lead to "
        "duplicate memory on disk and potential differences when loading them again: [{'lm_head.weight', "
        "'model.embed_tokens.weight'}].\n",
        "checkpoint-save-failed",
        (),
    ),
    (
        "disk-hf-cache",
        ENV_TB + "OSError: [Errno 28] No space left on device: '/root/.cache/huggingface/hub/"
        "models--Qwen--Qwen3-8B/blobs/3f2a.incomplete'\n",
        "disk-full",
        ("checkpoint-save-failed",),
    ),
    (
        "disk-docker-lowercase",
        "failed to register layer: write /var/lib/docker/overlay2/ab/diff/usr/lib/"
        "libcudnn.so.9: no space left on device\n",
        "disk-full",
        (),
    ),
    # the Hub refusing or dropping a request (corpus_real12): 429 and 5xx as requests and
    # huggingface_hub word them, a dropped connection raised through huggingface_hub's frames
    (
        "hub-429-hfhub",
        "HTTP Error 429 thrown while requesting GET https://huggingface.co/api/datasets/o/d/revision/main\n"
        "Retrying in 1s [Retry 1/5].\n" + ENV_TB + "huggingface_hub.errors.HfHubHTTPError: 429 Client Error: "
        "Too Many Requests for url: https://huggingface.co/api/datasets/o/d/revision/main\n",
        "hub-unreachable",
        (),
    ),
    (
        "hub-429-requests",
        ENV_TB + "requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url: "
        "https://huggingface.co/datasets/o/d/resolve/abc/train/0001.jsonl.zst\n",
        "hub-unreachable",
        (),
    ),
    (
        "hub-dropped-connection-in-hub-frames",
        ENV_TB + '  File "/venv/lib/python3.10/site-packages/huggingface_hub/utils/_http.py", line 301, in '
        "http_backoff\n    raise err\nrequests.exceptions.ConnectionError: (ProtocolError('Connection "
        "aborted.', RemoteDisconnected('Remote end closed connection without response')), '(Request ID: 1f)')\n",
        "hub-unreachable",
        (),
    ),
    (
        "numpy2-abi-import",
        "A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.0.1 as it may crash.\n\n"
        + ENV_TB
        + "ImportError: numpy.core.multiarray failed to import\n",
        "extension-import-error",
        (),
    ),
]


@pytest.mark.parametrize(
    ("case", "log", "first", "absent"), DRIFT + ENV_DRIFT, ids=[c[0] for c in DRIFT + ENV_DRIFT]
)
def test_wording_drift(case: str, log: str, first: str, absent: tuple[str, ...]) -> None:
    rep = analyze_text(log, rules=RULES)
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
    rep = analyze_text(log, rules=RULES)
    got = [d.signature for d in rep.diagnoses]
    assert got and got[0] == sig, (prefix, got, log)


@pytest.mark.parametrize("sig", sorted(CORES))
def test_glued_to_progress_bar(sig: str) -> None:
    log = _wrap(HEALTHY + CORES[sig], PREFIXES["bare"], glue_bar=True)
    rep = analyze_text(log, rules=RULES)
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
    (
        "plain-exception-then-srun-sigterm-to-the-other-agents",
        "[rank5]: "
        + TB.replace("\n", "\n[rank5]: ").rstrip("[rank5]: ")
        + "\n[rank5]: ValueError: too many values to unpack (expected 2)\n"
        "E1129 17:39:41.811000 293817 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 0 (pid: 293904) of binary: /venv/bin/python\n"
        "W1129 17:39:41.936000 293818 torch/distributed/elastic/agent/server/api.py:719] Received 15 death signal, shutting down workers\n",
        # srun SIGTERMs the other tasks' agents after one failed: the earlier root error leads,
        # though no signature names its cause (it is `possible`, the SIGTERM confirmed)
        "unclassified-error",
        {"killed-by-signal": "unclassified-error"},
        (),
    ),
]


@pytest.mark.parametrize(
    ("case", "log", "leader", "consequences", "absent"), CASCADES, ids=[c[0] for c in CASCADES]
)
def test_cascades(
    case: str, log: str, leader: str, consequences: dict[str, str], absent: tuple[str, ...]
) -> None:
    rep = analyze_text(log, rules=RULES)
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

# Logs that look alarming but are fine: nothing likely or confirmed from these rules.
ENV_BENIGN: list[tuple[str, str]] = [
    (
        "hub-retry-then-ok",
        "'(ReadTimeoutError(\"HTTPSConnectionPool(host='cas-bridge.xethub.hf.co', "
        "port=443): Read timed out. (read timeout=10)\"), '(Request ID: 9)')' thrown while requesting GET "
        "https://huggingface.co/Qwen/Qwen3-0.6B/resolve/main/model.safetensors\nRetrying in 1s [Retry 1/5].\n"
        "Loading checkpoint shards: 100%|##########| 1/1 [00:01<00:00,  1.0s/it]\nstep 1 loss 2.0\n"
        "Training completed.\n",
    ),
    (
        "recompile-info",
        "[0/1] Recompiling function forward in /app/model.py:88\n    triggered by the "
        "following guard failure(s):\n    - 0/0: tensor 'x' size mismatch at index 0. expected 8, actual 16\n"
        "step 1 loss 2.0\nTraining completed.\n",
    ),
    (
        "shm-df",
        "Filesystem      Size  Used Avail Use% Mounted on\nshm              16G  1.1G   15G   7% "
        "/dev/shm\nstep 1 loss 2.0\nTraining completed.\n",
    ),
    (
        "bnb-cpu-warning",
        "/venv/lib/python3.10/site-packages/bitsandbytes/cextension.py:34: UserWarning: The "
        "installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers, 8-bit "
        'multiplication, and GPU quantization are unavailable.\n  warn("The installed version of bitsandbytes '
        'was compiled without GPU support. "\nstep 1 loss 2.0\nTraining completed.\n',
    ),
    (
        "xformers-warning",
        "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
        "    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.2.0+cu121)\n    Python  3.10.13 (you have 3.10.13)\n"
        "  Please reinstall xformers (see https://github.com/facebookresearch/xformers#installing-xformers)\n"
        "step 1 loss 2.0\nTraining completed.\n",
    ),
    (
        "weights-only-flag",
        "torch.load(path, weights_only=True)  # safer default since 2.6\nstep 1 loss 2.0\n"
        "Training completed.\n",
    ),
]


@pytest.mark.parametrize(("case", "log"), BENIGN + ENV_BENIGN, ids=[c[0] for c in BENIGN + ENV_BENIGN])
def test_benign_logs_get_no_confident_diagnosis(case: str, log: str) -> None:
    rep = analyze_text(log, rules=RULES)
    loud = [(d.signature, d.confidence.label) for d in rep.diagnoses if d.confidence >= Confidence.LIKELY]
    assert not loud, (case, loud)
