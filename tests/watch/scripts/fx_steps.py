"""Print N numbered step lines (some in bursts), then fail the way torch does when a
thread calls a torch.compile'd function while another thread FX-traces.

The RuntimeError's text is the message of torch's compiled-function wrapper
(torch/_dynamo/eval_frame.py `_fn`, as quoted in shared/reference/fx-race.md); it is
raised from this script, so the traceback around it is a real Python traceback,
printed by the interpreter to the pane.
"""

import os
import sys
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 3000


def step_line(i: int) -> str:
    return f"step {i} loss {2.5 - i / N:.4f} acc 0.61 tok/s {21000 + i % 500}"


def compiled_fn_called_while_tracing() -> None:
    raise RuntimeError(
        "Detected that you are using FX to symbolically trace a dynamo-optimized function. "
        "This is not supported at the moment."
    )


def main() -> None:
    # FX_STEPS_GO=PATH: after the first third, wait for PATH to exist (a test creates it
    # once the watcher is attached, so scrollback and live output both happen on any load)
    go = os.environ.get("FX_STEPS_GO")
    i = 1
    while i <= N:
        if go and i > N // 3:
            while not os.path.exists(go):
                time.sleep(0.02)
            go = None
        burst = 250 if i % 600 == 1 else 1  # bursts: hundreds of lines in one write
        if burst > 1:
            sys.stdout.write("".join(step_line(j) + "\n" for j in range(i, min(N, i + burst - 1) + 1)))
            sys.stdout.flush()
            i += burst
            continue
        print(step_line(i), flush=True)
        i += 1
        time.sleep(0.0004)
    compiled_fn_called_while_tracing()


if __name__ == "__main__":
    main()
