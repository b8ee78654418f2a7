"""A long fuzz campaign of the whole pipeline (outside CI).

    python bench/fuzz.py --n 1000000 --seed 1          # ~20-40 min on one core

Inputs are mutations of the fixture corpus (byte flips, splices, truncation,
duplication, prefix injection) and token soups of log fragments. Any exception from
ingest, structure, match or reason is a failure: the input is written to
/tmp/triage-fuzz-crash-N.bin and the campaign goes on. A summary line is printed at the
end; the result of the last long run is kept in bench/README.md.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.engine import analyze_text, get_rules  # noqa: E402

TOKENS = [
    b"\n",
    b"\r",
    b"\r\n",
    b"\x1b[31m",
    b"\x1b]0;t\x07",
    b"\x00",
    b"\xff\xfe",
    b"[rank3]: ",
    b"[default1]:",
    b"7: ",
    b"[1,0]<stderr>:",
    b"Traceback (most recent call last):\n",
    b'  File "a.py", line 1, in f\n',
    b"RuntimeError: ",
    b"CUDA out of memory",
    b"Killed\n",
    b"100%|####| 10/10 [00:01<00:00]",
    b"During handling of the above exception, another exception occurred:\n",
    b"Root Cause (first observed failure):\n",
    b"  exitcode  : -9 (pid: 1)\n",
    b"=" * 60 + b"\n",
    b"E1129 13:02:11.123 1 a.cc:1] ",
    b"loss nan",
    b"step 12 ",
    b"\\n",
    b"NCCL WARN ",
    b"Exception raised from f at a.cpp:1 (most recent call first):\n",
    b"what():  ",
    b"a" * 5000,
    b" " * 3000,
    b"\t",
    b"\xe2\x96\x88" * 50,
]


def corpus() -> list[bytes]:
    return [p.read_bytes() for p in sorted((ROOT / "fixtures").glob("*/*/input.log"))] or [b""]


def mutate(rng: random.Random, seeds: list[bytes]) -> bytes:
    kind = rng.randrange(6)
    if kind == 0:
        return b"".join(rng.choice(TOKENS) for _ in range(rng.randrange(1, 80)))
    data = bytearray(rng.choice(seeds))
    if not data:
        return bytes(data)
    for _ in range(rng.randrange(1, 8)):
        op = rng.randrange(6)
        i = rng.randrange(len(data) + 1)
        if op == 0 and data:
            data[min(i, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            data[i:i] = rng.choice(TOKENS)
        elif op == 2:
            j = rng.randrange(i, len(data) + 1)
            del data[i:j]
        elif op == 3:
            other = rng.choice(seeds)
            k = rng.randrange(len(other) + 1)
            data[i:i] = other[k : k + rng.randrange(400)]
        elif op == 4:
            data = data[:i]
        else:
            j = rng.randrange(i, len(data) + 1)
            data[i:i] = data[i:j] * rng.randrange(1, 4)
        if not data:
            break
    return bytes(data[:200_000])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    seeds = corpus()
    rules = get_rules()
    failures = 0
    slowest = 0.0
    t0 = time.time()
    for i in range(args.n):
        data = mutate(rng, seeds)
        t = time.perf_counter()
        try:
            analyze_text(data, rules=rules)
        except Exception:
            failures += 1
            out = Path(f"/tmp/triage-fuzz-crash-{failures}.bin")
            out.write_bytes(data)
            print(f"crash #{failures} at input {i}: {out}\n{traceback.format_exc(limit=3)}", file=sys.stderr)
        slowest = max(slowest, time.perf_counter() - t)
        if i and i % 100_000 == 0:
            print(f"{i} inputs, {failures} failures, {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    print(
        f"fuzz: {args.n} inputs, {failures} failures, slowest input {slowest * 1000:.0f} ms, "
        f"{time.time() - t0:.0f} s, seed {args.seed}, {len(seeds)} corpus files"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
