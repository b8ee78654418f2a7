"""truncated-unknown: a run SIGKILLed in the middle of a progress line leaves no reason.

Failing configuration: a small transformers Qwen3 model trains with a tqdm progress bar
(tqdm redraws its line with carriage returns and writes no newline until it closes).
At step 12 the process receives SIGKILL: here it sends it to itself, right after a
redraw, to stand in deterministically for an external `kill -9` (the kernel's OOM
killer, a preempting scheduler, `tmux kill-session`). Nothing is written after that:
no traceback, no exit message, the log ends mid-line. The honest triage is that the
log proves no cause (truncated-unknown), with the checks that would tell.

Fix (the control): the same run not killed ends cleanly ("Training completed."), and
triage then reports nothing wrong. The real remedy is capturing what the killer leaves
elsewhere (exit status, kernel log), which is what the checks say.

Run alone: `python truncated_unknown.py [--fix]`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triage.repro.spec import Context, Run

NAME = "truncated-unknown"
ORDER = 60
EXPECTED = "truncated-unknown"
DEVICE = "cpu"
SUMMARY = "a tqdm training loop SIGKILLed mid-line at step 12: no error is ever written"
FAILURE = (
    "a transformers Qwen3 training loop with a tqdm bar, SIGKILLed (by itself, standing "
    "in for an external kill -9) right after a redraw"
)
FIX = "the same run, not killed"
TIMEOUT_S = 90.0
NOT = ["missing-accelerate", "fx-tracing-flag-race"]
KILL_AT = 12
STEPS = 20


def command(ctx: Context) -> list[str]:
    """Run this file with the scenario's interpreter."""
    return [ctx.python, __file__, *(["--fix"] if ctx.fix else [])]


def reproduced(run: Run) -> bool:
    """SIGKILL ended it, and the log ends without a newline."""
    return run.exit_status == -9 and not run.log.endswith("\n")


def main(fix: bool) -> int:
    """Train briefly; without --fix, SIGKILL this process mid-line."""
    import os
    import signal

    import torch
    from tqdm import tqdm
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    print("Building model...", flush=True)
    cfg = Qwen3Config(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        use_cache=False,
    )
    model = Qwen3ForCausalLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    bar = tqdm(
        range(1, STEPS + 1),
        desc="train",
        file=sys.stdout,
        mininterval=0,
        ascii=True,
        dynamic_ncols=False,
        ncols=80,
    )
    for step in bar:
        ids = torch.randint(0, 128, (4, 16))
        out = model(input_ids=ids, labels=ids)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        bar.set_postfix(loss=f"{out.loss.item():.3f}", refresh=True)
        sys.stdout.flush()
        if not fix and step == KILL_AT:
            os.kill(os.getpid(), signal.SIGKILL)
    bar.close()
    print("Training completed.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main("--fix" in sys.argv[1:]))
