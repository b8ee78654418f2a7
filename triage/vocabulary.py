"""The declared vocabulary of rule files: every name a rule may use, in one place.

A rule names events (`kind = "event"`, `event`, `where`), phases (`phase`,
`last_phase`), end states, facts (in `when` predicates and `{fact:NAME}` templates)
and its category. A name the pipeline never produces can never fire, so the loader
(triage.engine.rules) checks every one against this module and names the file, the key
and the closest known name.

Pure data and small helpers: importing it reads no file and starts nothing. Where
another module is the source of truth (the phase table of triage.structure.tables),
the names are derived from it, never copied.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

from triage.structure.tables import PHASES as _PHASE_TABLE

# -- events -----------------------------------------------------------------------------
# The event kinds triage.structure emits, and the `where` keys each one carries.
EVENTS: dict[str, frozenset[str]] = {
    # torchrun's per-child line: "failed (exitcode: -9) local_rank: 0 (pid: 7) of binary: ..."
    "child-exit": frozenset({"exitcode", "local_rank", "pid", "signal"}),
    # torchrun's "Root Cause (first observed failure)" report
    "torchrun-failure": frozenset({"root_rank", "exitcode", "signal", "error_file", "traceback", "host"}),
    # c10's "Exception raised from X at file.cpp:N" and the message line before it
    "cpp-exception": frozenset({"where", "file", "line", "message"}),
    # "terminate called after throwing an instance of 'T'"
    "cpp-terminate": frozenset({"type"}),
    # progress stopped: the step counter stands still, or the log went silent
    "stall": frozenset({"silent_s", "step_interval_s", "factor", "last_step", "repeats"}),
    # structure/series.py: a table's loss column turned non-finite; a loss scale that keeps
    # falling (halving after halving, no rise between)
    "nonfinite-loss": frozenset({"metric", "value"}),
    "loss-scale-falling": frozenset({"scale", "drops"}),
}

# -- phases and end states --------------------------------------------------------------
# The phases the structure stage recognises, in table order (the table is the truth).
PHASES: tuple[str, ...] = tuple(name for name, _ in _PHASE_TABLE)

# How a log ends (triage.model.EndState.kind).
END_STATES: tuple[str, ...] = (
    "clean-exit",
    "traceback",
    "error",
    "cut-mid-line",
    "no-terminal-event",
    "empty",
)

# -- packages ---------------------------------------------------------------------------
# Distribution names whose versions matter to ML training crashes, and the module each
# one imports as. Ordered: the packages the story turns on come first, so a probe cut
# short by its timeout still has them. triage.evidence.sources.packages hands this list to the
# probe (which runs in the training run's interpreter and cannot import triage).
PACKAGES: tuple[tuple[str, str], ...] = (
    ("torch", "torch"),
    ("transformers", "transformers"),
    ("accelerate", "accelerate"),
    ("safetensors", "safetensors"),
    ("numpy", "numpy"),
    ("triton", "triton"),
    ("flash-attn", "flash_attn"),
    ("xformers", "xformers"),
    ("bitsandbytes", "bitsandbytes"),
    ("deepspeed", "deepspeed"),
    ("peft", "peft"),
    ("trl", "trl"),
    ("datasets", "datasets"),
    ("tokenizers", "tokenizers"),
    ("huggingface-hub", "huggingface_hub"),
    ("nvidia-ml-py", "pynvml"),
    ("torchvision", "torchvision"),
    ("apex", "apex"),
)
# Other distributions reported by version only (never imported: they are libraries of
# CUDA binaries, and their versions tell which CUDA a torch wheel pulled in).
VERSION_ONLY: tuple[str, ...] = (
    "pytorch-triton",
    "pytorch-triton-rocm",
    "nvidia-cuda-runtime-cu12",
    "nvidia-cudnn-cu12",
    "nvidia-nccl-cu12",
    "nvidia-cuda-runtime",
    "nvidia-cudnn-cu13",
    "nvidia-nccl-cu13",
    "nvidia-cuda-runtime-cu13",
)
# As fact names spell them (triage/evidence/sources/: lower case, `_` as `-`).
PACKAGE_NAMES: tuple[str, ...] = tuple(
    name.lower().replace("_", "-") for name in [d for d, _ in PACKAGES] + list(VERSION_ONLY)
)

# -- facts ------------------------------------------------------------------------------
# Per-GPU readings: `gpu.all.<field>` holds when every GPU's value does, `gpu.any.<field>`
# when one does (triage.engine.predicates.holds).
GPU_FIELDS: tuple[str, ...] = (
    "memory_used_mib",
    "memory_total_mib",
    "utilization_pct",
    "ecc_uncorrected",
    "retired_pages",
    "remapped_rows_failed",
    "temperature_c",
    "ecc_uncorrected_aggregate",
    "retired_pages_pending",
    "remapped_rows_pending",
    "remapped_rows_uncorrectable",
    "power_w",
)
TMUX_KEYS: tuple[str, ...] = (
    "pane_dead",
    "pane_dead_status",
    "pane_dead_signal",
    "pane_pid",
    "history_size",
    "pane_pipe",
    "remain_on_exit",
)

# Families: a prefix and the names that may follow it.
FACT_FAMILIES: dict[str, tuple[str, ...]] = {
    "package.": PACKAGE_NAMES,  # the version when it imports, else None
    "installed.": PACKAGE_NAMES,  # the distribution's version, importable or not
    "imports.": PACKAGE_NAMES,  # True / False
    "import_error.": PACKAGE_NAMES,  # why it does not import
    "gpu.all.": GPU_FIELDS,
    "gpu.any.": GPU_FIELDS,
    "tmux.": TMUX_KEYS,
}

# The facts a snapshot gives, by the evidence source that provides them (its module in
# triage/evidence/sources/ takes its `provides` from here: each fact is declared once,
# with where it comes from). A name ending in "." is a family (FACT_FAMILIES).
SNAPSHOT_SOURCES: dict[str, tuple[str, ...]] = {
    "host": ("host",),
    "interpreter": (
        "python.executable",
        "python.version",
        "torch.version",
        "torch.cuda",
        "torch.cudnn",
        "torch.cuda_available",
        "torch.arch_list",
        "torch.hip",
        "torch.cuda_init_warning",
        "torch.device_count",
        "probe.complete",
    ),
    "packages": (
        "packages",
        "package.",
        "installed.",
        "imports.",
        "import_error.",
        "accelerate.required",
        "accelerate.sufficient",
    ),
    "env": (),
    "inductor_cache": (
        "inductor_cache.entries",
        "inductor_cache.exists",
        "inductor_cache.path",
        "inductor_cache.cold",
    ),
    "gpus": (
        "gpu.count",
        "gpu.names",
        "gpu.lost",
        "gpu.busy",
        "gpu.idle",
        "gpu.busy_count",
        "gpu.idle_count",
        "gpu.capabilities",
        "gpu.throttle_reasons",
        "gpu.all.",
        "gpu.any.",
        "driver.version",
        "driver.cuda",
    ),
    "kernel": (
        "kernel.readable",
        "kernel.reason",
        "kernel.xid",
        "kernel.xid_text",
        "kernel.oom_killer",
        "kernel.oom_killed",
        "kernel.fallen_off_bus",
        "kernel.fallen_off_bus_text",
        "kernel.xid_other",
        "kernel.xid_other_hw",
        "kernel.xid_other_text",
        "kernel.xid_ecc",
        "kernel.xid_ecc_text",
    ),
    "host_memory": (),
    "cgroup": ("cgroup.oom_kill",),
    "tmux": ("tmux.",),
    "compat": (
        "torch.cuda_newer_than_driver",
        "torch.cuda_major_newer_than_driver",
        "gpu.arch_unsupported",
        "torch.arch_ok",
    ),
}
# Every single (non-family) snapshot fact, in source order.
SNAPSHOT_FACTS: tuple[str, ...] = tuple(
    f for facts in SNAPSHOT_SOURCES.values() for f in facts if not f.endswith(".")
)
# Facts about the log itself (triage.engine.facts.log_facts).
LOG_FACTS: tuple[str, ...] = (
    "log.end_state",
    "log.truncated",
    "log.cut_mid_line",
    "log.last_phase",
    "log.has_traceback",
    "log.exceptions",
    "log.steps",
    "log.nonfinite_loss",
    "log.ranks",
)
# The log facts that say how the log ends: a rule says that with an end clause
# (`end_state`, `last_phase`), not with these in a clause's `when`.
END_FACTS: tuple[str, ...] = ("log.end_state", "log.truncated", "log.cut_mid_line", "log.last_phase")
# Facts about the process itself, added by whoever saw it end (triage watch, repro).
RUN_FACTS: tuple[str, ...] = (
    "run.exit_status",
    "run.signal",
    # what `triage watch` saw of the run: a pane's output is stdout and stderr together
    # (stderr_captured), the pane's process died (pane_died), and the run's rhythm
    "run.stderr_captured",
    "run.pane_died",
    "run.duration_s",
    "run.since_output_s",
    "run.step_interval_s",
    "run.stalled_s",
)

# Facts whose values are themselves vocabulary (checked in `==` / `!=` predicates).
FACT_VALUES: dict[str, tuple[str, ...]] = {"log.last_phase": PHASES, "log.end_state": END_STATES}

FACTS: frozenset[str] = frozenset(SNAPSHOT_FACTS + LOG_FACTS + RUN_FACTS)


def is_fact(name: str) -> bool:
    """Is `name` a fact the pipeline can produce (an exact name or a family member)?"""
    if name in FACTS:
        return True
    return any(
        name.startswith(prefix) and name[len(prefix) :] in members
        for prefix, members in FACT_FAMILIES.items()
    )


def fact_names() -> list[str]:
    """Every fact name, families spelled out (for hints and documentation)."""
    names = set(FACTS)
    for prefix, members in FACT_FAMILIES.items():
        names.update(prefix + m for m in members)
    return sorted(names)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean 'X'?)' for the closest choice, or '' when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def categories(rules_root: Path) -> tuple[str, ...]:
    """The categories of a rules folder: the names of its subfolders that hold rules."""
    if not rules_root.is_dir():
        return ()
    return tuple(sorted(d.name for d in rules_root.iterdir() if d.is_dir() and any(d.glob("*.toml"))))
