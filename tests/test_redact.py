"""Redaction: a corpus of secrets that must vanish and of look-alikes that must survive.

The secrets are made up in the real formats (prefix, length, alphabet) of each service;
the look-alikes are what ML logs are full of: hashes, commit ids, UUIDs, pointers,
PCI bus ids, NCCL comm ids, tensor shapes, versions, timestamps, C++ names.
"""

from __future__ import annotations

import re
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triage.redact import Redactor, redact

HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"
WANDB = "0f3c9a1b2d4e6f708192a3b4c5d6e7f801234567"
AKIA = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GHP = "ghp_1234567890abcdefghijABCDEFGHIJ123456"

# (line, secret that must disappear, placeholder kind that must replace it)
SECRETS = [
    (f"HF_TOKEN={HF} python train.py", HF, "HF_TOKEN"),
    (f"huggingface-cli login --token {HF}", HF, "HF_TOKEN"),
    ("token: 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98", "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98",
     "HF_TOKEN"),
    ("HUGGING_FACE_HUB_TOKEN=api_org_AbCdEfGhIjKlMnOpQrStUvWxYz0123",
     "api_org_AbCdEfGhIjKlMnOpQrStUvWxYz0123",
     "HF_TOKEN"),
    (f"export WANDB_API_KEY={WANDB}", WANDB, "WANDB_API_KEY"),
    (f'WANDB_API_KEY: "{WANDB}"', WANDB, "WANDB_API_KEY"),
    (f"$ wandb login {WANDB}", WANDB, "WANDB_API_KEY"),
    (f"$ wandb login --relogin {WANDB}", WANDB, "WANDB_API_KEY"),
    (f"machine api.wandb.ai login user password {WANDB}", WANDB, "WANDB_API_KEY"),
    (f'wandb.login(key="{WANDB}")', WANDB, "WANDB_API_KEY"),
    (f"aws_access_key_id = {AKIA}", AKIA, "AWS_ACCESS_KEY"),
    ("AWS_ACCESS_KEY_ID=ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A", "AWS_ACCESS_KEY"),
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET, "AWS_SECRET_KEY"),
    (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET, "AWS_SECRET_KEY"),
    (f'"SecretAccessKey": "{AWS_SECRET}"', AWS_SECRET, "AWS_SECRET_KEY"),
    ("aws_session_token = IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ",
     "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ", "AWS_SESSION_TOKEN"),
    (f"git remote set-url origin https://{GHP}@github.com/org/repo", GHP, "GITHUB_TOKEN"),
    ("GH_TOKEN=gho_16C7e42F292c6912E7710c838347Ae178B4a",
     "gho_16C7e42F292c6912E7710c838347Ae178B4a",
     "GITHUB_TOKEN"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789abcdef",
     "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789abcdef",
     "GITHUB_TOKEN"),
    ("OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
     "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
     "API_KEY"),
    ("openai.AuthenticationError: Incorrect API key provided: sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
     "sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "API_KEY"),
    ("x-api-key: sk-ant-api03-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z0123",
     "sk-ant-api03-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z0123", "API_KEY"),
    ("Authorization: Bearer abcDEF123456ghiJKL789mnoPQR",
     "abcDEF123456ghiJKL789mnoPQR", "BEARER_TOKEN"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZDEyMw=='", "dXNlcjpwYXNzd29yZDEyMw==",
     "AUTH_TOKEN"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTYifQ.SflKxwRJSMeKKF2QT4fwpM",
     "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTYifQ.SflKxwRJSMeKKF2QT4fwpM", "JWT"),
    ("MLFLOW_TRACKING_URI=https://mlflow:Sup3rS3cret@mlflow.corp.example.io:5000",
     "Sup3rS3cret", "PASSWORD"),
    ("redis://:hunter2hunter2@10.0.0.5:6379/0", "hunter2hunter2", "PASSWORD"),
    ("postgresql://trainer:p%40ss-w0rd@db:5432/runs", "p%40ss-w0rd", "PASSWORD"),
    ("db password=CorrectHorse42 user=train", "CorrectHorse42", "PASSWORD"),
    ('{"api_key": "a1b2c3d4e5f6g7h8i9"}', "a1b2c3d4e5f6g7h8i9", "SECRET"),
    ("MY_SERVICE_TOKEN=Zx81kLmn02Pqrs", "Zx81kLmn02Pqrs", "TOKEN"),
    ("python train.py --hf-token s3cr3tValue9 --epochs 3", "s3cr3tValue9", "SECRET"),
    ("Slack alert via xoxb-1234567890-abcdefghijklmnop", "xoxb-1234567890-abcdefghijklmnop",
     "SLACK_TOKEN"),
    ("GOOGLE_API_KEY AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
     "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
     "GOOGLE_API_KEY"),
    ("wandb: Currently logged in as: jane.doe@example-lab.org (team-x)", "jane.doe@example-lab.org",
     "EMAIL"),
    ("Author: Jane Doe <jane+ml@university.edu>", "jane+ml@university.edu", "EMAIL"),
]

