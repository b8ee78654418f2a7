"""Evidence reasoning through `triage logs LOG --evidence SNAPSHOT --format json`: the
cases of issue 3 (the story's log with each venv, the lost stderr, CUDA vs driver,
OOM killer, Xid 79, GPUs at 0 MiB)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _evidence_data import FIXTURES, SNAPSHOTS, snapshot

RANK = {"possible": 1, "likely": 2, "confirmed": 3}


def snap_file(name: str) -> str:
    return str(SNAPSHOTS / f"{name}.json")


def write_snap(tmp_path: Path, snap: dict, name: str = "snap.json") -> str:
    p = tmp_path / name
    p.write_text(json.dumps(snap), encoding="utf-8")
    return str(p)


def sigs(report: dict) -> list[str]:
    return [d["signature"] for d in report["diagnoses"]]


def diag(report: dict, sig: str) -> dict:
    found = [d for d in report["diagnoses"] if d["signature"] == sig]
    assert found, f"{sig} not diagnosed: {sigs(report)}"
    return found[0]


def test_story_without_accelerate_offers_it_and_confirms_nothing(story_log, triage_json, validate_report):
    r = triage_json(str(story_log), "--evidence", snap_file("venv-no-accelerate"))
    validate_report(r)
    assert r["end_state"]["kind"] == "cut-mid-line"
    assert r["end_state"]["last_phase"] == "model-loading"
    ma = diag(r, "missing-accelerate")
    assert ma["confidence"] in ("likely", "possible")
    assert all(d["confidence"] != "confirmed" for d in r["diagnoses"])
    # the fact that supports it is named, with the run's interpreter
    assert any(
        e.get("fact") and "accelerate is not" in e["text"] and "/root/venv/bin/python" in e["text"]
        for e in ma["evidence"]
    )
    notes = " ".join(r["notes"])
    assert "cut off mid-line" in notes and "model-loading" in notes
    assert "2>&1 | tee" in notes and "triage watch" in notes
    assert "0 MiB" in notes and "gone, not hung" in notes
    assert ma["checks"] and "import accelerate" in ma["checks"][0]


def test_story_with_accelerate_rules_it_out_naming_the_fact(story_log, triage_json, validate_report):
    r = triage_json(str(story_log), "--evidence", snap_file("venv-accelerate-1.13"))
    validate_report(r)
    assert "missing-accelerate" not in sigs(r)
    out = [x for x in r["ruled_out"] if x["signature"] == "missing-accelerate"]
    assert len(out) == 1
    because = out[0]["because"]
    assert "accelerate 1.13.0 imports in /root/venv/bin/python" in because
    assert "needs >= 1.1.0" in because
    # what is left is honest: the fallback first, nothing confirmed
    assert r["diagnoses"][0]["signature"] == "truncated-unknown"
    assert all(d["confidence"] == "possible" for d in r["diagnoses"])


def test_installed_but_broken_accelerate_is_not_ruled_out(story_log, triage_json):
    r = triage_json(str(story_log), "--evidence", snap_file("venv-accelerate-broken"))
    assert "missing-accelerate" not in [x["signature"] for x in r["ruled_out"]]
    ma = diag(r, "missing-accelerate")
    assert any(
        "does not import" in e["text"] and "No module named 'yaml'" in e["text"] for e in ma["evidence"]
    )


def test_too_old_accelerate_supports(story_log, triage_json, tmp_path):
    s = snapshot("venv-accelerate-1.13")
    s["packages"]["accelerate"] = "0.34.2"
    s["imports"]["accelerate"]["version"] = "0.34.2"
    r = triage_json(str(story_log), "--evidence", write_snap(tmp_path, s))
    ma = diag(r, "missing-accelerate")
    assert ma["confidence"] == "likely"
    assert any("older than the 1.1.0" in e["text"] for e in ma["evidence"])


@pytest.mark.parametrize(
    "fixture", ["001-story-plus-lost-stderr-no-accelerate", "002-story-2to1-glued-with-accelerate"]
)
@pytest.mark.parametrize("venv", ["venv-no-accelerate", "venv-accelerate-1.13"])
def test_lost_stderr_confirms_fx_race_on_top(fixture, venv, triage_json, validate_report):
    log = FIXTURES / "fx-tracing-flag-race" / fixture / "input.log"
    r = triage_json(str(log), "--evidence", snap_file(venv))
    validate_report(r)
    top = r["diagnoses"][0]
    assert (top["signature"], top["confidence"], top["role"]) == (
        "fx-tracing-flag-race",
        "confirmed",
        "root-cause",
    )
    assert "missing-accelerate" not in sigs(r)


def _cuda_snap(torch_cuda: str, driver_cuda: str) -> dict:
    s = snapshot("venv-accelerate-1.13")
    s["torch"]["cuda"] = torch_cuda
    s["torch"]["version"] = f"2.11.0+cu{torch_cuda.replace('.', '')}"
    s["gpus"]["cuda_driver_version"] = driver_cuda
    return s


def test_torch_cuda_newer_than_driver_supports_mismatch(story_log, triage_json, tmp_path, validate_report):
    newer = triage_json(
        str(story_log), "--evidence", write_snap(tmp_path, _cuda_snap("13.0", "12.8"), "newer.json")
    )
    validate_report(newer)
    d = diag(newer, "cuda-version-mismatch")
    assert d["confidence"] == "likely"  # supported, but a cut-off log confirms no inference
    assert any(
        e.get("fact") and "built for CUDA 13.0" in e["text"] and "12.8" in e["text"] for e in d["evidence"]
    )
    same = triage_json(
        str(story_log), "--evidence", write_snap(tmp_path, _cuda_snap("12.8", "12.8"), "same.json")
    )
    assert "cuda-version-mismatch" not in sigs(same)
    minor = triage_json(
        str(story_log), "--evidence", write_snap(tmp_path, _cuda_snap("12.8", "12.4"), "minor.json")
    )
    assert diag(minor, "cuda-version-mismatch")["confidence"] == "possible"


def test_torch_cuda_init_warning_confirms_mismatch(story_log, triage_json):
    r = triage_json(str(story_log), "--evidence", snap_file("cuda-mismatch"))
    d = r["diagnoses"][0]
    assert (d["signature"], d["confidence"]) == ("cuda-version-mismatch", "confirmed")
    assert any("too old" in e["text"] for e in d["evidence"])


def test_working_cuda_rules_out_mismatch_only_without_a_log_message(tmp_path, triage_json):
    s = snapshot("healthy-8gpu")
    log = tmp_path / "t.log"
    log.write_text("RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    r = triage_json(str(log), "--evidence", write_snap(tmp_path, s))
    d = diag(r, "cuda-version-mismatch")  # the log's own message outranks a later snapshot
    assert d["confidence"] == "confirmed"
    assert d["counter_evidence"], "the working torch should show as counter-evidence"


def test_oom_killer_line_confirms_host_oom(tmp_path, triage_json, validate_report):
    log = tmp_path / "t.log"
    log.write_text("step 10 loss 2.1\n/root/run.sh: line 7: 48211 Killed    python train.py\n")
    r = triage_json(str(log), "--evidence", snap_file("host-oom"))
    validate_report(r)
    d = r["diagnoses"][0]
    assert (d["signature"], d["confidence"]) == ("host-oom-killed", "confirmed")
    assert any("OOM killer" in e["text"] and "python (pid 48211)" in e["text"] for e in d["evidence"])
    # a readable kernel log without the OOM killer weakens the same guess
    r2 = triage_json(str(log), "--evidence", snap_file("crashed-all-idle"))
    d2 = diag(r2, "host-oom-killed")
    assert RANK[d2["confidence"]] < RANK["likely"]
    assert any("no OOM killer" in e["text"] for e in d2["counter_evidence"])


def test_oom_killer_confirms_even_on_the_cut_off_story(story_log, triage_json, tmp_path):
    s = snapshot("venv-no-accelerate")
    s["kernel"] = snapshot("host-oom")["kernel"]
    r = triage_json(str(story_log), "--evidence", write_snap(tmp_path, s))
    assert r["diagnoses"][0]["signature"] == "host-oom-killed"
    assert r["diagnoses"][0]["confidence"] == "confirmed"
    assert diag(r, "missing-accelerate")["confidence"] != "confirmed"


def test_xid79_confirms_fell_off_bus_over_nccl_errors(triage_json, validate_report):
    log = FIXTURES / "gpu-fell-off-bus" / "001-nccl-only-xid79-in-snapshot" / "input.log"
    bare = triage_json(str(log))
    assert "gpu-fell-off-bus" not in sigs(bare)  # the log alone shows only NCCL errors
    r = triage_json(str(log), "--evidence", snap_file("xid79"))
    validate_report(r)
    top = r["diagnoses"][0]
    assert (top["signature"], top["confidence"], top["role"]) == (
        "gpu-fell-off-bus",
        "confirmed",
        "root-cause",
    )
    assert {"nccl-error", "nccl-timeout"} <= set(top["explains"])
    assert any("Xid 79" in e["text"] for e in top["evidence"])
    for d in r["diagnoses"][1:]:
        if d["signature"] in ("nccl-error", "nccl-timeout"):
            assert d["role"] == "consequence"


def test_ecc_snapshot_confirms_ecc_error(triage_json):
    log = FIXTURES / "gpu-ecc-error" / "002-nccl-only-ecc-in-snapshot" / "input.log"
    r = triage_json(str(log), "--evidence", snap_file("ecc-uncorrectable"))
    top = r["diagnoses"][0]
    assert (top["signature"], top["confidence"]) == ("gpu-ecc-error", "confirmed")
    assert any("Xid 94" in e["text"] for e in top["evidence"])


def test_all_gpus_at_zero_note_only_when_all_are_empty(story_log, triage_json):
    gone = triage_json(str(story_log), "--evidence", snap_file("crashed-all-idle"))
    assert any("All 8 GPUs are at 0 MiB" in n for n in gone["notes"])
    busy = triage_json(str(story_log), "--evidence", snap_file("one-busy"))
    assert not any("0 MiB" in n for n in busy["notes"])


def test_healthy_log_with_healthy_snapshot_has_no_diagnosis(tmp_path, triage_json):
    log = tmp_path / "t.log"
    log.write_text("step 1 loss 2.0\nstep 2 loss 1.9\nTraining completed.\n")
    for name in ("healthy-8gpu", "xid79", "ecc-uncorrectable"):
        # snapshot facts alone never diagnose a run that ended cleanly
        r = triage_json(str(log), "--evidence", snap_file(name))
        assert r["diagnoses"] == [], name


def test_every_diagnosis_carries_checks(story_log, triage_json):
    for name in ("venv-no-accelerate", "venv-accelerate-1.13", "xid79", "host-oom"):
        r = triage_json(str(story_log), "--evidence", snap_file(name))
        assert r["diagnoses"]
        for d in r["diagnoses"]:
            assert d["checks"], d["signature"]


def test_bad_evidence_file_is_one_line_exit_2(story_log, tmp_path, capsys):
    from triage.cli import main

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["logs", str(story_log), "--evidence", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a JSON snapshot" in err
    other = tmp_path / "other.json"
    other.write_text('{"schema": "something/1"}')
    assert main(["logs", str(story_log), "--evidence", str(other)]) == 2
    assert "not a triage snapshot" in capsys.readouterr().err
