"""checkpoint-save-failed: the drafter checkpoint is written into a size-limited target.

Failing configuration: `python -m dflash_runtime train --save DIR --save-every 2`, with
the file-size limit of the run's process set to 64 KiB (RLIMIT_FSIZE, set by triage's
runner in the child only, with SIGXFSZ ignored so that a write past the limit fails
with EFBIG "File too large" instead of killing the process). The checkpoint (~330 KiB)
cannot be written, as on a full disk (there the error is ENOSPC); torch.save's stream
writer fails and the run dies with its traceback. No file system is filled and nothing
needs root.

Fix: the same run with room for the checkpoint (no size limit).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triage.repro.spec import Context, Run

NAME = "checkpoint-save-failed"
ORDER = 80
EXPECTED = "checkpoint-save-failed"
DEVICE = "cpu"
SUMMARY = "dflash_runtime saves a ~330 KiB checkpoint under a 64 KiB file-size limit"
FAILURE = (
    "`python -m dflash_runtime train --save DIR --save-every 2` with RLIMIT_FSIZE "
    "64 KiB on the child (writes fail with EFBIG, as they fail with ENOSPC on a full disk)"
)
FIX = "the same save with room for the checkpoint"
TIMEOUT_S = 90.0


def FSIZE_LIMIT_BYTES(ctx: Context) -> int | None:  # a function: differs between runs
    """64 KiB in the failing run, no limit in the fix."""
    return None if ctx.fix else 64 * 1024


def command(ctx: Context) -> list[str]:
    """The runtime's train command, saving every 2 steps into the run's folder."""
    return [
        ctx.python,
        "-m",
        "dflash_runtime",
        "train",
        "--steps",
        "4",
        "--eval-prompts",
        "0",
        "--target-pretrain-steps",
        "0",
        "--device",
        ctx.device,
        "--save",
        str(ctx.workdir / "ckpt"),
        "--save-every",
        "2",
    ]


def reproduced(run: Run) -> bool:
    """The run died while saving its checkpoint."""
    return not run.ok and run.has("Saving checkpoint") and run.has("Traceback")
