"""Layers: the core imports none of rich/textual/torch/pynvml; triage and
dflash_runtime never import each other."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("rich", "textual", "torch", "pynvml", "transformers", "dflash_runtime")


def test_core_imports_nothing_heavy():
    code = (
        "import sys\n"
        "import triage, triage.ingest, triage.structure, triage.engine, triage.model\n"
        "from triage.engine import analyze_text\n"
        "analyze_text('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB')\n"
        f"bad = [m for m in sys.modules if m.split('.')[0] in {HEAVY!r}]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_evidence_imports_pynvml_lazily():
    code = "import sys, triage.evidence\nprint('pynvml' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _imports(folder: Path) -> set[tuple[str, str]]:
    found = set()
    for py in folder.rglob("*.py"):
        tree = ast.parse(py.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {(str(py), a.name.split(".")[0]) for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add((str(py), node.module.split(".")[0]))
    return found


def test_triage_never_imports_dflash_runtime():
    bad = [f for f, m in _imports(ROOT / "triage") if m == "dflash_runtime"]
    assert bad == []


def test_dflash_runtime_never_imports_triage():
    folder = ROOT / "dflash_runtime"
    if not folder.is_dir():
        return
    bad = [f for f, m in _imports(folder) if m == "triage"]
    assert bad == []


def test_only_tui_imports_textual():
    bad = [f for f, m in _imports(ROOT / "triage") if m == "textual" and "/tui/" not in f]
    assert bad == []
