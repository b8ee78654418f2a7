"""facts: the one home of the facts the engine derives itself: facts about the log
(`log.*`, from the structure; declared in triage.vocabulary LOG_FACTS), and what the
report shows of the snapshot's facts (the environment summary, the GPU table).
Snapshot facts themselves come from triage.evidence; `run.*` facts from triage watch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from triage.model import EndState, GpuReading, SourceInfo
from triage.structure import Structure


def gpu_readings(facts: Mapping[str, Any]) -> tuple[GpuReading, ...]:
    """Each GPU of the snapshot with its memory and utilization (empty without one).
    The per-field facts are lists in device order; a field unreadable on some GPU is an
    Unknown, and then that column stays empty rather than misaligned."""
    count = facts.get("gpu.count")
    if not isinstance(count, int) or count <= 0:
        return ()

    def column(name: str) -> list[Any]:
        v = facts.get(f"gpu.all.{name}")
        return list(v) if isinstance(v, list) and len(v) == count else [None] * count

    names = facts.get("gpu.names")
    names = list(names) if isinstance(names, list) and len(names) == count else [""] * count
    used, total, util = column("memory_used_mib"), column("memory_total_mib"), column("utilization_pct")

    def num(v: Any) -> float | None:
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

    return tuple(
        GpuReading(
            index=i,
            name=str(names[i] or ""),
            memory_used_mib=num(used[i]),
            memory_total_mib=num(total[i]),
            utilization_pct=num(util[i]),
        )
        for i in range(count)
    )


SUMMARY_FACTS = (
    ("python", "python.executable"),
    ("python version", "python.version"),
    ("torch", "package.torch"),
    ("torch CUDA", "torch.cuda"),
    ("transformers", "package.transformers"),
    ("accelerate", "package.accelerate"),
    ("driver", "driver.version"),
    ("driver CUDA", "driver.cuda"),
    ("GPUs", "gpu.count"),
    ("GPU memory used (MiB)", "gpu.all.memory_used_mib"),
    ("inductor cache entries", "inductor_cache.entries"),
    ("kernel Xid codes", "kernel.xid"),
    ("kernel OOM killer", "kernel.oom_killer"),
    # what `triage watch` saw of the run itself
    ("exit status", "run.exit_status"),
    ("exit signal", "run.signal"),
    ("stderr captured", "run.stderr_captured"),
    ("pane died", "run.pane_died"),
    ("run time (s)", "run.duration_s"),
    ("last output before the end (s)", "run.since_output_s"),
    ("usual step interval (s)", "run.step_interval_s"),
    ("stalled for (s)", "run.stalled_s"),
)


def evidence_summary(facts: Mapping[str, Any]) -> dict[str, str]:
    """A short environment table from snapshot facts (empty without a snapshot)."""
    out: dict[str, str] = {}
    for label, key in SUMMARY_FACTS:
        if key not in facts:
            continue
        v = facts[key]
        if v is None:
            out[label] = "absent"
        elif isinstance(v, list):
            out[label] = ", ".join(str(x) for x in v) or "none"
        else:
            out[label] = str(v)
    return out


def log_facts(st: Structure, sources: list[SourceInfo]) -> dict[str, Any]:
    """Facts about the log itself, for evidence predicates (`log.truncated`, ...)."""
    end: EndState = st.end_state
    return {
        "log.end_state": end.kind,
        "log.truncated": end.truncated,
        "log.cut_mid_line": end.kind == "cut-mid-line",
        "log.last_phase": end.last_phase,
        "log.has_traceback": any(e.has_traceback for e in st.exceptions),
        "log.exceptions": len(st.exceptions),
        "log.steps": st.metrics.get("steps", 0),
        "log.nonfinite_loss": st.metrics.get("nonfinite_loss", 0),
        "log.ranks": len({r for s in sources for r in s.ranks}),
    }
