"""host-oom-killed: the training process is SIGKILLed for passing a memory limit set on
its job only.

Failing configuration: `python -m dflash_runtime train --batch-size 256` (16x the tiny
preset's batch: the target's hidden states and logits for 256 sequences take about a
GiB on top of the ~0.4 GiB a tiny run needs), run as a job in a shell script, under a
memory limit of 640 MiB for the job's process tree. What sends the SIGKILL: triage's
repro runner, which polls the tree's resident memory (/proc, every 20 ms) and, when it
passes the limit, SIGKILLs the largest process once: what a cgroup's OOM killer does to
a container with memory.max, done from user space because a cgroup needs privileges
(so no kernel log line). bash reports the killed job (`run.sh: line 2: PID Killed ...`)
as it does in a Slurm or cron script. The limit binds the child only; the machine never
comes near its own memory.

Fix: the tiny preset's batch (16), which stays well under the same limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triage.repro.spec import Context, Run

NAME = "host-oom-killed"
ORDER = 30
EXPECTED = "host-oom-killed"
DEVICE = "cpu"
SUMMARY = (
    "dflash_runtime with a 16x batch under a 640 MiB job memory limit: the runner's "
    "watchdog SIGKILLs it, as a cgroup OOM killer would"
)
FAILURE = (
    "`python -m dflash_runtime train --batch-size 256` in a shell script under a "
    "640 MiB memory limit on the job (SIGKILL from triage's user-space watchdog)"
)
FIX = "the preset's batch size (16), under the same limit"
TIMEOUT_S = 100.0
RSS_LIMIT_MIB = 640.0
SHELL = True
NOT = ["missing-accelerate", "fx-tracing-flag-race"]


def command(ctx: Context) -> list[str]:
    """The runtime's train command; only the batch size differs between fail and fix."""
    return [
        ctx.python,
        "-m",
        "dflash_runtime",
        "train",
        "--steps",
        "3",
        "--eval-prompts",
        "0",
        "--target-pretrain-steps",
        "0",
        "--batch-size",
        "16" if ctx.fix else "256",
    ]


def reproduced(run: Run) -> bool:
    """The watchdog killed the job with SIGKILL (bash exits 128+9)."""
    return run.killed_by == "memory-watchdog" and run.exit_status in (-9, 137)