# Lines that must come out unchanged, in both modes.
LOOK_ALIKES = [
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "Downloading model.safetensors "
    "sha256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "md5 d41d8cd98f00b204e9800998ecf8427e  checkpoint-1000/optimizer.pt",
    "commit 3f2a9c1b7d4e5f60718293a4b5c6d7e8f9012345 (HEAD -> main)",
    "git rev-parse HEAD: 0f3c9a1b2d4e6f708192a3b4c5d6e7f801234567",
    "torch 2.13.0+git3f2a9c1",
    "run id 123e4567-e89b-12d3-a456-426614174000 resumed",
    "RuntimeError: shape '[8, 4096, 151936]' is invalid for input of size 1234",
    "torch.Size([2, 16, 1024, 128]) bf16 tensor at 0x7f3a2c000000",
    "Segmentation fault at address 0x00007ffd5e8c1a20",
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
    "GPU 00000000:3B:00.0: Detected Critical Xid Error",
    "busId 3b000 commId 0x9c8f7e6d5c4b3a29 rank 3 nranks 8 - Init COMPLETE",
    "NCCL INFO comm 0x55d0c1a2b3c0 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0",
    "[Rank 0] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=5523, OpType=ALLREDUCE, "
    "NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600016 milliseconds",
    "2026-11-29T17:20:01.100000+00:00 step 1838 loss 1.2400 tok/s 21512",
    "I1129 17:20:01.100000 24239 torch/distributed/run.py:792] Starting elastic_operator",
    "terminate called after throwing an instance of 'c10::Error' what(): std::runtime_error",
    "x = hidden[:, ::2] and y = q[..., ::-1]",
    "pip install nvidia-cudnn-cu12==9.1.0.70 torch==2.13.0",
    "hf_hub_download(repo_id='Qwen/Qwen3-8B') hf_device_map={'': 0} hf_transfer enabled",
    "tokenizer: pad_token=<pad> eos_token=</s> max_new_tokens=512 num_tokens=8192",
    "Enter your password: ",
    "the token budget is 4096; token: 128000",
    "Please provide your HF token (see https://huggingface.co/settings/tokens)",
    "wandb: Appending key for api.wandb.ai to your netrc file: /root/.netrc",
    "Syncing run sk-learn-baseline-run to W&B",
    "git@github.com:org/repo.git",
    "Bearer token missing",
    "TOKENIZERS_PARALLELISM=false",
    "aws_secret_access_key = None",
    "HF_TOKEN=$HF_TOKEN  PASSWORD=********",
    "CUDA_VISIBLE_DEVICES=0,1,2,3 MASTER_PORT=29500",
    "import torchvision.io as tio; fsspec.implementations.local",
    "Downloading https://huggingface.co/Qwen/Qwen3-8B/resolve/main/config.json",
    "wandb: View run at https://wandb.ai/team/proj/runs/abc123",
    "serving on http://localhost:8080, http://0.0.0.0:7860 and 127.0.0.1",
    "NCCL_SOCKET_IFNAME=eth0 NCCL_IB_HCA=mlx5_0:1",
]

