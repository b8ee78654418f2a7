"""Source `packages`: the run's installed distributions and whether they import.

Collected by the interpreter probe (interpreter.py runs it once for all its sections):
this module owns the list the probe is handed (`probe_args`, from triage.vocabulary,
since the probe cannot import triage) and the facts read from what it found:
`package.X` (the version when X imports), `installed.X`, `imports.X`,
`import_error.X`, and whether accelerate is new enough for transformers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from triage.engine.predicates import version_tuple
from triage.evidence.snapshot import section, value
from triage.evidence.sources.base import Facts, Source
from triage.model import Unknown
from triage.vocabulary import PACKAGES, SNAPSHOT_SOURCES, VERSION_ONLY

# The accelerate version transformers checks for (`ACCELERATE_MIN_VERSION`, used by
# device_map loading and the Trainer), by transformers version, for snapshots that did
# not record it (shared/reference/messages.md section 10; boundaries between checked
# wheels). Newest first: (transformers >= this, needs accelerate >= that).
ACCELERATE_NEEDED = (((5, 0), "1.1.0"), ((4, 46), "0.26.0"), ((4, 40), "0.21.0"), ((4, 30), "0.20.1"))


def probe_args() -> list[str]:
    """The probe's package lists, from the one declared in triage.vocabulary (the probe
    cannot import triage: it runs in the training run's interpreter)."""
    return [
        "--packages=" + ",".join(f"{dist}:{module}" for dist, module in PACKAGES),
        "--version-only=" + ",".join(VERSION_ONLY),
    ]


def fact_name(name: str) -> str:
    """A distribution as fact names spell it: lower case, `_` as `-`."""
    return name.strip().lower().replace("_", "-")


def facts(snap: Mapping[str, Any], earlier: Mapping[str, Any]) -> Facts:
    """The package families, and `accelerate.required` / `accelerate.sufficient`."""
    pk, why = section(snap, "packages")
    f: Facts = {"packages": why} if why is not None else {}
    f.update(_package_facts(snap, pk))
    f.update(_accelerate_facts(snap, f))
    return f


def _package_facts(snap: Mapping[str, Any], pk: dict[str, Any]) -> Facts:
    """`package.X`: the version when X imports (None when it is absent *or* installed
    but broken); `installed.X`: the distribution's version whether or not it imports;
    `imports.X`: True/False; `import_error.X`: why not."""
    raw = snap.get("imports")
    imports = raw if isinstance(raw, dict) else None
    probe = snap.get("probe")
    complete = not (isinstance(probe, dict) and probe.get("complete") is False)
    f: Facts = {}
    for name in list(pk) + [n for n in imports or {} if n not in pk]:
        n = fact_name(name)
        ver = value(pk.get(name))
        f[f"installed.{n}"] = ver
        imp = imports.get(name) if imports else None
        if isinstance(imp, dict) and "ok" in imp:
            ok = bool(imp["ok"])
            f[f"imports.{n}"] = ok
            if ok:
                # importable without metadata (PYTHONPATH, vendored): the module's version
                f[f"package.{n}"] = ver if isinstance(ver, str) else str(imp.get("version") or "unknown")
            else:
                f[f"package.{n}"] = None
                f[f"import_error.{n}"] = str(imp.get("error", "import failed"))
        elif imports is not None and not complete and ver is not None:
            f[f"imports.{n}"] = Unknown("the probe stopped before importing it")
            f[f"package.{n}"] = Unknown(f"installed {ver}, import not checked (probe incomplete)")
        else:
            f[f"package.{n}"] = ver  # an older snapshot without import checks: installed
    return f


def _accelerate_facts(snap: Mapping[str, Any], f: Facts) -> Facts:
    """The accelerate transformers needs (recorded by the probe, else by version), and
    whether the importable accelerate is at least that."""
    tr = snap.get("transformers")
    need = tr.get("accelerate_min_version") if isinstance(tr, dict) else None
    tv = (
        version_tuple(f.get("package.transformers"))
        if isinstance(f.get("package.transformers"), str)
        else None
    )
    if not isinstance(need, str) and tv is not None:
        need = next((v for since, v in ACCELERATE_NEEDED if tv >= since), None)
    acc = f.get("package.accelerate", Unknown("not recorded"))
    out: Facts = {
        "accelerate.required": need if isinstance(need, str) else Unknown("transformers version unknown")
    }
    if isinstance(need, str) and isinstance(acc, str) and version_tuple(acc) is not None:
        out["accelerate.sufficient"] = _vge(acc, need)
    elif acc is None and "package.accelerate" in f:
        out["accelerate.sufficient"] = False
    else:
        out["accelerate.sufficient"] = Unknown("accelerate or transformers version unknown")
    return out


def _vge(a: str, b: str) -> bool:
    ta, tb = version_tuple(a) or (), version_tuple(b) or ()
    n = max(len(ta), len(tb))
    return ta + (0,) * (n - len(ta)) >= tb + (0,) * (n - len(tb))


SOURCE = Source(
    name="packages",
    what="packages",
    sections=("packages", "imports", "transformers"),
    provides=SNAPSHOT_SOURCES["packages"],
    facts=facts,
)
