"""cuda-oom (GPU only): the drafter's batch does not fit in GPU memory.

Failing configuration: `python -m dflash_runtime train --device cuda --preset small
--batch-size 1024`: Qwen3-0.6B shapes (151,936-token vocabulary, 1,024-token
sequences); the target's logits alone for 1,024 sequences are ~300 GiB in bf16, so the
CUDA caching allocator fails (`torch.OutOfMemoryError: CUDA out of memory`) on any GPU.

Fix: the preset's batch (4). Not run on CPU (reported as skipped).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triage.repro.spec import Context, Run

NAME = "cuda-oom"
ORDER = 90
EXPECTED = "cuda-oom"
DEVICE = "cuda"
SUMMARY = "dflash_runtime, Qwen3-0.6B shapes, batch 1024 on one GPU: CUDA out of memory"
FAILURE = "`python -m dflash_runtime train --device cuda --preset small --batch-size 1024`"
FIX = "the preset's batch size (4)"
TIMEOUT_S = 300.0


def command(ctx: Context) -> list[str]:
    """The runtime on the GPU; only the batch size differs."""
    return [
        ctx.python,
        "-m",
        "dflash_runtime",
        "train",
        "--device",
        "cuda",
        "--preset",
        "small",
        "--steps",
        "3",
        "--eval-prompts",
        "0",
        "--batch-size",
        "4" if ctx.fix else "1024",
    ]


def reproduced(run: Run) -> bool:
    """The allocator ran out of GPU memory."""
    return not run.ok and run.has("out of memory")
