"""Source `inductor_cache`: torch.compile's cache folder (TORCHINDUCTOR_CACHE_DIR, or
torch's default <tmp>/torchinductor_<user>): does it exist, how many files, how big, how
recent. A cold cache explains a first step that takes minutes."""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from triage.evidence.snapshot import section, unknown, value
from triage.evidence.sources.base import Context, Facts, Source, iso
from triage.model import Unknown
from triage.vocabulary import SNAPSHOT_SOURCES

CACHE_WALK_BUDGET_S = 3.0
CACHE_WALK_MAX_FILES = 500_000


def cache_path(env: Mapping[str, str]) -> tuple[str, str]:
    """(path, origin): the folder torch would use, and whether the variable chose it."""
    if env.get("TORCHINDUCTOR_CACHE_DIR"):
        return env["TORCHINDUCTOR_CACHE_DIR"], "TORCHINDUCTOR_CACHE_DIR"
    try:
        user = re.sub(r'[\\/:*?"<>|]', "_", getpass.getuser())
    except Exception:  # no passwd entry (containers): torch would fail the same way
        user = str(os.getuid())
    return os.path.join(tempfile.gettempdir(), f"torchinductor_{user}"), "default"


def inductor_cache(env: Mapping[str, str]) -> dict[str, Any]:
    """The cache folder's state, read in triage's environment."""
    path, origin = cache_path(env)
    out: dict[str, Any] = {"path": path, "origin": origin}
    p = Path(path)
    try:
        if not p.exists():
            out.update(exists=False, entries=0, size_bytes=0, newest=None)
            return out
        if not p.is_dir():
            out.update(exists=True, entries=unknown("not a folder"))
            return out
    except OSError as e:
        out.update(exists=unknown(e.strerror or str(e)), entries=unknown(e.strerror or str(e)))
        return out
    out["exists"] = True
    out["subdirs"] = sorted(c.name for c in p.iterdir() if c.is_dir())[:30]
    out.update(_walk(p))
    return out


def _walk(p: Path) -> dict[str, Any]:
    """entries, size_bytes, newest (and capped, when the time/file budget ran out: the
    counts are then at least this many)."""
    files = size = 0
    newest = 0.0
    capped = False
    deadline = time.monotonic() + CACHE_WALK_BUDGET_S
    for root, _dirs, names in os.walk(p, onerror=lambda e: None):
        for n in names:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(root, n))
                files += 1
                size += st.st_size
                newest = max(newest, st.st_mtime)
        if files >= CACHE_WALK_MAX_FILES or time.monotonic() > deadline:
            capped = True
            break
    out: dict[str, Any] = {"entries": files, "size_bytes": size, "newest": iso(newest) if newest else None}
    if capped:
        out["capped"] = True
    return out


def collect(ctx: Context) -> dict[str, Any]:
    return {"inductor_cache": inductor_cache(ctx.environ)}


def facts(snap: Mapping[str, Any], earlier: Mapping[str, Any]) -> Facts:
    """`inductor_cache.{entries,exists,path,cold}`; cold: absent or empty."""
    ic, why = section(snap, "inductor_cache")
    entries = value(ic.get("entries", why or Unknown("not recorded")))
    exists = value(ic.get("exists", why or Unknown("not recorded")))
    f: Facts = {
        "inductor_cache.entries": entries,
        "inductor_cache.exists": exists,
        "inductor_cache.path": value(ic.get("path", why or Unknown("not recorded"))),
    }
    if exists is False or (isinstance(entries, int) and entries == 0):
        f["inductor_cache.cold"] = True
    elif isinstance(entries, int):
        f["inductor_cache.cold"] = False
    else:
        f["inductor_cache.cold"] = entries if isinstance(entries, Unknown) else Unknown("unreadable")
    return f


SOURCE = Source(
    name="inductor_cache",
    what="inductor cache",
    sections=("inductor_cache",),
    provides=SNAPSHOT_SOURCES["inductor_cache"],
    facts=facts,
    collect=collect,
)
