"""missing-accelerate: the runtime loads its target with `from_pretrained(path,
device_map=...)` in an interpreter where accelerate cannot be imported.

Failing configuration: `python -m dflash_runtime train --target-path DIR` (the target
folder written first by `python -m dflash_runtime save-target DIR`), started through
hide_module.py, which makes accelerate invisible to this process only: `find_spec`
returns None and its distribution metadata is gone, exactly the two things
transformers' `is_accelerate_available` reads. Nothing is uninstalled. transformers
then refuses the device_map (`ValueError: Using a `device_map` ... requires
`accelerate``, or the older `ImportError: ... requires Accelerate`).

Fix: the same load in the same interpreter with accelerate importable (installed).
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triage.repro.spec import Context, Run

NAME = "missing-accelerate"
ORDER = 20
EXPECTED = "missing-accelerate"
DEVICE = "cpu"
SUMMARY = "dflash_runtime loads its target with device_map while accelerate is not importable"
FAILURE = (
    "`python -m dflash_runtime train --target-path DIR` with accelerate hidden from "
    "the interpreter (meta-path finder + hidden distribution; nothing uninstalled)"
)
FIX = "the same load with accelerate importable"
TIMEOUT_S = 100.0


def _target(ctx: Context) -> str:
    return str(ctx.workdir / "target")


def setup(ctx: Context) -> list[list[str]]:
    """Write a tiny target checkpoint folder (random init, no pretraining)."""
    return [
        [
            ctx.python,
            "-m",
            "dflash_runtime",
            "save-target",
            _target(ctx),
            "--target-pretrain-steps",
            "0",
            "--device",
            "cpu",
        ]
    ]


def _hidden(ctx: Context) -> list[str]:
    return [] if ctx.fix else [ctx.script("hide_module.py"), "accelerate", "--"]


def command(ctx: Context) -> list[str]:
    """The runtime's train command, loading the saved target with device_map."""
    device = "cuda" if ctx.device == "cuda" else "cpu"
    return [
        ctx.python,
        *_hidden(ctx),
        "-m",
        "dflash_runtime",
        "train",
        "--target-path",
        _target(ctx),
        "--device",
        device,
        "--steps",
        "2",
        "--eval-prompts",
        "0",
    ]


def reproduced(run: Run) -> bool:
    """transformers refused the device_map for lack of accelerate."""
    return not run.ok and (
        run.has("requires `accelerate`")
        or run.has("requires Accelerate")
        or run.has("No module named 'accelerate")
    )


def snapshot_python(ctx: Context) -> str:
    """An interpreter that sees what the run saw (accelerate hidden in the failing run)."""
    if ctx.fix:
        return ctx.python
    wrapper = ctx.workdir / "python-without-accelerate"
    wrapper.write_text(
        f'#!/bin/sh\nexec "{ctx.python}" "{ctx.script("hide_module.py")}" accelerate -- "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return os.fspath(wrapper)
