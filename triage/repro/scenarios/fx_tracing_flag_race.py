"""fx-tracing-flag-race: the story's configuration of dflash_runtime, on a cold compile
cache, where drafter threads compile flex_attention while the others call it.

Failing configuration (the story's, on CPU): `python -m dflash_runtime train --preset
tiny --attention flex --targets 2 --drafters 3 --no-warmup-compile --pad-multiple 16`
with an empty TORCHINDUCTOR_CACHE_DIR. Two target threads load and feed three drafter
threads; each drafter compiles the process-wide `torch.compile(flex_attention)` in its
own thread the first time it meets a batch shape, and the bucketing makes two shapes
(widths 48 and 64), so one drafter compiles a new shape in the middle of training. On
torch releases without the compile-session flag (2.11 in the story), a compile traces
with FX (make_fx), which sets the process-global
`torch.fx._symbolic_trace._is_fx_tracing_flag`; a compiled call entered in another
thread meanwhile raises `RuntimeError: Detected that you are using FX to symbolically
trace a dynamo-optimized function` (`torch/_dynamo/eval_frame.py`), which the runtime
re-raises from its main thread.

Not yet seen to fail: with that flag's context removed from torch 2.13 (a throwaway
experiment standing in for 2.11), this configuration trained its 6 steps cleanly. The
runtime's drafters meet at a gradient barrier every step, so their compiled calls all
come in the first milliseconds of a step, before another drafter's compile reaches its
FX tracing; compiles themselves are serialised by dynamo's compile lock. A real torch
2.11 (bench/gpu_check.sh runs this scenario there) says whether the story's window
opens; until it does, a run that trains cleanly is reported as not reproduced. With
`--device cuda` the same run trains on the GPU, where flex_attention's backward is
compiled too (on CPU the runtime differentiates a dense recompute instead), lazily, at
each drafter's first backward: a compile that need not wait for the other drafters.

torch releases that hold `torch.compiler._compile_session_context()` for the whole of a
compile (2.13 has it; the check reads the installed `torch/_dynamo/convert_frame.py`)
make `is_fx_symbolic_tracing()` false in every thread while any compile runs, so the
window is closed (shared/reference/fx-race.md). There the scenario says it cannot
reproduce and why, instead of forcing the error some other way; `--python` runs it with
an interpreter that has an older torch.

Fix (the story's): `--warmup-compile`: compile flex_attention for every batch shape the
bucketing produces, once, on the main thread before the drafter threads start.
"""

from __future__ import annotations

import json
import subprocess
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triage.repro.spec import Context, Run

NAME = "fx-tracing-flag-race"
ORDER = 10  # `triage repro --list` order: the story's two hypotheses first
EXPECTED = "fx-tracing-flag-race"
DEVICE = "cpu"
SUMMARY = (
    "dflash_runtime, the story's placement (2 targets, 3 drafter threads, flex on a cold "
    "compile cache, 2 batch shapes): a compile in one thread, a call in another "
    "(torch without the compile-session flag)"
)
FAILURE = (
    "`python -m dflash_runtime train --attention flex --targets 2 --drafters 3 "
    "--no-warmup-compile --pad-multiple 16`, empty TORCHINDUCTOR_CACHE_DIR"
)
FIX = (
    "--warmup-compile: compile flex_attention for every batch shape on one thread before "
    "the drafter threads start"
)
TIMEOUT_S = 300.0  # two CPU compiles of flex_attention (about 30 s each) and 6 steps

# The interpreter's torch version, and whether its compiler holds the compile-session
# flag; read from the files, without importing torch (seconds saved, nothing to fail).
_PROBE = r"""
import importlib.metadata as m, importlib.util as u, json, pathlib
spec = u.find_spec("torch")
src = ""
if spec is not None and spec.origin:
    p = pathlib.Path(spec.origin).parent / "_dynamo" / "convert_frame.py"
    src = p.read_text(errors="replace") if p.is_file() else ""
try:
    v = m.version("torch")
except m.PackageNotFoundError:
    v = None
print(json.dumps({"torch": v, "session_flag": "_compile_session_context" in src}))
"""


def torch_state(python: str) -> dict[str, object]:
    """{"torch": version or None, "session_flag": bool} of `python`'s torch."""
    try:
        out = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=60, check=True)
        return dict(json.loads(out.stdout))
    except (OSError, subprocess.SubprocessError, ValueError):
        return {"torch": None, "session_flag": False}


def cannot_reproduce(ctx: Context) -> str | None:
    """Why this interpreter cannot show the race (None: it can)."""
    state = torch_state(ctx.python)
    if state["session_flag"]:  # unreadable or without torch: the run itself says what fails
        return (
            f"cannot reproduce on torch {state['torch']}: its compiler holds "
            "torch.compiler._compile_session_context() for the whole of every compile "
            "(torch/_dynamo/convert_frame.py), so is_fx_symbolic_tracing() is false in "
            "every thread while any compile runs and a compile's FX tracing no longer "
            "trips another thread's compiled call; run it with --python PATH of an "
            "interpreter whose torch lacks that flag (2.11, the story's)"
        )
    return None


def env(ctx: Context) -> dict[str, str]:
    """A cold compile cache of the run's own, as on the story's first run."""
    return {"TORCHINDUCTOR_CACHE_DIR": str(ctx.workdir / "inductor-cache")}


def command(ctx: Context) -> list[str]:
    """The runtime in the story's placement; only the warm-up differs."""
    return [
        ctx.python,
        "-m",
        "dflash_runtime",
        "train",
        "--device",
        ctx.device,
        "--preset",
        "tiny",
        "--attention",
        "flex",
        "--targets",
        "2",
        "--drafters",
        "3",
        "--pad-multiple",
        "16",
        "--steps",
        "6",
        "--eval-prompts",
        "0",
        "--target-pretrain-steps",
        "0",
        "--cpu-threads",
        "1",
        "--warmup-compile" if ctx.fix else "--no-warmup-compile",
    ]


def reproduced(run: Run) -> bool:
    """The runtime died of the nested-FX-trace RuntimeError raised in a drafter thread."""
    return not run.ok and run.has("symbolically trace a dynamo-optimized function")
