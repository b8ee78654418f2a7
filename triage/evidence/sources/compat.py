"""Facts that compare two readings of other sources: the torch build against the
driver (CUDA version) and against the GPUs (architectures). Rules compare a fact with a
constant only, so a comparison of two facts is a fact of its own. Nothing to collect:
it reads the facts of the interpreter and gpus sources (listed before it)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from triage.engine.predicates import version_tuple
from triage.evidence.sources.base import Facts, Source
from triage.model import Unknown
from triage.vocabulary import SNAPSHOT_SOURCES

_ARCH_RE = re.compile(r"(sm|compute)_(\d{2,3})a?")


def facts(snap: Mapping[str, Any], earlier: Mapping[str, Any]) -> Facts:
    """`torch.cuda_newer_than_driver` (and its major-version twin), `gpu.arch_unsupported`,
    `torch.arch_ok`."""
    f = _cuda_vs_driver(earlier)
    un = _arch_unsupported(earlier.get("torch.arch_list"), earlier.get("gpu.capabilities"))
    f["gpu.arch_unsupported"] = un
    f["torch.arch_ok"] = un if isinstance(un, Unknown) else None if un is None else not un
    return f


def _cuda_vs_driver(earlier: Mapping[str, Any]) -> Facts:
    """Is torch built for a newer CUDA than the driver runs (minor, and major)?"""
    tc, dc = earlier.get("torch.cuda"), earlier.get("driver.cuda")
    if isinstance(tc, Unknown) or isinstance(dc, Unknown) or "driver.cuda" not in earlier:
        why = (
            tc
            if isinstance(tc, Unknown)
            else dc
            if isinstance(dc, Unknown)
            else Unknown("driver CUDA version not recorded")
        )
        return {"torch.cuda_newer_than_driver": why, "torch.cuda_major_newer_than_driver": why}
    if tc is None or dc is None:
        # a CPU build, or no driver: nothing to compare
        return {"torch.cuda_newer_than_driver": None, "torch.cuda_major_newer_than_driver": None}
    t, d = version_tuple(tc), version_tuple(dc)
    if t is None or d is None:
        why = Unknown(f"cannot compare {tc!r} with {dc!r}")
        return {"torch.cuda_newer_than_driver": why, "torch.cuda_major_newer_than_driver": why}
    return {"torch.cuda_newer_than_driver": t[:2] > d[:2], "torch.cuda_major_newer_than_driver": t[0] > d[0]}


def _arch_unsupported(arch: Any, caps: Any) -> Any:
    """GPU architectures the torch build has no kernels for: sm_XY runs on the same
    major with minor >= Y; compute_XY (PTX) is JIT-compiled for anything >= XY."""
    if isinstance(arch, Unknown):
        return arch
    if isinstance(caps, Unknown):
        return caps
    if caps is None:
        return Unknown("GPU capabilities not recorded")
    if not isinstance(arch, list) or not arch:
        return None  # a CPU build, or a build that does not say
    sms: list[tuple[int, int]] = []
    ptx: list[tuple[int, int]] = []
    for a in arch:
        m = _ARCH_RE.fullmatch(str(a))
        if m:
            (sms if m.group(1) == "sm" else ptx).append((int(m.group(2)[:-1]), int(m.group(2)[-1])))
    out = []
    for c in caps:
        v = version_tuple(c)
        if v is None or len(v) < 2:
            continue
        major, minor = v[0], v[1]
        ok = any(major == sm_major and sm_minor <= minor for sm_major, sm_minor in sms) or any(
            p <= (major, minor) for p in ptx
        )
        if not ok:
            out.append(f"sm_{major}{minor}")
    return sorted(set(out))


SOURCE = Source(
    name="compat",
    what="compat",
    sections=(),
    provides=SNAPSHOT_SOURCES["compat"],
    facts=facts,
)
