"""The JSON report of every fixture and every corpus log, to compare an engine change.

    python bench/report_json.py dump /tmp/before          # before the change
    python bench/report_json.py dump /tmp/after           # after it
    python bench/report_json.py diff /tmp/before /tmp/after   # exit 1 on any difference

Each log is triaged as `triage logs` does (the fast path where the size calls for it) and
once more with the fast path forced on every file (`fast=True`), so a change to the fast
path shows even on the small logs the tests ship, and once reading every line
(`fast=False`). `diff` also says where the forced fast path and the full read disagree
within one dump (rules edited between two dumps do not hide that).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.engine import analyze, get_rules  # noqa: E402
from triage.evidence import facts_from_snapshot, load_snapshot  # noqa: E402
from triage.fixtures import discover  # noqa: E402
from triage.report.json import render  # noqa: E402

CORPORA = ("corpus", "corpus_heldout", "corpus_heldout2", "corpus_heldout3", "corpus_heldout4", "corpus_real")


def logs() -> list[tuple[str, Path, Path | None]]:
    """(name, log, snapshot or None) for every fixture and corpus log."""
    out: list[tuple[str, Path, Path | None]] = []
    for fx in discover(ROOT / "fixtures"):
        out.append((f"fixtures/{fx.name}", fx.log, fx.evidence))
    for c in CORPORA:
        for p in sorted((ROOT / "tests" / c).rglob("*")):
            if p.is_file() and p.suffix in (".log", ".txt", ".out", ".gz", ".zst"):
                out.append((f"{c}/{p.relative_to(ROOT / 'tests' / c)}", p, None))
    return out


def dump(dest: Path) -> None:
    dest = dest.resolve()
    dest.mkdir(parents=True, exist_ok=True)
    os.chdir(ROOT)  # relative paths in the reports: two checkouts compare equal
    rules = get_rules()
    for name, log, ev in logs():
        facts = facts_from_snapshot(load_snapshot(str(ev))) if ev else None
        for mode, fast in (("auto", None), ("fast", True), ("full", False)):
            rep = analyze([str(log.relative_to(ROOT))], rules=rules, facts=facts, fast=fast)
            doc = json.loads(render(rep))
            out = dest / mode / (name.replace("/", "__") + ".json")
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(doc, indent=1, sort_keys=True))


def diff(a: Path, b: Path) -> int:
    bad = 0
    names = sorted(
        {p.relative_to(a) for p in a.rglob("*.json")} | {p.relative_to(b) for p in b.rglob("*.json")}
    )
    for n in names:
        pa, pb = a / n, b / n
        if not pa.exists() or not pb.exists() or pa.read_text() != pb.read_text():
            bad += 1
            print(f"differs: {n}")
    print(f"{len(names)} reports, {bad} differ")
    for side in (a, b):
        fast_vs_full = [
            p.name
            for p in sorted((side / "fast").glob("*.json"))
            if _verdict(p) != _verdict(side / "full" / p.name)
        ]
        print(
            f"{side}: forced fast path and full read disagree on {len(fast_vs_full)}: "
            + " ".join(fast_vs_full[:20])
        )
    return 1 if bad else 0


def _verdict(p: Path) -> object:
    """What the fast path must keep: the diagnoses and the end state (its notes say it
    skipped lines, and the line counts are the same)."""
    if not p.exists():
        return None
    doc = json.loads(p.read_text())
    return (
        [
            (d["signature"], d["confidence"], d["role"], [e.get("line") for e in d["evidence"]])
            for d in doc["diagnoses"]
        ],
        doc["end_state"],
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("dump").add_argument("dest", type=Path)
    d = sub.add_parser("diff")
    d.add_argument("a", type=Path)
    d.add_argument("b", type=Path)
    args = ap.parse_args()
    if args.cmd == "dump":
        dump(args.dest)
        return 0
    return diff(args.a, args.b)


if __name__ == "__main__":
    raise SystemExit(main())
