"""Where triage keeps what it may rebuild at any time (compiled scan databases, the
rule patterns known to compile): TRIAGE_CACHE_DIR, else $XDG_CACHE_HOME/triage, else
~/.cache/triage. Losing it costs start-up time only."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    env = os.environ.get("TRIAGE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "triage"
