"""The accuracy scorer (bench/accuracy.py), loaded once for every accuracy test."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
# the tuning corpus first, then the held-out ones in the order they were written
CORPORA = ["corpus", "corpus_heldout", "corpus_heldout2", "corpus_heldout3", "corpus_heldout4"]


def _load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_accuracy", ROOT / "bench" / "accuracy.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


acc = sys.modules.get("bench_accuracy") or _load_bench()


def corpus(name: str) -> Path:
    return ROOT / "tests" / name
