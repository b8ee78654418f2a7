"""nan-loss: a learning-rate blow-up makes the drafter's loss nan.

Failing configuration: `python -m dflash_runtime train --lr 1e12`. AdamW's update is
about lr in size whatever the gradient, so the drafter's weights jump to ~1e12 and its
activations overflow float32 within two or three steps: the step lines show `loss nan`
and `grad_norm nan`, and every later step stays nan. (The drafter normalises its
activations, which is why it takes an absurd rate rather than a merely large one.) The
runtime does not stop on a non-finite loss, like many trainers: the run "succeeds" with
a nan loss, which is the failure.

Fix: the preset's learning rate (3e-3): the loss stays finite and falls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triage.repro.spec import Context, Run

NAME = "nan-loss"
ORDER = 40
EXPECTED = "nan-loss"
DEVICE = "cpu"
SUMMARY = "dflash_runtime with --lr 1e12: the loss becomes nan within a few steps"
FAILURE = "`python -m dflash_runtime train --lr 1e12` (AdamW steps of ~1e12 overflow float32)"
FIX = "the preset's learning rate (3e-3)"
TIMEOUT_S = 90.0


def command(ctx: Context) -> list[str]:
    """The runtime's train command; only the learning rate differs."""
    return [
        ctx.python,
        "-m",
        "dflash_runtime",
        "train",
        "--steps",
        "6",
        "--eval-prompts",
        "0",
        "--target-pretrain-steps",
        "0",
        "--device",
        ctx.device,
        "--lr",
        "3e-3" if ctx.fix else "1e12",
    ]


def reproduced(run: Run) -> bool:
    """Some step logged a non-finite loss."""
    return run.nonfinite_loss()
