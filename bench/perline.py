"""The per-line path, in-process: what small logs, `--full` and the tests go through.

    python bench/perline.py                 # the 8 MiB shapes of bench/scan.py, and the corpora
    python bench/perline.py --stages        # also where a line's time goes, stage by stage

Three numbers, each best of `--repeat`, rules loaded first (start-up is not counted:
`bench/scan.py --full` times the CLI with it):

- MB/s of `analyze(..., fast=False)` on the steps and ranks-logging logs `bench/scan.py
  --mib 8` writes (generated here if missing, into the same /tmp path);
- the mean analysis of a small real log: every fixture and real-corpus log, one by one;
- with --stages, microseconds per line of each stage run alone over a whole log (split,
  clean, peel, the rest of ingest, progress on step lines and on the others).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scan import generate  # noqa: E402  (bench/scan.py: the same logs)

from triage.engine import analyze, get_rules  # noqa: E402

SHAPES = ("steps", "ranks-logging")
SMALL = ["fixtures", *(f"tests/{c}" for c in ("corpus", "corpus_real", "corpus_real3", "corpus_real4"))]
SMALL += ["tests/corpus_real5", "tests/corpus_real6"]


def best(fn: Callable[[], Any], repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def log_of(shape: str) -> Path:
    path = Path("/tmp") / f"triage-bench-{shape}-8mib.log"
    if not path.exists():
        generate(path, 8, shape)
    return path


def stages(path: Path, repeat: int) -> list[tuple[str, float]]:
    """Microseconds per line of each stage, alone over the log."""
    from triage.ingest import Ingest
    from triage.ingest.normalize import SourceState, _clean, normalize_plain, peel
    from triage.ingest.reader import iter_raw
    from triage.structure.progress import ProgressReader
    from triage.structure.timeline import Timeline

    raws = list(iter_raw(str(path)))
    texts = [_clean(r.data) for r in raws]
    lines = list(Ingest([str(path)]))
    step = [x for x in lines if "loss" in x.text and "step" in x.text]
    other = [x for x in lines if not ("loss" in x.text and "step" in x.text)]

    def feed(ls: list[Any]) -> Callable[[], None]:
        def run() -> None:
            p = ProgressReader(Timeline())
            for x in ls:
                p.feed(x)

        return run

    n = len(raws)
    rows = [
        ("split into raw lines", best(lambda: list(iter_raw(str(path))), repeat) / n),
        ("decode and clean", best(lambda: [_clean(r.data) for r in raws], repeat) / n),
        ("prefix peeling", best(lambda: [peel(t, SourceState()) for t in texts], repeat) / n),
        (
            "normalize (clean, glue, peel)",
            best(lambda: [normalize_plain(r.data, SourceState()) for r in raws], repeat) / n,
        ),
        ("all of ingest (Ingest -> Lines)", best(lambda: list(Ingest([str(path)])), repeat) / n),
        (f"progress, step lines ({len(step)})", best(feed(step), repeat) / max(1, len(step))),
        (f"progress, other lines ({len(other)})", best(feed(other), repeat) / max(1, len(other))),
    ]
    return [(name, s * 1e6) for name, s in rows]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stages", action="store_true", help="also time each stage alone, per line")
    args = ap.parse_args()
    rules = get_rules()
    for shape in SHAPES:
        path = log_of(shape)
        analyze([str(path)], rules=rules, fast=False)  # warm: lazy regexes compiled
        s = best(lambda p=path: analyze([str(p)], rules=rules, fast=False), args.repeat)
        size = path.stat().st_size
        print(f"{shape:14s} {size / 1e6:5.1f} MB  {s:6.2f} s  {size / s / 1e6:5.1f} MB/s", flush=True)
        if args.stages:
            for name, us in stages(path, args.repeat):
                print(f"    {name:40s} {us:6.2f} us/line")
    logs = [p for d in SMALL for p in sorted((ROOT / d).rglob("*.log"))]
    for p in logs:
        analyze([str(p)], rules=rules, fast=False)
    total = sum(p.stat().st_size for p in logs)
    s = best(lambda: [analyze([str(p)], rules=rules, fast=False) for p in logs], args.repeat)
    print(
        f"small logs     {len(logs)} logs, {total / 1e6:.1f} MB: {s / len(logs) * 1e3:.2f} ms each on average"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
