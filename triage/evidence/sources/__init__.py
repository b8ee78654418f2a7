"""Evidence sources, one module each (host, interpreter, packages, env, inductor_cache,
gpus, kernel, host_memory, cgroup, tmux, compat), plus the readers they share (nvml.py,
also used by the watcher's GPU panel; nvidia_smi.py).

Each source module defines `SOURCE` (triage.evidence.sources.base.Source): its name,
the snapshot sections it writes, its `collect(ctx)`, its `facts(snapshot, earlier)` and
the facts it provides. To add a source, write a module here and list its SOURCE in
triage/evidence/registry.py. This package's own module imports nothing, so a source may
import a sibling without a cycle.
"""
