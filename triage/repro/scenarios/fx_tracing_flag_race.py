"""fx-tracing-flag-race: drafter threads call a compiled flex_attention while another
thread traces with torch.fx.

Failing configuration (the story's shape on one CPU): three drafter threads share one
`torch.compile(flex_attention)` and compile it in their own threads (no warm-up before
they start). Drafter 0 then traces a module with `torch.fx.symbolic_trace`, which sets
the process-global `torch.fx._symbolic_trace._is_fx_tracing_flag` for the whole trace;
drafters 1 and 2 call the already compiled flex_attention meanwhile, and the wrapper of
every compiled function (`torch/_dynamo/eval_frame.py`) sees the flag and raises
`RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized
function`. The overlap is made certain with events, not luck: the traced module's
forward waits (while the flag is set) until the other drafters have made their call.
On releases without the compile-session flag (2.11 in the story) a compile's own FX
tracing in one thread does the same to the others; torch 2.13 clears
`is_fx_symbolic_tracing()` for the duration of any compile
(shared/reference/fx-race.md), so the explicit symbolic_trace stands in for it here.

Fix: compile and warm up flex_attention, and do the FX tracing, once on the main thread
before the drafter threads start; the threads then only call the compiled function.
(The traced forward waits only while drafter threads run: with none running there is
nothing to overlap with.)

Run alone: `python fx_tracing_flag_race.py [--fix]` (torch >= 2.5 for flex_attention).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triage.repro.spec import Context, Run

NAME = "fx-tracing-flag-race"
EXPECTED = "fx-tracing-flag-race"
DEVICE = "cpu"
SUMMARY = ("3 drafter threads call a compiled flex_attention while drafter 0 FX-traces "
           "(torch.fx.symbolic_trace, made to overlap with events)")
FAILURE = ("torch.compile(flex_attention) compiled inside the drafter threads; one thread "
           "FX-traces while the others call the compiled function")
FIX = "compile, warm up and trace once on the main thread before the drafter threads start"
TIMEOUT_S = 110.0

# One fixed shape keeps the run to one flex_attention compile (about 10-20 s on CPU).
BATCH, HEADS, SEQ, DIM = 1, 2, 128, 16
DRAFTERS = 3
CALLS = 4  # compiled calls per drafter thread


def command(ctx: Context) -> list[str]:
    """Run this file with the scenario's interpreter."""
    return [ctx.python, __file__, *(["--fix"] if ctx.fix else [])]


def reproduced(run: Run) -> bool:
    """The process died of the nested-FX-trace RuntimeError."""
    return not run.ok and run.has("symbolically trace a dynamo-optimized function")


def main(fix: bool) -> int:
    """The drafter threads, in the failing or the fixed order."""
    import threading
    import time

    import torch
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    def say(text: str) -> None:
        # One write per line: print() writes text and newline separately, and the
        # threads' lines would interleave.
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    torch.manual_seed(0)
    say(f"torch {torch.__version__}; {DRAFTERS} drafter threads; fix={fix}")

    def causal(b: torch.Tensor, h: torch.Tensor, q: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
        return q >= kv

    block_mask = create_block_mask(causal, BATCH, None, SEQ, SEQ, device="cpu")
    q, k, v = (torch.randn(BATCH, HEADS, SEQ, DIM) for _ in range(3))
    # One process-wide wrapper, as transformers' flex integration keeps.
    flex = torch.compile(flex_attention, dynamic=False)

    workers_running = threading.Event()
    tracing = threading.Event()
    called = [threading.Event() for _ in range(DRAFTERS)]
    warm = [threading.Event() for _ in range(DRAFTERS)]

    class MaskPrep(torch.nn.Module):
        """What drafter 0 traces. Its forward runs while the global FX flag is set."""

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if workers_running.is_set():
                tracing.set()
                # Hold the trace open until the other drafters have called flex (or 30 s).
                for j in range(1, DRAFTERS):
                    called[j].wait(timeout=30)
            return x * 2

    def fx_trace(who: str) -> None:
        say(f"{who}: torch.fx.symbolic_trace(MaskPrep)...")
        gm = torch.fx.symbolic_trace(MaskPrep())
        say(f"{who}: traced {len(list(gm.graph.nodes))} nodes")

    errors: list[BaseException] = []
    stop = threading.Event()

    def drafter(j: int) -> None:
        try:
            if not fix:
                say(f"Compiling flex_attention... (drafter {j}, in its thread)")
            out = flex(q, k, v, block_mask=block_mask)  # compiles here without the fix
            warm[j].set()
            if not fix and j == 0:
                for other in warm[1:]:
                    other.wait(timeout=60)
                fx_trace("drafter 0")
                return
            if not fix:
                tracing.wait(timeout=60)  # call while drafter 0 is inside the trace
            for step in range(1, CALLS + 1):
                if stop.is_set():
                    return
                out = flex(q, k, v, block_mask=block_mask)
                if step == 1:
                    called[j].set()
                say(f"drafter {j} step {step} out {float(out.abs().mean()):.4f}")
        except BaseException as e:  # re-raised by the main thread, with this traceback
            errors.append(e)
            stop.set()
        finally:
            called[j].set()
            warm[j].set()

    t0 = time.perf_counter()
    if fix:
        say("Compiling flex_attention...")
        flex(q, k, v, block_mask=block_mask)
        say(f"Compiled flex_attention in {time.perf_counter() - t0:.1f}s")
        fx_trace("main")
    threads = [threading.Thread(target=drafter, args=(j,), name=f"drafter-{j}")
               for j in range(DRAFTERS)]
    say(f"Starting {DRAFTERS} drafter threads...")
    workers_running.set()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    say(f"done: {DRAFTERS} drafters x {CALLS} compiled calls in "
          f"{time.perf_counter() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main("--fix" in sys.argv[1:]))
