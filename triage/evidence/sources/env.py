"""Source `env`: the environment variables that change how a run behaves.

A fixed list, so no secret leaks into a snapshot. Recorded for people to read; no rule
reads it yet.
"""

from __future__ import annotations

from typing import Any

from triage.evidence.sources.base import Context, Source, no_facts
from triage.vocabulary import SNAPSHOT_SOURCES

ENV_KEYS = (
    "CUDA_VISIBLE_DEVICES",
    "TORCHINDUCTOR_CACHE_DIR",
    "TRITON_CACHE_DIR",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "TORCH_LOGS",
    "TORCHDYNAMO_VERBOSE",
    "NCCL_DEBUG",
    "NCCL_P2P_DISABLE",
    "NCCL_IB_DISABLE",
    "CUDA_LAUNCH_BLOCKING",
    "OMP_NUM_THREADS",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
)


def collect(ctx: Context) -> dict[str, Any]:
    """The listed variables that are set (in the run's environment)."""
    env = ctx.environ
    return {"env": {k: env[k] for k in ENV_KEYS if k in env}}


SOURCE = Source(
    name="env",
    what="env",
    sections=("env",),
    provides=SNAPSHOT_SOURCES["env"],
    facts=no_facts,
    collect=collect,
)
