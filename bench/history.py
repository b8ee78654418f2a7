"""What the crash history costs: per triage, and with many jobs recording at once.

    python bench/history.py [--pg-url postgresql://...] [--procs 64] [--each 20]

1. The time `triage logs` spends in the history (open, look up, record, notes) on a
   fixture with a snapshot, in-process, median of N: analyze alone vs analyze + history.
2. P processes (fork) each recording K crashes at once into a fresh store: wall time,
   records/s, lost records, beside what a user would script instead: one JSON line per
   crash appended to a shared file under flock(2).

PostgreSQL is measured when --pg-url (or TRIAGE_TEST_PG_URL) names a server.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage import evidence  # noqa: E402  (after the path: the checkout's triage)
from triage.engine import analyze, analyze_text  # noqa: E402
from triage.history import History, derive_run  # noqa: E402
from triage.history.store import open_store  # noqa: E402

LOG = ROOT / "fixtures" / "cuda-oom" / "001-rank3-cascade-8ranks" / "input.log"
SNAP = ROOT / "tests" / "data" / "snapshots" / "venv-no-accelerate.json"


def per_triage(url: str, n: int, tmp: Path) -> tuple[float, float]:
    facts = evidence.facts_from_snapshot(evidence.load_snapshot(str(SNAP)))
    log = tmp / "train.log"
    log.write_bytes(LOG.read_bytes())
    analyze([str(log)], facts=facts)  # rules loaded, caches warm
    plain, with_history = [], []
    for i in range(n):
        # each triage a new crash of one of 4 runs (a rewritten log: not a re-triage)
        os.utime(log, ns=((1_800_000_000 + i) * 10**9,) * 2)
        t = time.perf_counter()
        analyze([str(log)], facts=facts)
        plain.append(time.perf_counter() - t)
        t = time.perf_counter()
        h = History(
            derive_run([str(log)], name=f"bench-{i % 4}"),
            url=url,
            facts=facts,
            warn=lambda w: sys.exit(f"history failed: {w}"),
        )
        h.finish(analyze([str(log)], facts=facts, recall=h.recall))
        with_history.append(time.perf_counter() - t)
    return statistics.median(plain) * 1e3, statistics.median(with_history) * 1e3


def _record(url: str, i: int, each: int, report: object, barrier: object) -> None:
    barrier.wait()  # type: ignore[attr-defined]
    for _ in range(each):
        h = History(derive_run([], name=f"job-{i}"), url=url, warn=lambda w: os._exit(3))
        h.finish(report)  # type: ignore[arg-type]
    os._exit(0)


def _jsonl(path: str, i: int, each: int, report: object, barrier: object) -> None:
    barrier.wait()  # type: ignore[attr-defined]
    from triage.report.json import report_dict

    line = json.dumps(report_dict(report)) + "\n"  # type: ignore[arg-type]
    for _ in range(each):
        with open(path, "a", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.write(line)
            fcntl.flock(fh, fcntl.LOCK_UN)
    os._exit(0)


def concurrent(target: object, where: str, procs: int, each: int) -> tuple[float, list[int | None]]:
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(procs + 1)
    report = analyze_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB")
    ps = [
        ctx.Process(target=target, args=(where, i, each, report, barrier))  # type: ignore[arg-type]
        for i in range(procs)
    ]
    for p in ps:
        p.start()
    barrier.wait()
    t = time.perf_counter()
    for p in ps:
        p.join()
    return time.perf_counter() - t, [p.exitcode for p in ps]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--pg-url", default=os.environ.get("TRIAGE_TEST_PG_URL"))
    ap.add_argument("--procs", type=int, default=64)
    ap.add_argument("--each", type=int, default=20)
    ap.add_argument("--n", type=int, default=30, help="triages for the per-triage median")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="triage-bench-history-"))
    stores = {"sqlite": f"sqlite:///{tmp}/history.sqlite"}
    if args.pg_url:
        stores["postgresql"] = args.pg_url
    print("| store | analyze ms | analyze + history ms | history ms |\n|---|---|---|---|")
    for name, url in stores.items():
        a, b = per_triage(url, args.n, tmp)
        print(f"| {name} | {a:.1f} | {b:.1f} | {b - a:.1f} |")
    total = args.procs * args.each
    print(f"\n{args.procs} processes x {args.each} records at once ({total} in all)\n")
    print("| store | wall s | records/s | stored | failed processes |\n|---|---|---|---|---|")
    for name, url in stores.items():
        if name == "sqlite":
            url = f"sqlite:///{tmp}/concurrent.sqlite"
        else:
            store = open_store(url)
            with store._write() as cur:
                cur.execute("DELETE FROM crashes")
            store.close()
        wall, codes = concurrent(_record, url, args.procs, args.each)
        store = open_store(url)
        stored = store.count()
        store.close()
        print(f"| {name} | {wall:.2f} | {total / wall:.0f} | {stored} | {sum(c != 0 for c in codes)} |")
    path = str(tmp / "crashes.jsonl")
    wall, codes = concurrent(_jsonl, path, args.procs, args.each)
    with open(path, encoding="utf-8") as fh:
        lines = sum(1 for _ in fh)
    print(
        f"| JSON lines + flock (a script's) | {wall:.2f} | {total / wall:.0f} | {lines} | "
        f"{sum(c != 0 for c in codes)} |"
    )


if __name__ == "__main__":
    main()
