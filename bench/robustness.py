"""The same crash, pasted differently: does the top diagnosis hold?

    python bench/robustness.py                  # every fixture, every transformation
    python bench/robustness.py --corpus tests/corpus_real --only wrap100 --only wrap80

Each log is rewritten as real pastes differ (a launcher or logger prefix on every line,
colours, CRLF, lost indentation, tqdm redraws, a bar glued before each error line,
another rank's step lines interleaved, a hard wrap at a terminal's width) and its top
diagnosis (id and confidence) compared with the unchanged log's. Prints, per
transformation, how many logs kept theirs, and the first that did not.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.engine import analyze_text, get_rules  # noqa: E402

ERROR_STARTS = ("Traceback", "RuntimeError", "torch.")
BAR = "  3%|3         | 3/100 [00:00<00:09, 10.1it/s]"


def _each(prefix: Callable[[str], str]) -> Callable[[str], str]:
    return lambda text: "\n".join(prefix(line) for line in text.split("\n"))


def _interleave(text: str) -> str:
    out = []
    for i, line in enumerate(text.split("\n")):
        out.append(line)
        if i % 2 == 0:
            out.append(f"[rank7]: step {100 + i} loss 2.{i % 10}1 lr 1e-4")
    return "\n".join(out)


def _wrap(width: int) -> Callable[[str], str]:
    def wrap(text: str) -> str:
        out = []
        for line in text.split("\n"):
            while len(line) > width:
                out.append(line[:width])
                line = line[width:]
            out.append(line)
        return "\n".join(out)

    return wrap


TRANSFORMS: dict[str, Callable[[str], str]] = {
    "rank0": _each(lambda s: "[rank0]: " + s),
    "default0-rank0": _each(lambda s: "[default0]:[rank0]: " + s),
    "iso": _each(lambda s: "[2026-12-02 03:44:01] " + s),
    "iso-comma": _each(lambda s: "2026-12-02 03:44:01,123 " + s),
    "glog": _each(lambda s: "I1202 03:44:01.123456 12345 train.py:12] " + s),
    "kubectl": _each(lambda s: "[pod/trainer-0/main] " + s),
    "srun": _each(lambda s: "0: " + s),
    "openmpi": _each(lambda s: "[1,0]<stderr>:" + s),
    "ansi": _each(lambda s: "\x1b[31m" + s + "\x1b[0m"),
    "crlf": _each(lambda s: s + "\r"),
    "dedent": _each(str.lstrip),
    "bars-redrawn": _each(
        lambda s: "Epoch 1:  50%|#####     | 5/10 [00:01<00:01, 4.5it/s]\r" + s if s else s
    ),
    "bar-glued": _each(lambda s: BAR + s if s.startswith(ERROR_STARTS) else s),
    "interleave": _interleave,
    "wrap120": _wrap(120),
    "wrap100": _wrap(100),
    "wrap80": _wrap(80),
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, help="a folder of .log files (default: every fixture)")
    ap.add_argument("--only", action="append", choices=sorted(TRANSFORMS))
    ap.add_argument("--show", type=int, default=5, help="logs listed per transformation that changed")
    args = ap.parse_args()
    rules = get_rules()

    def top(text: str) -> tuple[str, str] | None:
        r = analyze_text(text, rules=rules)
        return (r.diagnoses[0].signature, r.diagnoses[0].confidence.label) if r.diagnoses else None

    folder = args.corpus or ROOT / "fixtures"
    logs = sorted(folder.rglob("*.log"))
    texts = {p: p.read_text(encoding="utf-8", errors="replace") for p in logs}
    base = {p: top(t) for p, t in texts.items()}
    for name in args.only or TRANSFORMS:
        fn = TRANSFORMS[name]
        changed = [(p, base[p], got) for p, t in texts.items() if (got := top(fn(t))) != base[p]]
        print(f"{name:16s} {len(logs) - len(changed)}/{len(logs)}", flush=True)
        for p, was, got in changed[: args.show]:
            print(f"    {p.relative_to(ROOT)}: {was} -> {got}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
