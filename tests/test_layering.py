"""Layers: the core imports none of rich/textual/torch/pynvml; triage and
dflash_runtime never import each other; each package sits in one layer and imports
only its own layer and those below; no import cycle; no function over 60 lines."""

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


# -- the layer contract -------------------------------------------------------------
# Lowest first. A module may import its own layer and any layer below; never one above.
# Imports inside functions count: a lazy import is still a dependency.
LAYERS: list[tuple[str, ...]] = [
    ("(root)", "model", "errors", "cache", "native"),
    ("ingest",),
    ("structure",),
    ("engine", "vocabulary"),
    ("evidence", "report", "redact"),
    ("history",),
    ("watch",),
    ("tui",),
    ("repro", "fixtures"),
    ("cli", "__main__"),
]
CORE = ("ingest", "structure", "engine")
NOT_IN_CORE = ("evidence", "report", "watch", "tui", "repro")


def _module_name(py: Path) -> str:
    parts = list(py.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _triage_graph() -> dict[str, set[str]]:
    """Module -> the triage modules it imports (relative imports resolved)."""
    files = sorted((ROOT / "triage").rglob("*.py"))
    known = {_module_name(p) for p in files}
    graph: dict[str, set[str]] = {}
    for py in files:
        mod = _module_name(py)
        package = mod if py.name == "__init__.py" else mod.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    names = [".".join([*base, node.module] if node.module else base)]
                else:
                    names = [node.module or ""]
                # `from triage.pkg import submodule` depends on the submodule itself
                names += [f"{names[0]}.{a.name}" for a in node.names if f"{names[0]}.{a.name}" in known]
            for name in names:
                while name and name not in known:
                    name = name.rpartition(".")[0]
                if name and name != mod:
                    targets.add(name)
        graph[mod] = targets
    return graph


def _layer_of(mod: str) -> int:
    top = mod.split(".")[1] if "." in mod else "(root)"
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise AssertionError(f"{mod}: in no layer; add its package to LAYERS")


def test_every_module_has_a_layer():
    for mod in _triage_graph():
        _layer_of(mod)


def test_no_import_goes_up_a_layer():
    graph = _triage_graph()
    bad = sorted(
        f"{a} (layer {_layer_of(a)}) imports {b} (layer {_layer_of(b)})"
        for a, targets in graph.items()
        for b in targets
        if _layer_of(b) > _layer_of(a)
    )
    assert bad == []


def test_core_imports_no_outer_package():
    graph = _triage_graph()
    bad = sorted(
        f"{a} imports {b}"
        for a, targets in graph.items()
        if a.split(".")[1:2] and a.split(".")[1] in CORE
        for b in targets
        if b.split(".")[1:2] and b.split(".")[1] in NOT_IN_CORE
    )
    assert bad == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_no_import_cycle():
    assert _cycles(_triage_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


MAX_FUNCTION_LINES = 60


def test_no_function_over_60_lines():
    """A function that does not fit on a screen does more than one thing."""
    long = []
    for py in sorted((ROOT / "triage").rglob("*.py")):
        for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > MAX_FUNCTION_LINES:
                    long.append(f"{py.relative_to(ROOT)}:{node.lineno} {node.name} ({size} lines)")
    assert long == []
