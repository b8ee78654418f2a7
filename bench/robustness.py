"""The same crash, pasted differently: does the top diagnosis hold?

    python bench/robustness.py                  # every fixture, every transformation
    python bench/robustness.py --corpus tests/corpus_real --only wrap100 --only wrap80

Each log is rewritten as real pastes differ (a launcher or logger prefix on every line,
colours, CRLF, lost indentation, tqdm redraws, a bar glued before each error line,
another rank's step lines interleaved, every rank printing the same log with the ranks'
lines mixed, a terminal capture's padding, a hard wrap at a terminal's width) and its top
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


def _lines(fn: Callable[[list[str]], list[str]]) -> Callable[[str], str]:
    """A transformation of the log's lines; the newline that ends the log is no line (a
    prefix on it would make the log end in a cut-off line)."""

    def apply(text: str) -> str:
        body, end = (text[:-1], "\n") if text.endswith("\n") else (text, "")
        return "\n".join(fn(body.split("\n"))) + end

    return apply


def _each(prefix: Callable[[str], str]) -> Callable[[str], str]:
    return _lines(lambda lines: [prefix(line) for line in lines])


def _interleave(text: str) -> str:
    out = []
    for i, line in enumerate(text.split("\n")):
        out.append(line)
        if i % 2 == 0:
            out.append(f"[rank7]: step {100 + i} loss 2.{i % 10}1 lr 1e-4")
    return "\n".join(out)


def _ranks(n: int) -> Callable[[str], str]:
    """Every rank printed the same log (the same traceback on each, as a collective's
    failure does), `[rankN]:` before each line, and the ranks' lines mixed as the
    launcher's pipes delivered them: a fixed pseudo-random merge that keeps each rank's
    own order."""

    def mix(lines: list[str]) -> list[str]:
        pos = [0] * n
        out = []
        state = 12345
        while any(p < len(lines) for p in pos):
            state = (state * 1103515245 + 12345) % (1 << 31)
            r = state % n
            if pos[r] < len(lines):
                out.append(f"[rank{r}]: {lines[pos[r]]}")
                pos[r] += 1
        return out

    return _lines(mix)


def _pad(width: int) -> Callable[[str], str]:
    """A terminal capture (tmux, screen) pads each line with spaces to the pane's width."""
    return _each(lambda s: s.ljust(width))


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
    "journald": _each(lambda s: "Dec 02 03:44:01 gpu-node-7 python[48213]: " + s),
    "compose": _each(lambda s: "trainer-1  | " + s),
    "ray-worker": _each(lambda s: "(RayTrainWorker pid=48213, ip=10.0.3.7) " + s),
    "mpirun-ts": _each(lambda s: "Wed Dec  2 03:44:01 2026[1,0]<stderr>:" + s),
    "ansi": _each(lambda s: "\x1b[31m" + s + "\x1b[0m"),
    "crlf": _each(lambda s: s + "\r"),
    "dedent": _each(str.lstrip),
    "bars-redrawn": _each(
        lambda s: "Epoch 1:  50%|#####     | 5/10 [00:01<00:01, 4.5it/s]\r" + s if s else s
    ),
    "bar-glued": _each(lambda s: BAR + s if s.startswith(ERROR_STARTS) else s),
    "interleave": _interleave,
    "ranks4-mixed": _ranks(4),
    "pad200": _pad(200),
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

    folder = (args.corpus or ROOT / "fixtures").resolve()
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
