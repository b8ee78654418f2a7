"""Run Python with some installed packages made invisible, uninstalling nothing.

    python hide_module.py accelerate [more names] -- -m dflash_runtime train ...
    python hide_module.py accelerate -- -c "import accelerate"
    python hide_module.py accelerate -- script.py args

Every finder on `sys.meta_path` is wrapped so that, for the hidden top-level names,
`find_spec` returns None (what `importlib.util.find_spec` says for a package that is
not installed, and what makes `import` raise `ModuleNotFoundError: No module named
...`), and `find_distributions` leaves out the hidden distributions (so
`importlib.metadata.version(...)` raises `PackageNotFoundError`). transformers decides
accelerate availability with exactly these two (`transformers.utils.import_utils.
_is_package_available`: `importlib.util.find_spec`, then `importlib.metadata.version`),
so it sees the interpreter of a venv where accelerate was never installed. Only this
process (and children started with the same wrapper) is affected.

Not hidden: `pkgutil.iter_modules` and a direct listing of site-packages still show
the files. Standard library only; runs on the scenario's own interpreter.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import runpy
import sys
from collections.abc import Iterable, Sequence
from importlib.metadata import Distribution, DistributionFinder
from typing import Any

# Interpreter options that change nothing here and may be passed by callers.
_IGNORED_FLAGS = {"-u", "-B", "-E", "-s", "-S", "-I", "-q", "-b"}


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


class HidingFinder(importlib.abc.MetaPathFinder):
    """Delegates to `inner`, except that hidden modules and distributions do not exist."""

    def __init__(self, inner: Any, hidden: frozenset[str]) -> None:
        self.inner = inner
        self.hidden = hidden  # top-level module names, as imported
        self.hidden_dists = frozenset(_norm(h) for h in hidden)

    def _is_hidden(self, fullname: str) -> bool:
        return fullname.partition(".")[0] in self.hidden

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if self._is_hidden(fullname):
            return None
        find = getattr(self.inner, "find_spec", None)
        return find(fullname, path, target) if find else None

    def find_distributions(self, context: Any = None) -> Iterable[Distribution]:
        find = getattr(self.inner, "find_distributions", None)
        if find is None:
            return
        ctx = context if context is not None else DistributionFinder.Context()
        for dist in find(ctx):
            try:
                name = dist.metadata["Name"] or ""
            except Exception:  # unreadable metadata: not ours to judge
                name = ""
            if _norm(name) not in self.hidden_dists:
                yield dist

    def invalidate_caches(self) -> None:
        inv = getattr(self.inner, "invalidate_caches", None)
        if inv:
            inv()


def hide(names: Iterable[str]) -> None:
    """Make `names` unimportable and their distributions invisible in this process."""
    hidden = frozenset(names)
    for mod in [m for m in sys.modules if m.partition(".")[0] in hidden]:
        del sys.modules[mod]
    sys.meta_path[:] = [f if isinstance(f, HidingFinder) else HidingFinder(f, hidden) for f in sys.meta_path]
    importlib.invalidate_caches()


def run_python_args(args: list[str]) -> None:
    """Behave like `python ARGS` for -c CODE, -m MODULE and SCRIPT."""
    while args and args[0] in _IGNORED_FLAGS:
        args = args[1:]
    if not args:
        raise SystemExit("hide_module: nothing to run (give -c CODE, -m MODULE or SCRIPT)")
    # sys.path[0] is this wrapper's folder; give it what `python ARGS` would have put there.
    if args[0] == "-c":
        sys.path[0] = ""
        sys.argv = ["-c", *args[2:]]
        code = compile(args[1], "<string>", "exec")
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
    elif args[0] == "-m":
        sys.path[0] = os.getcwd()
        sys.argv = [args[1], *args[2:]]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.path[0] = os.path.dirname(os.path.abspath(args[0]))
        sys.argv = list(args)
        runpy.run_path(args[0], run_name="__main__")


def main(argv: list[str]) -> None:
    """`NAMES... -- PYTHON-ARGS...`."""
    if "--" not in argv:
        raise SystemExit("usage: hide_module.py NAME [NAME...] -- (-c CODE | -m MODULE | SCRIPT) ...")
    i = argv.index("--")
    hide(argv[:i])
    run_python_args(argv[i + 1 :])


if __name__ == "__main__":
    main(sys.argv[1:])
