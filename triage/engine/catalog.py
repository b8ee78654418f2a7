"""The canonical signatures (../shared/reference/signatures.md) and rule coverage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# (id, category). Never rename an id: add an alias in the rule instead.
SIGNATURES: tuple[tuple[str, str], ...] = (
    ("missing-accelerate", "env"),
    ("missing-module", "env"),
    ("extension-import-error", "env"),
    ("cuda-version-mismatch", "env"),
    ("hub-unreachable", "env"),
    ("fx-tracing-flag-race", "compile"),
    ("inductor-compile-error", "compile"),
    ("torch-compile-recompile-limit", "compile"),
    ("cuda-oom", "memory"),
    ("host-oom-killed", "memory"),
    ("dataloader-shm", "data"),
    ("dataloader-worker-crash", "data"),
    ("cuda-illegal-memory-access", "gpu"),
    ("device-side-assert", "gpu"),
    ("cuda-launch-failure", "gpu"),
    ("gpu-fell-off-bus", "hardware"),
    ("gpu-ecc-error", "hardware"),
    ("xid-error", "hardware"),
    ("nccl-timeout", "distributed"),
    ("nccl-error", "distributed"),
    ("rendezvous-failure", "distributed"),
    ("torchrun-child-failed", "distributed"),
    ("nan-loss", "numerics"),
    ("checkpoint-save-failed", "io"),
    ("checkpoint-load-corrupt", "io"),
    ("disk-full", "io"),
    ("killed-by-signal", "process"),
    ("training-hang", "process"),
    ("truncated-unknown", "process"),
    ("fatal-signal", "process"),
    ("unclassified-error", "process"),
)
CANONICAL = {s for s, _ in SIGNATURES}


def fixtures_dir() -> Path | None:
    """The project's fixtures folder: ./fixtures, else the one beside the package."""
    for cand in (Path.cwd() / "fixtures", Path(__file__).resolve().parents[2] / "fixtures"):
        if cand.is_dir():
            return cand
    return None


def fixture_counts(root: Path | None = None) -> dict[str, int]:
    root = root or fixtures_dir()
    counts: dict[str, int] = {}
    if root is None:
        return counts
    for exp in root.glob("*/*/expected.toml"):
        sig = exp.parent.parent.name
        counts[sig] = counts.get(sig, 0) + 1
    return counts


def coverage(extra: list[Path] | None = None) -> list[dict[str, Any]]:
    from triage.engine import get_rules

    rules = {r.id: r for r in get_rules(extra)}
    counts = fixture_counts()
    rows: list[dict[str, Any]] = []
    ids = [s for s, _ in SIGNATURES] + sorted(set(rules) - CANONICAL)
    cats = dict(SIGNATURES)
    for sid in ids:
        r = rules.get(sid)
        rows.append(
            {
                "signature": sid,
                "category": r.category if r else cats.get(sid),
                "rule": str(Path(r.path).parent.name + "/" + Path(r.path).name) if r else None,
                "title": r.title if r else None,
                "fixtures": counts.get(sid, 0),
                "canonical": sid in CANONICAL,
            }
        )
    return rows
