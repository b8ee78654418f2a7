"""The project's story in miniature: a few step lines at a steady cadence, then the
target models start to load and the last line stops mid-word ("Target 0 on cuda:0...
T", flushed without a newline). Then it waits, to be killed from outside.

argv: number of steps (default 5), seconds between them (default 0.3).
"""

import sys
import time

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
every = float(sys.argv[2]) if len(sys.argv) > 2 else 0.3
for i in range(1, steps + 1):
    print(f"step {i} loss {2.5 - i / 100:.4f} tok/s {21000 + i % 7}", flush=True)
    time.sleep(every)
print("Loading 5 target models...", flush=True)
sys.stdout.write("Target 0 on cuda:0... T")
sys.stdout.flush()
while True:
    time.sleep(60)
