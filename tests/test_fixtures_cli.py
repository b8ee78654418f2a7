"""`triage fixtures add` and `triage fixtures check` from the command line, always on a
temporary --dir (never the repository's fixtures/).

The crash log is composed from the exact torch 2.2-2.8 OutOfMemoryError text
(shared/reference/messages.md) inside a training log that leaks the secrets people
really leak: an HF token and a W&B key in an echoed environment, an AWS key id in an
upload line next to the traceback.
"""

from __future__ import annotations

import gzip
import json
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from samples import OOM

from triage.cli import main
from triage.engine import analyze_text
from triage.fixtures.add import MARKER

HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"
WANDB = "0f3c9a1b2d4e6f708192a3b4c5d6e7f801234567"
AKIA = "AKIAIOSFODNN7EXAMPLE"
SECRETS = (HF, WANDB, AKIA)


def crash_log() -> str:
    head = [
        f"+ export HF_TOKEN={HF}",
        f"+ export WANDB_API_KEY={WANDB}",
        "wandb: Currently logged in as: jane.doe@example-lab.org (lab)",
        "Loading checkpoint shards: 100%|##########| 4/4 [00:03<00:00,  1.2it/s]",
    ]
    steps = [f"step {i} loss {2.5 - i / 1000:.4f} tok/s 21512" for i in range(1, 301)]
    crash = [
        f"uploading checkpoint-300 with aws_access_key_id={AKIA}",
        "Traceback (most recent call last):",
        '  File "/work/train.py", line 88, in <module>',
        "    loss = model(**batch).loss",
        '  File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1751',
        "    return self._call_impl(*args, **kwargs)",
        OOM,
    ]
    return "\n".join(head + steps + crash) + "\n"


@pytest.fixture()
def log(tmp_path: Path) -> Path:
    p = tmp_path / "nightly-run.log"
    p.write_text(crash_log())
    return p


def add(*args: str) -> int:
    return main(["fixtures", "add", *args])


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_redacted_fixture_holds_no_secret_and_checks(log: Path, tmp_path: Path, capsys):
    fx = tmp_path / "fx"
    assert (
        add(
            str(log),
            "--expect",
            "cuda-oom",
            "--redact",
            "--dir",
            str(fx),
            "--source",
            "recorded from the nightly run",
        )
        == 0
    )
    out = capsys.readouterr()
    folder = fx / "cuda-oom" / "001-nightly-run"
    files = files_of(folder)
    assert set(files) == {"input.log", "expected.toml"}
    for name, data in files.items():
        for secret in SECRETS:
            assert secret.encode() not in data, (name, secret)
    text = files["input.log"].decode()
    for ph in ("<HF_TOKEN_1>", "<WANDB_API_KEY_1>", "<AWS_ACCESS_KEY_1>", "<EMAIL_1>"):
        assert ph in text
    assert "fixture passes: cuda-oom (confirmed, root-cause)" in out.out

    assert main(["fixtures", "check", str(fx)]) == 0
    assert "1 passed, 0 failed" in capsys.readouterr().out

    exp = folder / "expected.toml"
    exp.write_text(exp.read_text().replace('signature = "cuda-oom"', 'signature = "nan-loss"'))
    junit = tmp_path / "fixtures.xml"
    assert main(["fixtures", "check", str(fx), "--junit", str(junit)]) == 1
    assert "expected nan-loss, got cuda-oom" in capsys.readouterr().out
    suite = ET.parse(junit).getroot()
    assert suite.get("failures") == "1" and suite.find("testcase/failure") is not None


def test_unredacted_fixture_keeps_the_secrets_and_warns(log: Path, tmp_path: Path, capsys):
    # the counterpart of the test above: the secrets are in the kept windows
    assert add(str(log), "--expect", "cuda-oom", "--dir", str(tmp_path / "fx")) == 0
    err = capsys.readouterr().err
    assert "look like secrets" in err and "--redact" in err
    data = (tmp_path / "fx" / "cuda-oom" / "001-nightly-run" / "input.log").read_bytes()
    assert all(s.encode() in data for s in SECRETS)
    assert "edit `source`" in err  # no --source: the user is told to say where it came from


