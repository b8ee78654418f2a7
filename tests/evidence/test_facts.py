"""Snapshot -> facts, on the recorded GPU-state snapshots and on edge cases; the Xid
table; the rule files this part owns."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
from _evidence_data import ROOT, SNAPSHOTS, snapshot

from triage.engine.predicates import holds, parse_predicates
from triage.engine.rules import load_rules
from triage.evidence import facts_from_snapshot, load_snapshot
from triage.evidence.xid import describe, parse_xid_line, xid_table
from triage.model import Unknown

ALL = sorted(p.stem for p in SNAPSHOTS.glob("*.json"))


def facts(name: str) -> dict:
    return facts_from_snapshot(snapshot(name))


def test_the_recorded_states_exist():
    for name in (
        "healthy-8gpu",
        "crashed-all-idle",
        "ecc-uncorrectable",
        "xid79",
        "one-busy",
        "venv-no-accelerate",
        "venv-accelerate-1.13",
    ):
        assert name in ALL


@pytest.mark.parametrize("name", ALL)
def test_every_snapshot_loads_and_says_how_it_was_made(name):
    snap = load_snapshot(str(SNAPSHOTS / f"{name}.json"))
    assert snap["schema"] == "triage.snapshot/1"
    assert "composed" in snap["note"]
    f = facts_from_snapshot(snap)
    assert f["gpu.count"] == 8


def test_healthy_node():
    f = facts("healthy-8gpu")
    assert f["gpu.busy_count"] == 8 and f["gpu.idle_count"] == 0
    assert f["kernel.readable"] is True and f["kernel.xid"] == [] and f["kernel.oom_killer"] is False
    assert f["inductor_cache.cold"] is False
    assert f["torch.cuda_newer_than_driver"] is False and f["torch.arch_ok"] is True
    assert f["gpu.throttle_reasons"] == []


def test_all_gpus_empty_after_crash():
    f = facts("crashed-all-idle")
    assert f["gpu.all.memory_used_mib"] == [0] * 8
    assert holds(parse_predicates("gpu.all.memory_used_mib == 0")[0], f)
    assert f["gpu.busy"] == [] and f["gpu.idle_count"] == 8


def test_one_busy_rest_idle():
    f = facts("one-busy")
    assert f["gpu.busy"] == [3] and f["gpu.idle_count"] == 7
    assert not holds(parse_predicates("gpu.all.memory_used_mib == 0")[0], f)
    assert holds(parse_predicates("gpu.any.utilization_pct >= 99")[0], f)


def test_uncorrectable_ecc():
    f = facts("ecc-uncorrectable")
    assert holds(parse_predicates("gpu.any.ecc_uncorrected > 0")[0], f)
    assert f["kernel.xid"] == [94, 63]
    assert f["kernel.xid_ecc"] == [94]  # 63 is a notice (catalog action IGNORE)
    assert "Contained memory error" in f["kernel.xid_ecc_text"]
    assert holds(parse_predicates("gpu.any.remapped_rows_pending == true")[0], f)


def test_xid79():
    f = facts("xid79")
    assert f["kernel.fallen_off_bus"] is True
    assert "79 (GPU has fallen off the bus; action RESTART_BM)" in f["kernel.fallen_off_bus_text"]
    assert f["gpu.lost"] == 1
    assert f["kernel.xid_other"] == [154] and f["kernel.xid_other_hw"] == []
    assert isinstance(f["gpu.all.memory_used_mib"], Unknown)  # the lost GPU cannot say


def test_story_venvs():
    no = facts("venv-no-accelerate")
    assert no["package.accelerate"] is None and no["installed.accelerate"] is None
    assert no["accelerate.required"] == "1.1.0" and no["accelerate.sufficient"] is False
    assert no["kernel.readable"] is False and isinstance(no["kernel.oom_killer"], Unknown)
    assert no["inductor_cache.cold"] is True
    yes = facts("venv-accelerate-1.13")
    assert yes["package.accelerate"] == "1.13.0" and yes["accelerate.sufficient"] is True
    broken = facts("venv-accelerate-broken")
    assert broken["installed.accelerate"] == "1.13.0" and broken["package.accelerate"] is None
    assert broken["imports.accelerate"] is False


def test_cuda_mismatch_facts():
    f = facts("cuda-mismatch")
    assert f["torch.cuda_newer_than_driver"] is True
    assert f["torch.cuda_major_newer_than_driver"] is True
    assert "too old" in f["torch.cuda_init_warning"]


@pytest.mark.parametrize(
    ("arch", "caps", "unsupported"),
    [
        (["sm_80", "sm_86", "sm_90"], ["9.0"], []),
        (["sm_80", "sm_86", "sm_90"], ["8.9"], []),  # sm_86 binaries run on 8.9
        (["sm_80", "sm_86", "sm_90"], ["10.0", "12.0"], ["sm_100", "sm_120"]),
        (["sm_80", "sm_90", "compute_90"], ["12.0"], []),  # PTX is JIT-compiled forward
        (["sm_90a"], ["9.0"], []),
        (["sm_70"], ["6.1"], ["sm_61"]),
    ],
)
def test_arch_coverage(arch, caps, unsupported):
    s = snapshot("healthy-8gpu")
    s["torch"]["arch_list"] = arch
    for i, d in enumerate(s["gpus"]["devices"]):
        d["cuda_capability"] = caps[i % len(caps)]
    f = facts_from_snapshot(s)
    assert f["gpu.arch_unsupported"] == unsupported
    assert f["torch.arch_ok"] is (not unsupported)


def test_transformers_min_version_from_table_when_not_recorded():
    s = snapshot("venv-accelerate-1.13")
    del s["transformers"]
    s["packages"]["transformers"] = "4.50.3"
    s["imports"]["transformers"]["version"] = "4.50.3"
    s["packages"]["accelerate"] = "0.30.1"
    f = facts_from_snapshot(s)
    assert f["accelerate.required"] == "0.26.0" and f["accelerate.sufficient"] is True
    s["packages"]["transformers"] = "5.0.0"
    assert facts_from_snapshot(s)["accelerate.sufficient"] is False


def test_old_snapshot_without_import_checks_uses_installed_versions():
    s = snapshot("venv-accelerate-1.13")
    del s["imports"]
    f = facts_from_snapshot(s)
    assert f["package.accelerate"] == "1.13.0"
    assert isinstance(f.get("imports.accelerate", Unknown()), Unknown)


def test_incomplete_probe_leaves_unchecked_imports_unknown():
    s = snapshot("venv-accelerate-1.13")
    s["probe"] = {"complete": False, "reason": "probe timed out after 120 s"}
    del s["imports"]["accelerate"]
    f = facts_from_snapshot(s)
    assert isinstance(f["package.accelerate"], Unknown)
    assert isinstance(f["accelerate.sufficient"], Unknown)
    assert not holds(parse_predicates("package.accelerate absent")[0], f)


def test_unknown_sections_stay_unknown():
    s = copy.deepcopy(snapshot("crashed-all-idle"))
    s["gpus"] = {"unknown": "NVML: NVML Shared Library Not Found"}
    s["torch"] = {"unknown": "probe timed out"}
    f = facts_from_snapshot(s)
    assert isinstance(f["gpu.count"], Unknown) and isinstance(f["driver.cuda"], Unknown)
    assert isinstance(f["torch.cuda_newer_than_driver"], Unknown)
    assert "gpu.lost" not in f


def test_xid_table_covers_the_catalog():
    doc = ROOT.parent / "shared" / "reference" / "messages.md"
    table = xid_table()
    if doc.is_file():
        section = doc.read_text(encoding="utf-8").split("## 12.")[1].split("## 13.")[0]
        codes = {int(m) for m in re.findall(r"^\| (\d+) \|", section, re.M)}
        assert codes and codes <= set(table)
    assert table[79].signature == "gpu-fell-off-bus" and table[79].action == "RESTART_BM"
    assert {c for c, x in table.items() if x.signature == "gpu-ecc-error"} == {48, 63, 64, 92, 94, 95, 140}
    assert describe(12345).startswith("12345 (not in")


def test_xid_line_parser():
    x = parse_xid_line("NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python, Graphics Exception")
    assert x is not None and (x["code"], x["pci"], x["pid"], x["process"]) == (
        13,
        "0000:3b:00",
        4242,
        "python",
    )
    assert x["message"] == "Graphics Exception"
    assert parse_xid_line("NVRM: loading NVIDIA UNIX x86_64 Kernel Module") is None


OWN_RULES = [
    "env/missing-accelerate",
    "compile/fx-tracing-flag-race",
    "memory/host-oom-killed",
    "process/truncated-unknown",
    "env/cuda-version-mismatch",
    "hardware/gpu-fell-off-bus",
    "hardware/gpu-ecc-error",
    "hardware/xid-error",
]


def test_own_rules_load_and_xid_table_is_not_a_rule():
    rules = {r.id: r for r in load_rules()}
    for path in OWN_RULES:
        rid = path.split("/")[1]
        assert rid in rules and rules[rid].path.endswith(f"{path}.toml")
        assert rules[rid].checks
    assert not list((ROOT / "rules").rglob("xid*table*"))


def test_own_rules_use_only_facts_the_snapshot_provides():
    """Every fact an evidence clause names is produced by facts.py (or is a log fact)."""
    produced: set[str] = set()
    for name in ALL:
        produced |= set(facts(name))
    from triage.engine import RUN_FACTS

    log_facts = {"log.truncated", "log.last_phase", "log.end_state", "log.has_traceback", *RUN_FACTS}
    for r in load_rules():
        if not any(r.path.endswith(f"{p}.toml") for p in OWN_RULES):
            continue
        preds = [p for e in r.evidence for p in e.when] + [p for c in r.clauses for p in c.when]
        for p in preds:
            assert p.fact in produced or p.fact in log_facts, (r.id, p.fact)


def test_fixtures_with_evidence_reference_real_snapshots():
    for sig in (
        "missing-accelerate",
        "truncated-unknown",
        "fx-tracing-flag-race",
        "host-oom-killed",
        "cuda-version-mismatch",
        "gpu-fell-off-bus",
        "gpu-ecc-error",
        "xid-error",
    ):
        fx = [p for p in (ROOT / "fixtures" / sig).iterdir() if p.is_dir()]
        assert len(fx) >= 2, sig
        for d in fx:
            ev = d / "evidence.json"
            if ev.exists():
                facts_from_snapshot(load_snapshot(str(ev)))


def test_story_fixtures_are_byte_exact():
    story = b"Loading 5 target models...\nTarget 0 on cuda:0...\nT"
    for d in (
        "missing-accelerate/001-story-cut-off-no-accelerate",
        "truncated-unknown/001-story-cut-off-accelerate-imports",
    ):
        assert Path(ROOT / "fixtures" / d / "input.log").read_bytes() == story
