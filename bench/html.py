"""The HTML report: how big it is and how fast a browser shows it, side by side with
what a reader would open instead (the raw log itself, in the same browser).

    python bench/html.py                 # cut-off, healthy, 500-rank folder (load times)
    python bench/html.py --mib 512       # and the page of an 8-rank 512 MiB log (size)

Each page is written by `triage logs ... --format html -o` (the wall time of that is
printed too), then opened in headless Chromium (the system's, driven by playwright) five
times; the time is the navigation's loadEventEnd (parse, style, layout of every inline
SVG), median of the five, and the first frame drawn after it (two animation frames). The raw log
is opened the same way. The 512 MiB log is bench/scan.py's `ranks-logging` shape (8
ranks, `[rankN]:` on every line, an OOM cascade at the end), cached in /tmp.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

RUNS = 5


def write_page(paths: list[Path], out: Path) -> float:
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "triage", "logs", *map(str, paths), "--format", "html", "-o", str(out)],
        check=True,
    )
    return time.perf_counter() - t


def load_ms(browser: object, path: Path) -> tuple[float, float]:
    """Median loadEventEnd and first frame after it (ms) over RUNS fresh pages."""
    loads, paints = [], []
    for _ in range(RUNS):
        page = browser.new_page(viewport={"width": 1100, "height": 900})  # type: ignore[attr-defined]
        page.goto(path.resolve().as_uri(), wait_until="load")
        nav = page.evaluate("performance.getEntriesByType('navigation')[0].toJSON()")
        # the first frame drawn after load, from the navigation's start
        fcp = page.evaluate(
            "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now()))))"
        )
        loads.append(nav["loadEventEnd"])
        paints.append(fcp)
        page.close()
    return statistics.median(loads), statistics.median(paints)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=0, help="also the page of an 8-rank log this big")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright
    from test_html import CUT, HEALTHY, OOM, _rank_folder

    work = Path(tempfile.mkdtemp(prefix="triage-bench-html-"))
    cases: list[tuple[str, list[Path], Path]] = [
        ("cut-off (truncated-unknown/002)", [CUT], CUT),
        ("healthy (none/001)", [HEALTHY], HEALTHY),
        ("8-rank OOM cascade (cuda-oom/001)", [OOM], OOM),
    ]
    folder = _rank_folder(work)
    # the raw side of a folder: one rank's file (a reader opens one at a time)
    cases.append(("500-rank folder", [folder], folder / "rank137.log"))
    if args.mib:
        from scan import generate

        big = Path(tempfile.gettempdir()) / f"triage-bench-ranks-logging-{args.mib}mib.log"
        if not big.exists():
            generate(big, args.mib, "ranks-logging")
        cases.append((f"8-rank {args.mib} MiB log", [big], big))
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    print("| log | page KiB | write s | page load ms | page frame ms | raw log KiB | raw load ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=chromium,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        for i, (name, paths, raw) in enumerate(cases):
            out = work / f"page{i}.html"
            wrote = write_page(paths, out)
            load, fcp = load_ms(b, out)
            size = raw.stat().st_size
            # a browser shown a 512 MiB text file takes minutes and gigabytes: not measured
            raw_ms = f"{load_ms(b, raw)[0]:.0f}" if size < 64 << 20 else "n/a"
            print(
                f"| {name} | {out.stat().st_size / 1024:.0f} | {wrote:.2f} | {load:.0f} | {fcp:.0f} | "
                f"{size / 1024:.0f} | {raw_ms} |"
            )
        b.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