def test_trimmed_log_keeps_what_the_diagnosis_rests_on(log: Path, tmp_path: Path, capsys):
    assert add(str(log), "--expect", "cuda-oom", "--dir", str(tmp_path / "fx")) == 0
    folder = tmp_path / "fx" / "cuda-oom" / "001-nightly-run"
    original = log.read_text().splitlines()
    kept = (folder / "input.log").read_text().splitlines()
    assert len(kept) < len(original) // 2
    markers = [x for x in kept if x.startswith("[... ") and "omitted by triage fixtures add" in x]
    assert len(markers) == 1
    dropped = int(markers[0].split()[1])
    assert len(kept) - 1 + dropped == len(original)  # every line is kept or counted
    assert kept[:20] == original[:20]  # the head
    assert kept[-7:] == original[-7:]  # the traceback and the message
    assert "Traceback (most recent call last):" in kept
    exp = tomllib.loads((folder / "expected.toml").read_text())
    assert exp["diagnoses"][0] == {"signature": "cuda-oom", "confidence": "confirmed", "role": "root-cause"}
    assert exp["end_state"] == "traceback"
    assert "recorded" in exp["source"] and "trimmed" in exp["source"]


def test_marker_line_means_nothing_to_the_parser():
    healthy = "step 1 loss 2.0\n{}step 50 loss 1.9\nTraining completed.\n"
    rep = analyze_text(healthy.format(MARKER.format(n=1234) + "\n"))
    assert rep.diagnoses == () and rep.end_state.kind == "clean-exit"
    assert rep.last_error is None and rep.end_state.last_phase == "training"
    alone = analyze_text(MARKER.format(n=1234) + "\n")
    plain = analyze_text("some line\n")  # a marker is read like any uneventful line
    assert [d.signature for d in alone.diagnoses] == [d.signature for d in plain.diagnoses]
    assert alone.end_state.kind == plain.end_state.kind and alone.end_state.last_phase is None
    # and inside a traceback it does not end it early or become its message
    tb = (
        'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n'
        + MARKER.format(n=3)
        + '\n  File "b.py", line 2, in f\n'
        + OOM
        + "\n"
    )
    rep = analyze_text(tb)
    assert rep.top is not None and rep.top.signature == "cuda-oom"
    assert rep.top.confidence.label == "confirmed"


def test_numbering_and_refusing_to_overwrite(log: Path, tmp_path: Path, capsys):
    fx = tmp_path / "fx"
    assert add(str(log), "--expect", "cuda-oom", "--dir", str(fx)) == 0
    assert add(str(log), "--expect", "cuda-oom", "--dir", str(fx), "--name", "again") == 0
    assert sorted(p.name for p in (fx / "cuda-oom").iterdir()) == ["001-nightly-run", "002-again"]
    before = files_of(fx / "cuda-oom" / "001-nightly-run")
    capsys.readouterr()
    assert add(str(log), "--expect", "cuda-oom", "--dir", str(fx), "--name", "001-nightly-run") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "refusing to overwrite" in err
    assert files_of(fx / "cuda-oom" / "001-nightly-run") == before


def test_unexpected_signature_warns_and_fixture_fails(log: Path, tmp_path: Path, capsys):
    fx = tmp_path / "fx"
    assert add(str(log), "--expect", "nan-loss", "--dir", str(fx)) == 0
    err = capsys.readouterr().err
    assert "currently diagnoses cuda-oom (confirmed), not nan-loss" in err
    exp = tomllib.loads((fx / "nan-loss" / "001-nightly-run" / "expected.toml").read_text())
    assert exp["diagnoses"] == [{"signature": "nan-loss"}]
    assert main(["fixtures", "check", str(fx)]) == 1


