"""One summary line for bench/gpu_check.sh from a snapshot or a `triage repro` JSON file.

    python bench/gpu_summary.py snapshot OUT/snapshot.json
    python bench/gpu_summary.py repro OUT/repro-cuda-oom.json

Standard library only: it runs with the GPU machine's own python3, nothing installed.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def snapshot_lines(snap: dict[str, Any]) -> list[str]:
    """The driver and each GPU as NVML (through `triage snapshot`) read them."""
    g = snap.get("gpus") or {}
    if not isinstance(g, dict):
        return [f"gpus: {g!r}"]
    lines = [f"source {g.get('source')} driver {g.get('driver_version')} cuda {g.get('cuda_driver_version')}"]
    for d in g.get("devices") or []:
        lines.append(
            f"gpu {d.get('index')} {d.get('name')} {d.get('memory_used_mib')}/"
            f"{d.get('memory_total_mib')} MiB util {d.get('utilization_pct')}% "
            f"temp {d.get('temperature_c')}C"
        )
    return lines


def repro_lines(out: dict[str, Any]) -> list[str]:
    """What the scenario run found: reproduced/fixed, the top diagnosis, why if skipped."""
    keys = ("scenario", "fix", "reproduced", "fixed", "top", "ok", "exit_status", "seconds", "killed_by")
    lines = [" ".join(f"{k}={out.get(k)}" for k in keys)]
    if out.get("skipped"):
        lines.append(f"skipped: {out['skipped']}")
    lines.append(f"versions: {out.get('versions')}")
    lines += [f"  | {t}" for t in (out.get("log_tail") or [])[-6:]]
    return lines


def main() -> int:
    """Print the lines; exit 1 when the file is missing or not JSON (the step failed)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=("snapshot", "repro"))
    p.add_argument("file")
    args = p.parse_args()
    try:
        with open(args.file, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{args.file}: unreadable ({e})")
        return 1
    print("\n".join(snapshot_lines(data) if args.kind == "snapshot" else repro_lines(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
