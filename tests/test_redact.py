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
    ("token: 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98", "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98", "HF_TOKEN"),
    (
        "HUGGING_FACE_HUB_TOKEN=api_org_AbCdEfGhIjKlMnOpQrStUvWxYz0123",
        "api_org_AbCdEfGhIjKlMnOpQrStUvWxYz0123",
        "HF_TOKEN",
    ),
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
    (
        "aws_session_token = IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ",
        "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ",
        "AWS_SESSION_TOKEN",
    ),
    (f"git remote set-url origin https://{GHP}@github.com/org/repo", GHP, "GITHUB_TOKEN"),
    (
        "GH_TOKEN=gho_16C7e42F292c6912E7710c838347Ae178B4a",
        "gho_16C7e42F292c6912E7710c838347Ae178B4a",
        "GITHUB_TOKEN",
    ),
    (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789abcdef",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789abcdef",
        "GITHUB_TOKEN",
    ),
    (
        "OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
        "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
        "API_KEY",
    ),
    (
        "openai.AuthenticationError: Incorrect API key provided: sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
        "sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
        "API_KEY",
    ),
    (
        "x-api-key: sk-ant-api03-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z0123",
        "sk-ant-api03-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z0123",
        "API_KEY",
    ),
    ("Authorization: Bearer abcDEF123456ghiJKL789mnoPQR", "abcDEF123456ghiJKL789mnoPQR", "BEARER_TOKEN"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZDEyMw=='", "dXNlcjpwYXNzd29yZDEyMw==", "AUTH_TOKEN"),
    (
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTYifQ.SflKxwRJSMeKKF2QT4fwpM",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTYifQ.SflKxwRJSMeKKF2QT4fwpM",
        "JWT",
    ),
    ("MLFLOW_TRACKING_URI=https://mlflow:Sup3rS3cret@mlflow.corp.example.io:5000", "Sup3rS3cret", "PASSWORD"),
    ("redis://:hunter2hunter2@10.0.0.5:6379/0", "hunter2hunter2", "PASSWORD"),
    ("postgresql://trainer:p%40ss-w0rd@db:5432/runs", "p%40ss-w0rd", "PASSWORD"),
    ("db password=CorrectHorse42 user=train", "CorrectHorse42", "PASSWORD"),
    ('{"api_key": "a1b2c3d4e5f6g7h8i9"}', "a1b2c3d4e5f6g7h8i9", "SECRET"),
    ("MY_SERVICE_TOKEN=Zx81kLmn02Pqrs", "Zx81kLmn02Pqrs", "TOKEN"),
    ("python train.py --hf-token s3cr3tValue9 --epochs 3", "s3cr3tValue9", "SECRET"),
    ("Slack alert via xoxb-1234567890-abcdefghijklmnop", "xoxb-1234567890-abcdefghijklmnop", "SLACK_TOKEN"),
    (
        "GOOGLE_API_KEY AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
        "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
        "GOOGLE_API_KEY",
    ),
    ("wandb: Currently logged in as: jane.doe@example-lab.org (team-x)", "jane.doe@example-lab.org", "EMAIL"),
    ("Author: Jane Doe <jane+ml@university.edu>", "jane+ml@university.edu", "EMAIL"),
    # what wandb prints when the key comes from the environment or the netrc
    (f"wandb: W&B API key is configured: {WANDB}", WANDB, "WANDB_API_KEY"),
    (f"wandb: WANDB API key: local-{WANDB}", f"local-{WANDB}", "WANDB_API_KEY"),
    (f"WANDB_API_KEY={WANDB} torchrun --nproc-per-node 8 train.py", WANDB, "WANDB_API_KEY"),
]

# Lines that must come out unchanged, in both modes.
LOOK_ALIKES = [
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "Downloading model.safetensors sha256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
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
    "wandb: W&B API key is configured. Use `wandb login --relogin` to force relogin",
    # library paths and frames: no host or user in them, whatever shape finds hosts
    '  File "/venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/'
    'errors/__init__.py", line 355, in wrapper',
    "[E1129 17:30:01.000000 24243 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:616] "
    "[Rank 1] Watchdog caught collective operation timeout",
    "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) local_rank: 0 "
    "(pid: 24242) of binary: /venv/bin/python",
    "  time      : 2026-11-29_17:30:05",
    "  rank      : 3 (local_rank: 3)",
    "Loading checkpoint shards: 100%|##########| 4/4 [00:03<00:00,  1.2it/s]",
    "NCCL INFO Channel 00/0 : 3[3] -> 4[0] [send] via NET/IB/0",
    "x = torch.zeros(8, device='cuda:0'); moved to cuda:1",
    # index-like brackets are not SLURM node lists (a learned `rank0` would eat every prefix)
    "[rank0]: ranks[0-7] joined; layers[0-3] frozen on GPU[0-7]; a[0,1] = 2",
]