# Lines for mode "all": (line, what must disappear, what must stay)
IDENTITIES = [
    ("gpu-node-17:24242:24242 [0] NCCL INFO Bootstrap : Using eth0:10.1.2.3<0>",
     ["gpu-node-17", "10.1.2.3"], ["NCCL INFO Bootstrap", "<0>"]),
    ("  host      : gpu-node-17.cluster.local", ["gpu-node-17"], ["host      : <HOST_"]),
    ('File "/home/alice/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1751',
     ["alice"], ["/home/<USER_", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py"]),
    ("/Users/bob.smith/code/train.py", ["bob.smith"], ["/Users/<USER_", "/code/train.py"]),
    ("MASTER_ADDR=trainer-head-0 MASTER_PORT=29500", ["trainer-head-0"], ["MASTER_PORT=29500"]),
    ("torchrun --rdzv-endpoint=worker-a.lab.internal:29400 train.py",
     ["worker-a.lab.internal"], [":29400 train.py"]),
    ("Connection refused: [2001:db8:85a3::8a2e:370:7334]:29500", ["2001:db8:85a3::8a2e:370:7334"],
     [":29500"]),
    ("alice@gpu-node-17:~/run$ python train.py", ["alice", "gpu-node-17"], ["python train.py"]),
    ("ssh trainer@10.20.30.40 -p 22", ["10.20.30.40"], ["ssh trainer@<IP_1> -p 22"]),
    ('File "/data/users/carol/run.py", line 3', ["carol"], ["/data/users/<USER_1>/run.py"]),
]


@pytest.mark.parametrize(("line", "secret", "kind"), SECRETS,
                         ids=[f"{s[2]}-{i}" for i, s in enumerate(SECRETS)])
@pytest.mark.parametrize("mode", ["secrets", "all"])
def test_secret_is_masked(line: str, secret: str, kind: str, mode: str):
    out = redact(line, mode)
    assert secret not in out
    assert f"<{kind}_1>" in out, out


@pytest.mark.parametrize("line", LOOK_ALIKES)
@pytest.mark.parametrize("mode", ["secrets", "all"])
def test_look_alike_survives(line: str, mode: str):
    assert redact(line, mode) == line


@pytest.mark.parametrize(("line", "gone", "kept"), IDENTITIES)
def test_all_masks_hosts_ips_and_home_paths(line: str, gone: list[str], kept: list[str]):
    out = redact(line, "all")
    for g in gone:
        assert g not in out, out
    for k in kept:
        assert k in out, out
    assert redact(line, "secrets") == line  # the default mode leaves identities alone


def test_same_secret_same_placeholder_within_a_run():
    r = Redactor()
    a = r.redact(f"rank0: HF_TOKEN={HF}\nrank1: token {HF}\nother: hf_{'Q' * 34}")
    assert a.count("<HF_TOKEN_1>") == 2 and "<HF_TOKEN_2>" in a
    assert r.redact(f"later: {HF}") == "later: <HF_TOKEN_1>"  # the instance remembers
    assert Redactor().redact(f"later: {HF}") == "later: <HF_TOKEN_1>"  # and a fresh one restarts


def test_learned_host_is_masked_everywhere():
    text = "host      : gpu-node-17\nrank 3 on gpu-node-17 died\nnode gpu-node-170 fine\n"
    out = redact(text, "all")
    assert "gpu-node-17\n" not in out and "on gpu-node-17 " not in out
    assert out.splitlines()[1] == "rank 3 on <HOST_1> died"
    assert "gpu-node-170" in out  # a longer name is another host


def test_line_count_and_undecodable_bytes_are_kept():
    key = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabcdefgh\n"
           "-----END RSA PRIVATE KEY-----")
    text = f"a\n{key}\nb HF_TOKEN={HF}\n"
    out = redact(text)
    assert out.count("\n") == text.count("\n")
    assert "MIIEowIBAAKCAQEA" not in out and "<PRIVATE_KEY_1>" in out
    raw = b"\xff\xfe step 1 \x80 " + f"WANDB_API_KEY={WANDB}".encode() + b"\n"
    got = Redactor().redact_bytes(raw)
    assert got.startswith(b"\xff\xfe step 1 \x80 ") and WANDB.encode() not in got


def test_bad_mode_is_rejected():
    with pytest.raises(ValueError):
        Redactor(mode="everything")


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=7, max_value=64).flatmap(
    lambda n: st.text(alphabet="0123456789abcdef", min_size=n, max_size=n)))
def test_any_hex_digest_survives(digest: str):
    line = f"checkpoint {digest} verified (commit {digest[:12]})"
    assert redact(line, "all") == line


@settings(max_examples=100, deadline=None)
@given(st.uuids(), st.lists(st.integers(min_value=1, max_value=1 << 20), min_size=1, max_size=5))
def test_uuids_and_shapes_survive(u: uuid.UUID, dims: list[int]):
    line = f"run {u} tensor of shape torch.Size({dims}) at 0x{u.hex[:12]}"
    assert redact(line, "all") == line


def test_placeholders_are_never_masked_twice():
    once = redact(f"password={HF} url https://u:{HF}@h.example.io", "all")
    assert redact(once, "all") == once
    assert not re.search(r"<[A-Z_]+_\d+>_\d", once)
