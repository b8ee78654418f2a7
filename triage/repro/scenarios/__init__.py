"""The repro scenarios: one module per scenario, each a failing configuration and its fix.

A scenario module defines, at its top level and with the standard library only:

    NAME, EXPECTED, DEVICE ("cpu" | "cuda"), SUMMARY, FAILURE, FIX
    command(ctx) -> argv            the run (failing, or fix when ctx.fix)
    reproduced(run) -> bool         the failure really happened
    optional: setup(ctx) -> [argv], env(ctx) -> {}, TIMEOUT_S, RSS_LIMIT_MIB,
              FSIZE_LIMIT_BYTES, SHELL, snapshot_python(ctx),
              cannot_reproduce(ctx) -> reason or None (the failure needs other releases),
              ORDER (its place in `triage repro --list`, lowest first; default last)

A new scenario is one module here: every module of this package that defines NAME is a
scenario (the others, like hide_module.py, are payload helpers), listed by ORDER and
then by NAME.

Payload code that needs torch or transformers imports them inside functions that only
run in the scenario's subprocess; triage itself never imports them, nor dflash_runtime.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from triage.repro.spec import Context, Scenario

HERE = Path(__file__).resolve().parent
DEFAULT_ORDER = 1000  # a scenario without ORDER is listed after the ordered ones


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


def module_names() -> list[str]:
    """The modules of this package, by name (scenarios and payload helpers alike)."""
    return sorted(m.name for m in pkgutil.iter_modules([str(HERE)]) if not m.ispkg)


def all_scenarios() -> list[Scenario]:
    """Every scenario, in listing order: by ORDER, then by name."""
    found = []
    for name in module_names():
        m = importlib.import_module(f"{__name__}.{name}")
        if hasattr(m, "NAME"):
            found.append((getattr(m, "ORDER", DEFAULT_ORDER), m.NAME, name))
    return [load(name) for _, _, name in sorted(found)]


def by_name() -> dict[str, Scenario]:
    """Scenarios keyed by their name (the CLI's NAME)."""
    return {s.name: s for s in all_scenarios()}