def test_healthy_log_as_none(tmp_path: Path, capsys):
    log = tmp_path / "ok.log"
    log.write_text("".join(f"step {i} loss 2.0\n" for i in range(50)) + "Training completed.\n")
    assert add(str(log), "--expect", "none", "--dir", str(tmp_path / "fx")) == 0
    assert "warning" not in capsys.readouterr().err
    exp = tomllib.loads((tmp_path / "fx" / "none" / "001-ok" / "expected.toml").read_text())
    assert "diagnoses" not in exp and exp["end_state"] == "clean-exit"
    assert main(["fixtures", "check", str(tmp_path / "fx")]) == 0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["missing.log", "--expect", "cuda-oom"], "no such file"),
        (["{tmp}", "--expect", "cuda-oom"], "is a folder"),
        (["-", "--expect", "cuda-oom"], "not - (stdin)"),
        (["{log}", "--expect", "CUDA OOM"], "signature id"),
        (["{log}", "--expect", "cuda-oom", "--name", "Bad Name"], "--name"),
        (["{log}"], "--expect"),
        (["{log}", "--expect", "cuda-oom", "--evidence", "{tmp}/nope.json"], "no such snapshot"),
    ],
)
def test_errors_are_one_line_exit_2(args: list[str], words: str, log: Path, tmp_path: Path, capsys):
    argv = [a.format(tmp=tmp_path, log=log) for a in args]
    assert add(*argv, "--dir", str(tmp_path / "fx")) == 2
    err = capsys.readouterr().err
    assert err.startswith("triage: error:") and err.count("\n") == 1 and words in err
    assert not (tmp_path / "fx").exists() or not any((tmp_path / "fx").rglob("input.log"))


def test_evidence_snapshot_is_kept_and_redacted(log: Path, tmp_path: Path, capsys):
    snap = {
        "schema": "triage.snapshot/1",
        "host": "gpu-node-17.lab.internal",
        "python": {"executable": "/home/alice/venv/bin/python", "version": "3.11.7"},
        "packages": {"torch": "2.13.0", "transformers": "5.8.1", "accelerate": "1.13.0"},
        "env": {"HF_TOKEN": HF},
        "cwd": "C:\\Users\\bob\\proj",
    }
    sp = tmp_path / "snap.json"
    sp.write_text(json.dumps(snap))
    fx = tmp_path / "fx"
    assert add(str(log), "--expect", "cuda-oom", "--evidence", str(sp), "--redact=all", "--dir", str(fx)) == 0
    folder = fx / "cuda-oom" / "001-nightly-run"
    text = (folder / "evidence.json").read_text()
    for gone in ("alice", "gpu-node-17", HF, "bob"):
        assert gone not in text
    kept = json.loads(text)
    assert kept["packages"] == snap["packages"] and kept["schema"] == "triage.snapshot/1"
    assert kept["python"]["executable"].startswith("/home/<USER_")
    assert main(["fixtures", "check", str(fx)]) == 0
    # without --redact the snapshot is kept byte for byte
    assert add(str(log), "--expect", "cuda-oom", "--evidence", str(sp), "--dir", str(fx)) == 0
    assert (fx / "cuda-oom" / "002-nightly-run" / "evidence.json").read_bytes() == sp.read_bytes()


def test_gzip_log_and_whole(log: Path, tmp_path: Path):
    gz = tmp_path / "run.log.gz"
    gz.write_bytes(gzip.compress(log.read_bytes()))
    fx = tmp_path / "fx"
    assert add(str(gz), "--expect", "cuda-oom", "--dir", str(fx), "--whole") == 0
    assert (fx / "cuda-oom" / "001-run" / "input.log").read_bytes() == log.read_bytes()
    assert main(["fixtures", "check", str(fx)]) == 0


def test_expected_signature_behind_another_keeps_the_order(log: Path, tmp_path: Path, capsys):
    with log.open("a") as f:  # the watchdog text of torch 2.6+ (messages.md), after the OOM
        f.write(
            "[rank1]:[E1129 17:30:01.000000 24243 ProcessGroupNCCL.cpp:616] [Rank 1] "
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5523, "
            "OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) "
            "ran for 600016 milliseconds before timing out.\n"
        )
    fx = tmp_path / "fx"
    assert add(str(log), "--expect", "nccl-timeout", "--dir", str(fx)) == 0
    assert "diagnoses cuda-oom first; nccl-timeout comes #2" in capsys.readouterr().err
    exp = tomllib.loads((fx / "nccl-timeout" / "001-nightly-run" / "expected.toml").read_text())
    assert [d["signature"] for d in exp["diagnoses"]] == ["cuda-oom", "nccl-timeout"]
    assert exp["diagnoses"][1]["explained_by"] == "cuda-oom"
    assert main(["fixtures", "check", str(fx)]) == 0


