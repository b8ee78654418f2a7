"""nccl-timeout: a collective times out on CPU (gloo) because one rank stalls.

Failing configuration: `torchrun --standalone --nproc-per-node 2 --tee 3 -m
dflash_runtime train --stall-rank 1 --stall-seconds 20 --dist-timeout 4`: two processes
train one drafter under DistributedDataParallel over gloo; rank 1 sleeps 20 s before
its second step (a slow rank: data stall, checkpoint, evaluation on one rank), rank 0
waits in DDP's collective and gloo gives up after the 4 s process-group timeout
(`Timed out waiting 4000ms for ... operation to complete`); torchrun then stops rank 1
with SIGTERM and reports rank 0 as the "root cause". The stalled rank is 1: the one
whose last line is its stall, which never reports a timeout.

Fix: a process-group timeout longer than the stall (60 s), the remedy for a rank that
is legitimately slower; the same stall then only delays the step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triage.repro.spec import Context, Run

NAME = "nccl-timeout"
ORDER = 70
EXPECTED = "nccl-timeout"
DEVICE = "cpu"
SUMMARY = (
    "torchrun, 2 gloo ranks of dflash_runtime; rank 1 stalls 20 s (fix: 8 s) "
    "and the 4 s process-group timeout fires on rank 0"
)
FAILURE = (
    "`torchrun --nproc-per-node 2 -m dflash_runtime train --stall-rank 1 "
    "--stall-seconds 20 --dist-timeout 4` (gloo on CPU)"
)
FIX = "a process-group timeout longer than the stall (--dist-timeout 60, stall 8 s)"
TIMEOUT_S = 110.0
STALLED_RANK = 1


def command(ctx: Context) -> list[str]:
    """torchrun with two ranks; rank 1 stalls before its second step."""
    stall, timeout = ("8", "60") if ctx.fix else ("20", "4")
    return [
        ctx.python,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "--tee",
        "3",
        "-m",
        "dflash_runtime",
        "train",
        "--steps",
        "3",
        "--eval-prompts",
        "0",
        "--target-pretrain-steps",
        "0",
        "--stall-rank",
        str(STALLED_RANK),
        "--stall-seconds",
        stall,
        "--dist-timeout",
        timeout,
    ]


def reproduced(run: Run) -> bool:
    """gloo's timeout ended the run."""
    return not run.ok and run.has("Timed out waiting") and run.has("ms for")
