"""Wording drift and precedence for the env/compile/data/io signatures.

Each case is a small log in a wording of a named library version (shared/reference/
messages.md, or the installed torch 2.13 / transformers 5.24 / safetensors 0.8 sources),
run through the whole pipeline with every shipped rule: the expected signature must lead,
and the listed ones must not be diagnosed at all.
"""

from __future__ import annotations

import pytest

from triage.engine import analyze_text, get_rules

TB = 'Traceback (most recent call last):\n  File "/app/train.py", line 42, in <module>\n    main()\n'

# (case id, log, expected first signature, signatures that must not appear)
CASES: list[tuple[str, str, str, tuple[str, ...]]] = [
    # missing-module / missing-accelerate / extension-import-error
    (
        "mm-no-module",
        TB + "ModuleNotFoundError: No module named 'deepspeed'\n",
        "missing-module",
        ("missing-accelerate", "extension-import-error"),
    ),
    (
        "mm-accelerate-is-its-own",
        TB + "ModuleNotFoundError: No module named 'accelerate'\n",
        "missing-accelerate",
        ("missing-module",),
    ),
    (
        "mm-transformers-too-old",
        TB + "ValueError: The checkpoint you are trying to load has model type `qwen3` but Transformers does "
        "not recognize this architecture. This could be because of an issue with the checkpoint, or because "
        "your version of Transformers is out of date.\n",
        "missing-module",
        (),
    ),
    (
        "ext-fa2-4.36",
        TB + "ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the "
        "following error: the package flash_attn seems to be not installed. Please refer to the documentation "
        "of https://huggingface.co/docs/transformers/perf_infer_gpu_one#flashattention-2 to install Flash "
        "Attention 2.\n",
        "extension-import-error",
        ("missing-module",),
    ),
    (
        "ext-fa2-cpu-4.40",
        TB + "ValueError: FlashAttention2 has been toggled on, but it cannot be used due to "
        "the following error: Flash Attention 2 is not available on CPU. Please make sure torch can access a "
        "CUDA device.\n",
        "extension-import-error",
        (),
    ),
    (
        "ext-fa3-5.x",
        TB + "ImportError: FlashAttention3 has been toggled on, but it cannot be used due to the "
        "following error: the package for FlashAttention3 doesn't seem to be installed.\n",
        "extension-import-error",
        (),
    ),
    (
        "ext-no-module-flash-attn",
        TB + "ModuleNotFoundError: No module named 'flash_attn'\n",
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
        TB + "RuntimeError: operator torchvision::nms does not exist\n",
        "extension-import-error",
        (),
    ),
    (
        "ext-deepspeed-op-build",
        "ninja: build stopped: subcommand failed.\n"
        + TB
        + "RuntimeError: Error building extension 'fused_adam'\n",
        "extension-import-error",
        (),
    ),
    # hub-unreachable
    (
        "hub-4.30",
        TB + "OSError: ./out/final is not a local folder and is not a valid model identifier listed "
        "on 'https://huggingface.co/models'\nIf this is a private repository, make sure to pass a token having "
        "permission to this repo with `use_auth_token` or log in with `huggingface-cli login` and pass "
        "`use_auth_token=True`.\n",
        "hub-unreachable",
        (),
    ),
    (
        "hub-4.x-this-file",
        TB + "OSError: We couldn't connect to 'https://huggingface.co' to load this file, "
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
        TB + "OSError: You are trying to access a gated repo.\nMake sure to have access to it at "
        "https://huggingface.co/meta-llama/Llama-3.1-8B.\n401 Client Error. (Request ID: Root=1-6)\n",
        "hub-unreachable",
        (),
    ),
    (
        "hub-dataset",
        TB + "datasets.exceptions.DatasetNotFoundError: Dataset 'my-org/sft-mix' doesn't exist on "
        "the Hub or cannot be accessed.\n",
        "hub-unreachable",
        (),
    ),
    # inductor-compile-error
    (
        "ind-2.5-backend-failed",
        TB + "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
        'CompilationError: at 12:4:\n    tmp0 = tl.load(in_ptr0 + (x0), xmask)\n\nSet TORCH_LOGS="+dynamo" and '
        "TORCHDYNAMO_VERBOSE=1 for more information\n\n\nYou can suppress this exception and fall back to eager "
        "by setting:\n    import torch._dynamo\n    torch._dynamo.config.suppress_errors = True\n",
        "inductor-compile-error",
        (),
    ),
    (
        "ind-2.0-debug-wrapper",
        TB + "torch._dynamo.exc.BackendCompilerFailed: debug_wrapper raised "
        "AssertionError: libcuda.so cannot found!\n",
        "inductor-compile-error",
        (),
    ),
    (
        "ind-triton-key",
        TB + "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nImportError: "
        "cannot import name 'triton_key' from 'triton.compiler.compiler' (/venv/lib/python3.10/site-packages/"
        "triton/compiler/compiler.py)\n",
        "inductor-compile-error",
        (),
    ),
    (
        "ind-oom-inner-is-oom",
        TB + "torch._inductor.exc.InductorError: OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n",
        "cuda-oom",
        ("inductor-compile-error",),
    ),
    (
        "ind-fx-race-inner",
        TB + "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
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
        TB + "torch._dynamo.exc.FailOnRecompileLimitHit: Hard failure due to fail_on_recompile_limit_hit\n",
        "torch-compile-recompile-limit",
        (),
    ),
    # dataloader-shm / dataloader-worker-crash
    (
        "shm-old-write",
        TB + "RuntimeError: Caught RuntimeError in DataLoader worker process 0.\nOriginal "
        'Traceback (most recent call last):\n  File "/x/collate.py", line 1, in f\n    y()\nRuntimeError: '
        "unable to write to file </torch_18614_1735245345_0>: No space left on device (28)\n",
        "dataloader-shm",
        ("disk-full",),
    ),
    (
        "shm-open-emfile",
        TB + "RuntimeError: unable to open shared memory object </torch_31_2451_3> in "
        "read-write mode: Too many open files (24)\n",
        "dataloader-shm",
        (),
    ),
    (
        "worker-killed-is-sigkill",
        TB + "RuntimeError: DataLoader worker (pid 4122) is killed by signal: Killed. \n",
        "host-oom-killed",
        (),
    ),
    (
        "worker-caught-keyerror",
        TB + "KeyError: Caught KeyError in DataLoader worker process 2.\nOriginal "
        'Traceback (most recent call last):\n  File "/app/ds.py", line 9, in __getitem__\n    x = self.meta[i]'
        "\nKeyError: 'image_17'\n",
        "dataloader-worker-crash",
        (),
    ),
    # checkpoint-load-corrupt
    (
        "load-2.4-weights-only",
        TB + "_pickle.UnpicklingError: Weights only load failed. This file can still be "
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
        TB + "_pickle.UnpicklingError: Weights only load failed. Re-running "
        "`torch.load` with `weights_only` set to `False` will likely succeed, but it can result in arbitrary "
        "code execution.Do it only if you get the file from a trusted source. WeightsUnpickler error: "
        "Unsupported class numpy.core.multiarray._reconstruct\n",
        "checkpoint-load-corrupt",
        (),
    ),
    (
        "load-safetensors-0.4",
        TB + "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge\n",
        "checkpoint-load-corrupt",
        (),
    ),
    (
        "load-zip-corrupt-file",
        TB + "RuntimeError: PytorchStreamReader failed reading file data/2: invalid "
        "header or archive is corrupted\n",
        "checkpoint-load-corrupt",
        (),
    ),
    (
        "load-hf-tf-hint",
        TB + "OSError: Unable to load weights from pytorch checkpoint file for "
        "'/ckpt/pytorch_model.bin' at '/ckpt/pytorch_model.bin'. If you tried to load a PyTorch model from a TF "
        "2.0 checkpoint, please set from_tf=True.\n",
        "checkpoint-load-corrupt",
        (),
    ),
    # checkpoint-save-failed / disk-full
    (
        "save-writer-2.0",
        TB + "RuntimeError: [enforce fail at inline_container.cc:471] . PytorchStreamWriter "
        "failed writing file data/5: file write failed\n",
        "checkpoint-save-failed",
        ("disk-full",),
    ),
    (
        "save-safetensors-0.4",
        TB + "safetensors_rust.SafetensorError: Error while serializing: IoError(Os { "
        'code: 28, kind: StorageFull, message: "No space left on device" })\n',
        "checkpoint-save-failed",
        ("disk-full",),
    ),
    (
        "save-shared-tensors",
        TB + "RuntimeError: \n            Some tensors share memory, this will lead to "
        "duplicate memory on disk and potential differences when loading them again: [{'lm_head.weight', "
        "'model.embed_tokens.weight'}].\n",
        "checkpoint-save-failed",
        (),
    ),
    (
        "disk-hf-cache",
        TB + "OSError: [Errno 28] No space left on device: '/root/.cache/huggingface/hub/"
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
]

# Logs that look alarming but are fine: nothing likely or confirmed from these rules.
QUIET: list[tuple[str, str]] = [
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

RULES = get_rules()


@pytest.mark.parametrize("log,first,absent", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_wording_drift_and_precedence(log: str, first: str, absent: tuple[str, ...]) -> None:
    rep = analyze_text(log, rules=RULES)
    got = [d.signature for d in rep.diagnoses]
    assert got, "no diagnosis"
    assert got[0] == first, got
    for sig in absent:
        assert sig not in got, got


@pytest.mark.parametrize("log", [q[1] for q in QUIET], ids=[q[0] for q in QUIET])
def test_benign_logs_stay_quiet(log: str) -> None:
    rep = analyze_text(log, rules=RULES)
    loud = [
        (d.signature, d.confidence.label)
        for d in rep.diagnoses
        if d.confidence.label in ("likely", "confirmed")
    ]
    assert loud == []
