"""The run a crash belongs to: what stays the same when the operator relaunches.

In order: a name given with `--run NAME`; the tmux session a watch watched; a job name
from the scheduler's environment (the same script resubmitted); the log's path (with
the long digit runs of job ids and dates masked, so `slurm-4411.out` and
`slurm-4412.out` are one run); for stdin, the working directory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# Scheduler variables that name a job the same way across resubmissions (a table: add
# a scheduler here).
JOB_NAME_ENV: tuple[str, ...] = (
    "TRIAGE_RUN",  # the user's own, for wrappers that cannot pass --run
    "SLURM_JOB_NAME",
    "PBS_JOBNAME",
    "LSB_JOBNAME",
    "JOB_NAME",
    "KUBERNETES_JOB_NAME",
)
_LONG_DIGITS = re.compile(r"\d{4,}")


@dataclass(frozen=True, slots=True)
class Run:
    """`key` identifies the run in the store; `name` is how views show it; `via` says
    where it came from (run, tmux, an environment variable, log, cwd)."""

    key: str
    name: str
    via: str

    def as_dict(self) -> dict[str, str]:
        return {"key": self.key, "name": self.name, "via": self.via}


def derive_run(
    paths: Sequence[str],
    *,
    name: str | None = None,
    tmux: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> Run:
    """The run of a triage of `paths` (see the module's docstring for the order)."""
    if name:
        return Run(f"run:{name}", name, "run")
    if tmux:
        session = tmux.split(":", 1)[0]
        return Run(f"tmux:{session}", session, "tmux")
    env = os.environ if env is None else env
    for var in JOB_NAME_ENV:
        if env.get(var):
            return Run(f"job:{env[var]}", env[var], var)
    here = cwd or os.getcwd()
    files = [p for p in paths if p != "-"]
    if not files:
        return Run(f"cwd:{here}", here, "cwd")
    full = [os.path.normpath(os.path.join(here, p)) for p in files]
    if len(full) == 1 and not os.path.isdir(full[0]):
        p = Path(full[0])
        stable = str(p.parent / _LONG_DIGITS.sub("N", p.name))
        return Run(f"log:{stable}", stable, "log")
    # several files or a folder of per-rank logs: the folder they share is the run
    common = full[0] if len(full) == 1 else os.path.commonpath(full)
    return Run(f"log:{common}", common, "log")
