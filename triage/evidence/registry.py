"""The evidence sources, in order: the one list that taking a snapshot and reading its
facts both loop over, and that says where each fact comes from.

Order matters twice: the snapshot's sections are written in this order (the JSON keeps
the order it always had), and a source's facts may read the facts of the sources
before it (compat compares the torch build with the driver and the GPUs, so it is
last).
"""

from __future__ import annotations

from triage.evidence.sources import (
    cgroup,
    compat,
    env,
    gpus,
    host,
    host_memory,
    inductor_cache,
    interpreter,
    kernel,
    packages,
    tmux,
)
from triage.evidence.sources.base import Source

SOURCES: tuple[Source, ...] = (
    host.SOURCE,
    interpreter.SOURCE,
    packages.SOURCE,
    env.SOURCE,
    inductor_cache.SOURCE,
    gpus.SOURCE,
    kernel.SOURCE,
    host_memory.SOURCE,
    cgroup.SOURCE,
    tmux.SOURCE,
    compat.SOURCE,
)


def source_of(fact: str) -> Source | None:
    """The source that provides a fact (by name, or by family such as `package.`)."""
    return next((s for s in SOURCES if s.declares(fact)), None)


def by_name(name: str) -> Source:
    """A source by its name; KeyError when there is none."""
    for s in SOURCES:
        if s.name == name:
            return s
    raise KeyError(name)
