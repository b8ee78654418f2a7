"""The repro scenarios: one module per scenario, each a failing configuration and its fix.

A scenario module defines, at its top level and with the standard library only:

    NAME, EXPECTED, DEVICE ("cpu" | "cuda"), SUMMARY, FAILURE, FIX
    command(ctx) -> argv            the run (failing, or fix when ctx.fix)
    reproduced(run) -> bool         the failure really happened
    optional: setup(ctx) -> [argv], env(ctx) -> {}, TIMEOUT_S, RSS_LIMIT_MIB,
              FSIZE_LIMIT_BYTES, SHELL, snapshot_python(ctx),
              cannot_reproduce(ctx) -> reason or None (the failure needs other releases)

Payload code that needs torch or transformers imports them inside functions that only
run in the scenario's subprocess; triage itself never imports them, nor dflash_runtime.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from triage.repro.spec import Context, Scenario

# Order of `triage repro --list`: the story's two hypotheses first.
MODULES = (
    "fx_tracing_flag_race",
    "missing_accelerate",
    "host_oom_killed",
    "nan_loss",
    "dataloader_worker_crash",
    "truncated_unknown",
    "nccl_timeout",
    "checkpoint_save_failed",
    "cuda_oom",
    "flex_threads_cuda",
)

HERE = Path(__file__).resolve().parent


def _limit(value: Any) -> Callable[[Context], Any] | None:
    """A module attribute that is a number, or a function of the context, as a function."""
    if value is None:
        return None
    if callable(value):
        return value  # type: ignore[no-any-return]
    return lambda ctx: value


def load(module_name: str) -> Scenario:
    """Build the Scenario of one module of this package."""
    m = importlib.import_module(f"{__name__}.{module_name}")
    return Scenario(
        name=m.NAME,
        expected=m.EXPECTED,
        device=m.DEVICE,
        summary=m.SUMMARY,
        failure=m.FAILURE,
        fix=m.FIX,
        module=m,
        timeout_s=float(getattr(m, "TIMEOUT_S", 120.0)),
        rss_limit_mib=_limit(getattr(m, "RSS_LIMIT_MIB", None)),
        fsize_limit_bytes=_limit(getattr(m, "FSIZE_LIMIT_BYTES", None)),
        shell=bool(getattr(m, "SHELL", False)),
    )


def all_scenarios() -> list[Scenario]:
    """Every scenario, in listing order."""
    return [load(m) for m in MODULES]


def by_name() -> dict[str, Scenario]:
    """Scenarios keyed by their name (the CLI's NAME)."""
    return {s.name: s for s in all_scenarios()}
