"""flex-threads-cuda (GPU only): the story's placement on the real runtime.

Failing configuration: `python -m dflash_runtime train --device cuda --targets 5
--drafters 3 --attention flex --no-warmup-compile`: five target threads, three drafter
threads spread over the GPUs (targets first, drafters on the next ones, wrapping
around), each drafter compiling `torch.compile(flex_attention)` in its own thread, as in
the story. On releases without the compile-session flag (2.11 in the story) one
thread's compile-time FX tracing makes another thread's compiled call raise `Detected
that you are using FX to symbolically trace a dynamo-optimized function`. torch 2.13
holds a process-global compile flag that hides the FX flag during any compile
(shared/reference/fx-race.md): there the scenario says it cannot reproduce and why, as
the CPU scenario `fx-tracing-flag-race` (the same placement on CPU) does.

Fix: `--warmup-compile` (compile once before the threads start). Not run on CPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from triage.repro.scenarios.fx_tracing_flag_race import cannot_reproduce

if TYPE_CHECKING:
    from triage.repro.spec import Context, Run

__all__ = ["cannot_reproduce", "command", "reproduced"]

NAME = "flex-threads-cuda"
ORDER = 100
EXPECTED = "fx-tracing-flag-race"
DEVICE = "cuda"
SUMMARY = (
    "the story's placement: 5 target + 3 drafter threads over the GPUs, flex_attention "
    "compiled in each drafter thread (reproduces on torch < the compile-session flag)"
)
FAILURE = (
    "`python -m dflash_runtime train --device cuda --targets 5 --drafters 3 "
    "--attention flex --no-warmup-compile`"
)
FIX = "--warmup-compile: compile flex_attention once before the threads start"
TIMEOUT_S = 500.0


def command(ctx: Context) -> list[str]:
    """The runtime with the story's placement; only the warm-up differs."""
    return [
        ctx.python,
        "-m",
        "dflash_runtime",
        "train",
        "--device",
        "cuda",
        "--preset",
        "small",
        "--targets",
        "5",
        "--drafters",
        "3",
        "--attention",
        "flex",
        "--steps",
        "4",
        "--eval-prompts",
        "0",
        "--warmup-compile" if ctx.fix else "--no-warmup-compile",
    ]


def reproduced(run: Run) -> bool:
    """A drafter thread died of the nested-FX-trace RuntimeError."""
    return not run.ok and run.has("symbolically trace a dynamo-optimized function")
