"""What a repro scenario is, and what its run hands back.

Standard library and triage's core only: scenario modules are imported by triage to
read their metadata, and some of them are also run as scripts by the scenario's own
interpreter, so nothing here (nor in a scenario module's top level) may import torch,
transformers or dflash_runtime.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from triage.structure.progress import step_loss


@dataclass(frozen=True)
class Context:
    """Where and how one scenario run happens."""

    python: str  # the interpreter that runs the scenario (sys.executable or --python)
    workdir: Path  # an empty folder for this run: checkpoints, summaries, shims
    device: str  # "cpu" or "cuda"
    fix: bool  # run the fix configuration instead of the failing one
    scenarios_dir: Path  # this package's folder: payload scripts live here

    def script(self, name: str) -> str:
        """The path of a payload script shipped next to the scenarios."""
        return str(self.scenarios_dir / name)


@dataclass(frozen=True)
class Run:
    """The outcome of the scenario's subprocess, as the runner saw it."""

    exit_status: int | None  # Popen.returncode: negative = killed by that signal; None = not run
    log: str  # the combined stdout+stderr, decoded with replacement
    seconds: float
    workdir: Path
    killed_by: str | None = None  # "timeout" or "memory-watchdog" when the runner killed it
    peak_rss_mib: float | None = None  # of the process tree, when the memory watchdog ran

    @property
    def ok(self) -> bool:
        """The process exited 0."""
        return self.exit_status == 0

    def has(self, text: str) -> bool:
        """The log contains `text` (plain substring)."""
        return text in self.log

    def losses(self) -> list[float]:
        """The losses of the step lines (`step N loss X ...`), nan and inf kept, read by
        the structure stage's own step/loss parser (what a report counts)."""
        out = []
        for text in self.log.splitlines():
            step, loss = step_loss(text)
            if step is not None and loss is not None:
                out.append(loss)
        return out

    def nonfinite_loss(self) -> bool:
        """Some step logged a loss that is nan or inf."""
        return any(not math.isfinite(x) for x in self.losses())


@dataclass(frozen=True)
class Scenario:
    """A failing configuration of dflash_runtime or of a real library, and its fix.

    Built from a scenario module's attributes (see scenarios/__init__.py):
    NAME, EXPECTED, DEVICE, SUMMARY, FAILURE, FIX, command(ctx) and reproduced(run),
    and optionally setup(ctx), env(ctx), TIMEOUT_S, RSS_LIMIT_MIB, FSIZE_LIMIT_BYTES,
    SHELL, snapshot_python(ctx), cannot_reproduce(ctx).
    """

    name: str
    expected: str  # the signature triage must put first
    device: str  # "cpu" or "cuda": where it can run
    summary: str  # what it does, one line
    failure: str  # the failing configuration, and what really makes it fail
    fix: str  # the remedy the --fix run applies
    module: ModuleType
    timeout_s: float = 120.0
    rss_limit_mib: Callable[[Context], float | None] | None = None
    fsize_limit_bytes: Callable[[Context], int | None] | None = None
    shell: bool = False  # run under `bash -c` (the shell reports a killed job, as in a script)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def command(self, ctx: Context) -> list[str]:
        """The argv of the run (failing or fix configuration, per ctx.fix)."""
        return list(self.module.command(ctx))

    def setup(self, ctx: Context) -> list[list[str]]:
        """Commands to run first (their output is not part of the triaged log)."""
        fn = getattr(self.module, "setup", None)
        return [list(c) for c in fn(ctx)] if fn else []

    def env(self, ctx: Context) -> dict[str, str]:
        """Extra environment variables for the run."""
        fn = getattr(self.module, "env", None)
        return dict(fn(ctx)) if fn else {}

    def reproduced(self, run: Run) -> bool:
        """The failure really happened (the process failed in the expected way)."""
        return bool(self.module.reproduced(run))

    def cannot_reproduce(self, ctx: Context) -> str | None:
        """Why the failure cannot happen with ctx's interpreter (None: it can).

        A scenario whose failure exists only in some library releases says so here,
        rather than forcing the error by another trigger.
        """
        fn = getattr(self.module, "cannot_reproduce", None)
        return fn(ctx) if fn else None

    def snapshot_python(self, ctx: Context) -> str:
        """The interpreter the evidence probe should run as (the run's own view)."""
        fn = getattr(self.module, "snapshot_python", None)
        return str(fn(ctx)) if fn else ctx.python