def test_pre_commit_hook_runs_fixtures_check(log: Path, tmp_path: Path, capsys):
    yaml = pytest.importorskip("yaml")
    hooks = yaml.safe_load((Path(__file__).parent.parent / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "triage-fixtures")
    assert hook["pass_filenames"] is False and hook["language"] == "python"
    argv = hook["entry"].split()
    assert argv[:3] == ["triage", "fixtures", "check"]
    fx = tmp_path / "fx"
    assert add(str(log), "--expect", "cuda-oom", "--dir", str(fx)) == 0
    assert main([*argv[1:], str(fx)]) == 0
    exp = fx / "cuda-oom" / "001-nightly-run" / "expected.toml"
    exp.write_text(exp.read_text().replace('"cuda-oom"', '"nan-loss"', 1))
    assert main([*argv[1:], str(fx)]) == 1


def test_unknown_expect_is_an_error_and_writes_nothing(log: Path, tmp_path: Path, capsys):
    fx = tmp_path / "fx"
    assert add(str(log), "--expect", "not-a-signature", "--dir", str(fx)) == 2
    err = capsys.readouterr().err
    assert err.startswith("triage: error:") and err.count("\n") == 1
    assert "not-a-signature" in err and "triage rules list" in err
    assert not fx.exists() or not any(fx.rglob("*"))
    # a near miss names the id it probably meant
    assert add(str(log), "--expect", "cuda-ooms", "--dir", str(fx)) == 2
    assert "cuda-oom" in capsys.readouterr().err
    assert not fx.exists() or not any(fx.rglob("*"))


def test_expect_accepts_an_alias_and_files_it_under_the_rule_id(tmp_path: Path, capsys):
    extra = tmp_path / "rules" / "demo"
    extra.mkdir(parents=True)
    (extra / "widget-jam.toml").write_text(
        'id = "widget-jam"\ntitle = "Widget jammed"\ncategory = "demo"\n'
        'aliases = ["old-widget-jam"]\n'
        "[[match]]\nliteral = \"WidgetJamError\"\nregex = 'WidgetJamError: jammed'\n"
        '[examples]\nfire = ["WidgetJamError: jammed at step 3"]\nquiet = ["widget ok"]\n'
    )
    log = tmp_path / "jam.log"
    log.write_text("step 1 loss 2.0\nstep 2 loss 1.9\nWidgetJamError: jammed at step 3\n")
    fx = tmp_path / "fx"
    assert (
        add(str(log), "--expect", "old-widget-jam", "--rules", str(tmp_path / "rules"), "--dir", str(fx)) == 0
    )
    capsys.readouterr()
    exp = tomllib.loads((fx / "widget-jam" / "001-jam" / "expected.toml").read_text())
    assert exp["diagnoses"][0]["signature"] == "widget-jam"
    assert main(["fixtures", "check", str(fx), "--rules", str(tmp_path / "rules")]) == 0


def test_redact_masks_the_wandb_key_and_all_masks_launcher_hosts(tmp_path: Path, capsys):
    key = "9a8b7c6d5e4f30211203f4e5d6c7b8a9f0e1d2c3"
    lines = crash_log().splitlines()
    lines[3:3] = [
        f"wandb: W&B API key is configured: {key}",
        "gpu-node-17.cluster.example.com:24242:24242 [0] NCCL INFO Bootstrap : Using eth0",
        "SLURM_JOB_NODELIST=gpu-node-[16-17]",
    ]
    lines.append("srun: error: gpu-node-16: task 0: Exited with exit code 1")
    log = tmp_path / "nightly-run.log"
    log.write_text("\n".join(lines) + "\n")
    fx = tmp_path / "fx"
    assert add(str(log), "--expect", "cuda-oom", "--redact", "--dir", str(fx)) == 0
    data = (fx / "cuda-oom" / "001-nightly-run" / "input.log").read_text()
    assert key not in data and "W&B API key is configured: <WANDB_API_KEY_" in data
    assert "gpu-node-17" in data  # the default mode masks secrets, not machines
    assert add(str(log), "--expect", "cuda-oom", "--redact=all", "--dir", str(fx)) == 0
    capsys.readouterr()
    data = (fx / "cuda-oom" / "002-nightly-run" / "input.log").read_text()
    assert key not in data and "gpu-node" not in data and "example.com" not in data
    assert "<NODELIST_1>" in data and "srun: error: <HOST_" in data
    assert main(["fixtures", "check", str(fx)]) == 0