# Lines for mode "all": (line, what must disappear, what must stay)
IDENTITIES = [
    (
        "gpu-node-17:24242:24242 [0] NCCL INFO Bootstrap : Using eth0:10.1.2.3<0>",
        ["gpu-node-17", "10.1.2.3"],
        ["NCCL INFO Bootstrap", "<0>"],
    ),
    ("  host      : gpu-node-17.cluster.local", ["gpu-node-17"], ["host      : <HOST_"]),
    (
        'File "/home/alice/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1751',
        ["alice"],
        ["/home/<USER_", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py"],
    ),
    ("/Users/bob.smith/code/train.py", ["bob.smith"], ["/Users/<USER_", "/code/train.py"]),
    ("MASTER_ADDR=trainer-head-0 MASTER_PORT=29500", ["trainer-head-0"], ["MASTER_PORT=29500"]),
    (
        "torchrun --rdzv-endpoint=worker-a.lab.internal:29400 train.py",
        ["worker-a.lab.internal"],
        [":29400 train.py"],
    ),
    (
        "Connection refused: [2001:db8:85a3::8a2e:370:7334]:29500",
        ["2001:db8:85a3::8a2e:370:7334"],
        [":29500"],
    ),
    ("alice@gpu-node-17:~/run$ python train.py", ["alice", "gpu-node-17"], ["python train.py"]),
    ("ssh trainer@10.20.30.40 -p 22", ["10.20.30.40"], ["ssh trainer@<IP_1> -p 22"]),
    ('File "/data/users/carol/run.py", line 3', ["carol"], ["/data/users/<USER_1>/run.py"]),
    # NCCL's host:pid:tid [dev] prefix, whatever follows it and whatever the host's domain
    (
        "gpu-node-17.cluster.example.com:24242:24299 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[0]",
        ["gpu-node-17", "example.com"],
        ["<HOST_1>:24242:24299 [3] NCCL INFO Channel 00/0 : 3[3]"],
    ),
    (
        "gpu-node-17:24242:24299 [3] misc/socket.cc:50 NCCL WARN Net : Connection closed",
        ["gpu-node-17"],
        ["<HOST_1>:24242:24299 [3] misc/socket.cc:50 NCCL WARN"],
    ),
    (
        "[rank3]:gpu-node-17:24242:24299 [3] transport/net_ib.cc:123 NCCL WARN NET/IB",
        ["gpu-node-17"],
        ["[rank3]:<HOST_1>:24242"],
    ),
    # torchrun / elastic failure reports
    (
        "  host      : gpu-node-17.cluster.example.com",
        ["gpu-node-17", "example.com"],
        ["  host      : <HOST_1>"],
    ),
    ("  hostname : gpu-node-17", ["gpu-node-17"], ["  hostname : <HOST_1>"]),
    (
        "torch.distributed.DistNetworkError: The client socket has timed out after 600s while "
        "trying to connect to (gpu-node-01, 29500).",
        ["gpu-node-01"],
        ["(<HOST_1>, 29500)"],
    ),
    (
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [gpu-node-01]:29500 "
        "(errno: 110 - Connection timed out).",
        ["gpu-node-01"],
        ["[W socket.cpp:663]", "[<HOST_1>]:29500"],
    ),
    (
        "Rendezvous complete. rdzv_endpoint=gpu-node-01:29400 rdzv_backend=c10d",
        ["gpu-node-01"],
        ["rdzv_endpoint=<HOST_1>:29400"],
    ),
    # SLURM: node lists and the lines srun and slurmstepd print
    ("SLURM_JOB_NODELIST=gpu-node-[01-04,07]", ["gpu-node", "01-04"], ["SLURM_JOB_NODELIST=<NODELIST_1>"]),
    (
        "JobId=1234 NodeList=gpu-node-01,gpu-node-02 BatchHost=gpu-node-01",
        ["gpu-node"],
        ["NodeList=<NODELIST_1> BatchHost=<HOST_1>"],
    ),
    ("Nodes gpu-a100-[001-016] are ready for job", ["gpu-a100"], ["Nodes <NODELIST_1> are ready"]),
    (
        "srun: error: gpu-node-03: task 3: Exited with exit code 1",
        ["gpu-node-03"],
        ["srun: error: <HOST_1>: task 3: Exited with exit code 1"],
    ),
    (
        "slurmstepd: error: *** JOB 1234 ON gpu-node-01 CANCELLED AT 2026-11-29T17:30:00 DUE TO "
        "TIME LIMIT ***",
        ["gpu-node-01"],
        ["*** JOB 1234 ON <HOST_1> CANCELLED AT", "DUE TO TIME LIMIT"],
    ),
    ("srun: error: Node failure on gpu-node-05", ["gpu-node-05"], ["Node failure on <HOST_1>"]),
    ("Running on host gpu-node-17", ["gpu-node-17"], ["Running on host <HOST_1>"]),
    # FQDNs, under a documentation domain or a country's
    (
        "ssh to gpu-node-17.cluster.example.com failed",
        ["gpu-node-17", "example.com"],
        ["ssh to <HOST_1> failed"],
    ),
    ("login node ml-login-2.cs.uni-example.de refused", ["ml-login-2"], ["login node <HOST_1> refused"]),
    ("  host      : trainer-master-0.svc.cluster.local", ["trainer-master-0"], ["host      : <HOST_1>"]),
]


@pytest.mark.parametrize(
    ("line", "secret", "kind"), SECRETS, ids=[f"{s[2]}-{i}" for i, s in enumerate(SECRETS)]
)
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
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabcdefgh\n-----END RSA PRIVATE KEY-----"
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
@given(
    st.integers(min_value=7, max_value=64).flatmap(
        lambda n: st.text(alphabet="0123456789abcdef", min_size=n, max_size=n)
    )
)
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


def test_a_host_gets_one_placeholder_in_every_shape():
    text = (
        "gpu-node-17:24242:24242 [0] NCCL INFO Bootstrap : Using eth0\n"
        "  host      : gpu-node-17.cluster.example.com\n"
        "rank 3 on gpu-node-17 died\n"
        "SLURM_JOB_NODELIST=gpu-node-[16-17]\n"
        "srun: error: gpu-node-16: task 0: Exited with exit code 1\n"
    )
    out = redact(text, "all").splitlines()
    assert "gpu-node" not in "\n".join(out), out
    ph = out[0].split(":", 1)[0]
    assert re.fullmatch(r"<HOST_\d>", ph) and out[0].endswith(
        ":24242:24242 [0] NCCL INFO Bootstrap : Using eth0"
    )
    assert out[1] == f"  host      : {ph}"  # the FQDN of the same machine
    assert out[2] == f"rank 3 on {ph} died"
    assert out[3] == "SLURM_JOB_NODELIST=<NODELIST_1>"
    other = out[4].split()[2].rstrip(":")  # a host known from the list
    assert re.fullmatch(r"<HOST_\d>", other) and other != ph
    assert out[4] == f"srun: error: {other}: task 0: Exited with exit code 1"


def test_report_strings_agree_whatever_their_order():
    # a report's strings are redacted one by one: a host named by its shape in a later
    # string must still be masked in an earlier one that mentions it bare
    got = Redactor("all").redact_data(("rank 3 on gpu-node-17 died", "  host      : gpu-node-17"))
    assert got == ("rank 3 on <HOST_1> died", "  host      : <HOST_1>")


def test_a_private_key_cut_off_before_its_end_is_masked_to_the_end():
    body = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAAAAABAAABlwAAAAdzc2gtcn"
    text = f"step 1 loss 2.0\n-----BEGIN OPENSSH PRIVATE KEY-----\n{body}"
    out = redact(text)
    assert "b3BlbnNzaC1" not in out and "AAAAdzc2gtcn" not in out
    assert out.startswith("step 1 loss 2.0\n") and "<PRIVATE_KEY_1>" in out
    assert out.count("\n") == text.count("\n")


def test_frames_and_library_paths_survive_next_to_hosts():
    frame = (
        '  File "/venv/lib/python3.11/site-packages/torch/distributed/elastic/agent/server/'
        'api.py", line 722, in run'
    )
    text = f"  host      : gpu-node-17\n{frame}\nnode gpu-node-17 lost\n"
    out = redact(text, "all").splitlines()
    assert out == ["  host      : <HOST_1>", frame, "node <HOST_1> lost"]
