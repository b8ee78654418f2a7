"""The history is core: it imports nothing heavy, and the PostgreSQL driver only when a
postgresql:// store is opened. The engine never imports the history."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("rich", "textual", "torch", "pynvml", "transformers", "dflash_runtime", "psycopg")


def test_history_imports_nothing_heavy(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "import triage.history, triage.history.views\n"
        "from triage.engine import analyze_text\n"
        "from triage.history import History, derive_run\n"
        f"h = History(derive_run([], name='x'), url='sqlite:///{tmp_path}/h.sqlite')\n"
        "r = analyze_text('torch.OutOfMemoryError: CUDA out of memory.')\n"
        "assert h.finish(r).history['id'] == 1\n"
        f"print(','.join(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_engine_never_imports_the_history() -> None:
    bad = []
    for py in (ROOT / "triage" / "engine").rglob("*.py"):
        for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            bad += [f"{py.name}: {n}" for n in names if n.startswith("triage.history")]
    assert bad == []
