"""The evidence sources: one registry that says where each fact comes from, each source
providing only what it declares, a failing collector costing only its own sections,
one spelling of "unknown", and one NVML reader for the snapshot and the live panel."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from _evidence_data import ROOT
from test_snapshot import FakeNVML, FakeNVMLError

from triage.evidence import collect as collect_mod
from triage.evidence import facts_from_snapshot, load_snapshot
from triage.evidence.registry import SOURCES, by_name, source_of
from triage.evidence.snapshot import unknown
from triage.evidence.sources import nvml
from triage.evidence.sources.base import Context, Source
from triage.model import Unknown
from triage.vocabulary import FACT_FAMILIES, SNAPSHOT_FACTS, SNAPSHOT_SOURCES, is_fact

FACTS_DIGESTS = Path(__file__).with_name("facts-digests.json")


def recorded_snapshots() -> list[Path]:
    """Every snapshot JSON in the repository (fixtures, corpora, test data)."""
    found = []
    for folder in (ROOT / "fixtures", ROOT / "tests"):
        for p in sorted(folder.rglob("*.json")):
            head = p.read_text(encoding="utf-8", errors="replace")[:4000]
            if '"triage.snapshot/' in head:
                found.append(p)
    return found


SNAPS = recorded_snapshots()
IDS = [str(p.relative_to(ROOT)) for p in SNAPS]


def canonical_facts(facts: dict[str, Any]) -> str:
    """Facts as sorted JSON, an Unknown written as the snapshot writes it."""

    def enc(v: Any) -> Any:
        return unknown(v.reason) if isinstance(v, Unknown) else repr(v)

    return json.dumps(facts, sort_keys=True, default=enc, ensure_ascii=False)


def test_there_are_recorded_snapshots():
    assert len(SNAPS) >= 30


def test_every_fact_comes_from_exactly_one_source():
    exact = [p for s in SOURCES for p in s.provides if not p.endswith(".")]
    families = [p for s in SOURCES for p in s.provides if p.endswith(".")]
    assert len(exact) == len(set(exact)) and len(families) == len(set(families))
    assert sorted(exact) == sorted(SNAPSHOT_FACTS)
    assert sorted(families) == sorted(FACT_FAMILIES)
    assert source_of("package.flash-attn") is by_name("packages")
    assert source_of("gpu.all.memory_used_mib") is by_name("gpus")
    assert source_of("kernel.xid") is by_name("kernel")
    assert source_of("log.end_state") is None


def test_facts_are_declared_once_in_the_vocabulary_by_source():
    """A source's facts are the vocabulary's list for it: one declaration, which says
    where each fact comes from; the engine (which cannot import evidence) reads it too."""
    assert [s.name for s in SOURCES] == list(SNAPSHOT_SOURCES)
    for s in SOURCES:
        assert s.provides is SNAPSHOT_SOURCES[s.name], s.name


def test_sections_have_one_writer():
    written = [sec for s in SOURCES if s.collect is not None for sec in s.sections]
    assert len(written) == len(set(written))
    assert not {"schema", "collect_seconds"} & set(written)


@pytest.mark.parametrize("path", SNAPS, ids=IDS)
def test_each_source_returns_only_what_it_declares(path: Path):
    snap = load_snapshot(str(path))
    earlier: dict[str, Any] = {}
    for source in SOURCES:
        got = source.facts(snap, dict(earlier))
        assert [f for f in got if not source.declares(f)] == [], source.name
        assert all(is_fact(f) for f in got), source.name
        earlier.update(got)


def test_facts_of_every_recorded_snapshot_are_pinned():
    """The facts of each recorded snapshot, hashed: a restructuring of the sources keeps
    them (TRIAGE_UPDATE_GOLDEN=1 refreshes when a change is meant)."""
    now = {
        i: hashlib.sha256(canonical_facts(facts_from_snapshot(load_snapshot(str(p)))).encode()).hexdigest()[
            :16
        ]
        for i, p in zip(IDS, SNAPS, strict=True)
    }
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        FACTS_DIGESTS.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    pinned = json.loads(FACTS_DIGESTS.read_text(encoding="utf-8"))
    assert {k: v for k, v in now.items() if pinned.get(k) != v} == {}
    assert sorted(pinned) == sorted(now)


def test_a_failing_collector_leaves_only_its_sections_unknown(monkeypatch, tmp_path):
    def broken(ctx: Context) -> dict[str, Any]:
        raise RuntimeError("boom")

    quick = [s for s in SOURCES if s.name in ("host", "env", "cgroup", "inductor_cache")]
    bad = Source("broken", "broken thing", ("alpha", "beta"), (), lambda s, e: {}, broken)
    monkeypatch.setattr(collect_mod, "SOURCES", (*quick, bad))
    snap = collect_mod.collect(env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "none")})
    assert snap["alpha"] == snap["beta"] == {"unknown": "broken thing: RuntimeError: boom"}
    assert list(snap)[:4] == ["schema", "host", "time", "collector"]
    assert snap["inductor_cache"]["exists"] is False and "cgroup" in snap


def test_unknown_is_spelled_in_one_place():
    """Sources write an unknown with snapshot.unknown(), never a dict of their own with
    an "unknown" key (probe.py runs outside triage and cannot import it)."""
    spelled = []
    for p in sorted((ROOT / "triage").rglob("*.py")):
        if p.name == "probe.py" or p.relative_to(ROOT).as_posix() == "triage/evidence/snapshot.py":
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict) and any(
                isinstance(k, ast.Constant) and k.value == "unknown" for k in node.keys
            ):
                spelled.append(f"{p.relative_to(ROOT)}:{node.lineno}")
    assert [s for s in spelled if "/evidence/" in s or "/watch/gpu.py" in s] == []


def fake_pynvml() -> types.ModuleType:
    """FakeNVML as a module, the way `import pynvml` would find it."""
    fake = FakeNVML()
    mod = types.ModuleType("pynvml")
    for name in dir(fake):
        if name.startswith("nvml") or name.startswith("NVML"):
            setattr(mod, name, getattr(fake, name))
    mod.NVMLError = FakeNVMLError  # type: ignore[attr-defined]
    return mod


def test_the_live_panel_and_the_snapshot_read_nvml_alike(monkeypatch):
    from triage.watch.gpu import GpuSampler, from_snapshot

    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    live = GpuSampler().sample()
    recorded = from_snapshot({"gpus": nvml.gpus(fake_pynvml())})
    assert live == recorded
    assert live.devices[0].memory_used_mib == 2048 and live.devices[0].utilization_pct == 97
    assert live.devices[1].name == "GPU 1" and live.devices[1].memory_used_mib is None


def test_the_live_panel_says_why_nvml_does_not_start(monkeypatch):
    from triage.watch.gpu import GpuSampler

    mod = fake_pynvml()

    def no_driver() -> None:
        raise FakeNVMLError(9)

    mod.nvmlInit = no_driver  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    s = GpuSampler().sample()
    assert s.devices == () and s.unknown == "NVML: Unknown Error (no NVIDIA driver or GPU visible)"


def test_importing_evidence_and_the_watch_gpu_panel_loads_no_pynvml():
    code = "import sys, triage.evidence, triage.watch.gpu\nprint('pynvml' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
