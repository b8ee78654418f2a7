"""Mask secrets (and, on request, identities) in logs and reports before they are shared.

A `Redactor` replaces every access token, key, password and email it recognises with a
stable placeholder (`<HF_TOKEN_1>`; the same secret gets the same placeholder for the
life of the redactor), so a redacted log still reads as a log: you can see that rank 3
and rank 5 used the same token without seeing it. Mode "all" also masks hostnames, IP
addresses and the user names in home paths.

Detectors are rows of data (detect-secrets style): a regex whose named groups say what
to mask and as what, plus an optional filter that lets look-alikes through. Everything
is anchored on a recognisable prefix or context (`hf_`, `AKIA`, `WANDB_API_KEY=`,
`password`), never on "a long hex string", because logs are full of hex that is not
secret: sha256 and md5 sums, git commit ids, UUIDs, pointers, PCI bus ids, NCCL comm ids.
Redaction never adds or removes a line, so line numbers in a redacted log stay valid.

Hosts are found by the shapes launchers print them in (NCCL's `host:pid:tid [dev]`
prefix, torchrun's failure report and socket errors, SLURM node lists and srun and
slurmstepd lines, `on host X`, fully qualified names), then masked wherever else they
appear bare; a machine keeps one placeholder whether named short or fully qualified.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

MODES = ("secrets", "all")

# A placeholder we wrote: never mask it again (a later detector would see `<PASSWORD_1>`
# after `password=` and wrap it a second time).
PLACEHOLDER_RE = re.compile(r"<[A-Z][A-Z0-9_]*_\d+>")

# Values after `password=`/`token:` that are not secrets but words, references or masks.
_NOT_A_VALUE = frozenset(
    {
        "none",
        "null",
        "nil",
        "true",
        "false",
        "required",
        "optional",
        "redacted",
        "hidden",
        "masked",
        "unset",
        "empty",
        "undefined",
        "default",
        "string",
        "secret",
        "password",
        "token",
        "changeme",
    }
)

# Registrable domains of public services: naming them identifies nobody, and a report
# that says "huggingface.co unreachable" must keep saying it.
PUBLIC_DOMAINS = frozenset(
    {
        "github.com",
        "githubusercontent.com",
        "github.io",
        "huggingface.co",
        "hf.co",
        "pytorch.org",
        "python.org",
        "pypi.org",
        "pythonhosted.org",
        "nvidia.com",
        "wandb.ai",
        "wandb.me",
        "anaconda.org",
        "anaconda.com",
        "conda.io",
        "readthedocs.io",
        "google.com",
        "googleapis.com",
        "microsoft.com",
        "docker.io",
        "docker.com",
        "ubuntu.com",
        "debian.org",
        "kernel.org",
        "stackoverflow.com",
        "amazonaws.com",
        "openai.com",
        "anthropic.com",
        "gitlab.com",
        "bitbucket.org",
        "apple.com",
        "cloudflare.com",
        "mozilla.org",
    }
)
# example.com/.org/.net are deliberately absent: they stand in for someone's real domain
# (in docs and in logs people scrub by hand), so a name under them is a private machine.
# Names that are roles, not people or machines: masking every occurrence of them would
# mangle ordinary words ("ubuntu 22.04", "root cause").
_GENERIC_NAMES = frozenset(
    {
        "root",
        "ubuntu",
        "user",
        "admin",
        "runner",
        "shared",
        "home",
        "localhost",
        "local",
        "node",
        "host",
        "master",
        "worker",
        "debian",
        "centos",
        "ec2-user",
        "nobody",
        "guest",
    }
)

# First labels of dotted names that are Python modules or objects (`torchvision.io`).
_CODE_ROOTS = frozenset(
    {
        "torch",
        "torchvision",
        "torchaudio",
        "scipy",
        "skimage",
        "tensorflow",
        "tf",
        "jax",
        "numpy",
        "np",
        "pandas",
        "pd",
        "os",
        "sys",
        "io",
        "transformers",
        "datasets",
        "accelerate",
        "deepspeed",
        "megatron",
        "triton",
        "fsspec",
        "pyarrow",
        "ray",
        "lightning",
        "pl",
        "keras",
        "self",
        "cls",
        "model",
        "args",
        "config",
        "imageio",
        "cv2",
        "PIL",
        "pil",
    }
)

# Dotted names ending like source files are files (`socket.cc`, `ProcessGroupNCCL.cpp`),
# never machines, even where a host could stand.
_CODE_SUFFIXES = (
    ".py",
    ".pyx",
    ".cc",
    ".cpp",
    ".cxx",
    ".c",
    ".h",
    ".hpp",
    ".cu",
    ".cuh",
    ".so",
    ".rs",
    ".go",
    ".java",
    ".js",
    ".ts",
    ".sh",
    ".log",
    ".txt",
    ".json",
    ".yaml",
    ".yml",
    ".toml",
    ".pt",
    ".bin",
    ".safetensors",
)
# What a device is called where `name:number` could look like a host and port.
_DEVICE_NAMES = frozenset({"cuda", "cpu", "mps", "xla", "npu", "xpu", "hpu", "meta", "gpu"})
# Country-code and newer top-level domains: only names of three labels or more under
# them are taken for machines (`ml-login-2.cs.uni-example.de`); two (`model.de`) are too
# easily something else.
_CC_TLDS = (
    "de|uk|fr|nl|ch|at|se|fi|no|dk|it|es|pl|cz|jp|cn|kr|tw|sg|in|ca|au|nz|br|il"
    "|eu|us|info|tech|site|xyz|app|host|systems|science|research"
)

_HOST_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = rf"{_HOST_LABEL}(?:\.{_HOST_LABEL})*"
# One item of a SLURM host list: gpu-node-[01-04,07], gpu[1-2]-ib, node07.
_NODE_ITEM = r"[A-Za-z][A-Za-z0-9-]*(?:\[[0-9,-]+\][A-Za-z0-9-]*)*(?:\.[A-Za-z0-9-]+)*"
_NODE_RANGES = r"\[\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*\]"
_IPV4_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_H16 = r"[0-9A-Fa-f]{1,4}"


@dataclass(frozen=True)
class Detector:
    """One kind of secret: `pattern`'s named groups are masked, each as the kind that
    `groups` maps it to (the rest of the match, e.g. `WANDB_API_KEY=`, is kept).

    `keep(value, text, start)` returns True for a look-alike that must survive.
    `learn` marks names (hosts, users) whose other bare occurrences are masked too.
    `expand(value)` names the hosts a value stands for (a SLURM node list): each is
    learned as a host, and a value that stands for one host is masked as that host.
    """

    name: str
    pattern: re.Pattern[str]
    groups: dict[str, str]
    mode: str = "secrets"
    keep: Callable[[str, str, int], bool] | None = None
    learn: bool = False
    expand: Callable[[str], list[str]] | None = None


def _d(
    name: str,
    regex: str,
    groups: dict[str, str] | None = None,
    *,
    mode: str = "secrets",
    keep: Callable[[str, str, int], bool] | None = None,
    flags: int = 0,
    learn: bool = False,
    expand: Callable[[str], list[str]] | None = None,
) -> Detector:
    return Detector(name, re.compile(regex, flags), groups or {"s": name}, mode, keep, learn, expand)


def _weak_value(value: str, text: str, start: int) -> bool:
    """A `key=value` value that is not a secret: a word, a number, a path, a reference."""
    v = value.strip("'\"")
    if len(v) < 6 or v.lower() in _NOT_A_VALUE or v.isdigit():
        return True
    if v[0] in "<$%{*/~." or v.startswith(("http://", "https://")):
        return True  # <pad>, $HF_TOKEN, %(token)s, {token}, ****, a file path, a URL
    return set(v) <= {"*", "x", "X", "."}  # already masked by the program


def _not_random(value: str, text: str, start: int) -> bool:
    """Random keys mix letters and digits; words joined by dashes do not."""
    tail = value.split("-", 1)[-1]
    return not (re.search(r"\d", tail) and re.search(r"[A-Za-z]", tail))


def _public_or_code(value: str, text: str, start: int) -> bool:
    """Keep public service domains and things that are really dotted code names."""
    low = value.lower().rstrip(".")
    parts = low.split(".")
    if len(parts) >= 2 and ".".join(parts[-2:]) in PUBLIC_DOMAINS:
        return True
    if parts[0] in _CODE_ROOTS or text[max(0, start - 7) : start].endswith(("import ", "from ")):
        return True  # torchvision.io, scipy.io: modules, not machines
    return low in _GENERIC_NAMES or low.replace("-", "").isdigit()


def _host_value(value: str, text: str, start: int) -> bool:
    """Hosts found by context or shape: keep numbers, generic words, device names, file
    names and public domains."""
    if not re.search(r"[A-Za-z]", value) or len(value) < 3:
        return True
    low = value.lower()
    if low in _DEVICE_NAMES or low in _NOT_A_VALUE or low.endswith(_CODE_SUFFIXES):
        return True
    return _public_or_code(value, text, start)


# Words that, before `[0-7]`, name ranks, devices or layers, not machines: such a "list"
# must not be learned, or every `[rank0]:` prefix would be masked as a host.
_INDEXED_WORDS = frozenset(
    {
        "rank",
        "ranks",
        "localrank",
        "gpu",
        "gpus",
        "cuda",
        "device",
        "devices",
        "dev",
        "layer",
        "layers",
        "head",
        "heads",
        "step",
        "steps",
        "epoch",
        "epochs",
        "shard",
        "shards",
        "stage",
        "stages",
        "dim",
        "dims",
        "batch",
        "tp",
        "pp",
        "dp",
        "ep",
        "cp",
        "proc",
        "procs",
        "process",
        "thread",
        "threads",
        "task",
        "tasks",
        "channel",
        "channels",
        "ring",
        "rings",
        "tensor",
        "index",
        "indices",
        "idx",
        "id",
        "ids",
        "range",
        "item",
        "items",
        "slice",
        "block",
        "blocks",
        "expert",
        "experts",
        "worker",
        "workers",
        "cpu",
        "cpus",
        "core",
        "cores",
    }
)


def _not_a_node_list(value: str, text: str, start: int) -> bool:
    """A bare `name[..]` is a node list only with a range in the brackets, or a comma
    after a dashed prefix (`gpu-node-[01-04]`, `gpu-node-[01,03]`); never an index
    (`x[3]`, `a[0,1]`) nor ranks or devices (`rank[0-7]`)."""
    prefix = value.split("[", 1)[0]
    if re.sub(r"[-_]", "", prefix.lower()) in _INDEXED_WORDS:
        return True
    ranged = re.search(r"\[[^\]]*\d-\d", value) is not None
    if not ranged and not (prefix.endswith("-") and "," in value):
        return True
    return _host_value(value, text, start)


MAX_EXPANDED = 4096  # hosts learned from one node list; a bigger list is masked, not learned


def expand_nodelist(value: str) -> list[str]:
    """The host names of a SLURM host list: `gpu-[01-03,07],login1` -> gpu-01, gpu-02,
    gpu-03, gpu-07, login1 (zero padding as written). Empty when it would name more
    than MAX_EXPANDED hosts."""
    items = re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*", value)
    names: list[str] = []
    for item in items:
        parts = re.split(r"\[([^\]]*)\]", item)  # text, ranges, text, ranges, ...
        expanded = [""]
        for i, part in enumerate(parts):
            if i % 2 == 0:
                expanded = [e + part for e in expanded]
                continue
            numbers: list[str] = []
            for r in part.split(","):
                lo, _, hi = r.partition("-")
                if not lo.isdigit() or (hi and not hi.isdigit()):
                    return []
                stop = int(hi) if hi else int(lo)
                if stop - int(lo) > MAX_EXPANDED:
                    return []
                numbers += [f"{n:0{len(lo)}d}" for n in range(int(lo), stop + 1)]
            expanded = [e + n for e in expanded for n in numbers]
            if len(expanded) > MAX_EXPANDED:
                return []
        names += expanded
        if len(names) > MAX_EXPANDED:
            return []
    return names


def host_key(value: str) -> str:
    """What identifies a machine: the first label of a fully qualified name when it looks
    like a machine's (`gpu-node-17` of `gpu-node-17.cluster.example.com`), so the short
    and the long name get one placeholder; otherwise the whole name. Case-insensitive."""
    low = value.lower().rstrip(".")
    first = low.split(".", 1)[0]
    if (
        first != low
        and len(first) >= 3
        and first not in _GENERIC_NAMES
        and re.search(r"[\d-]", first)
        and re.search(r"[a-z]", first)
    ):
        return first
    return low


def _special_ipv4(value: str, text: str, start: int) -> bool:
    """Keep loopback, unspecified and netmask addresses, and version numbers (`==9.1.0.70`)."""
    if value.startswith(("127.", "0.0.0.0", "255.255.")):
        return True
    before = text[max(0, start - 12) : start].lower()
    return "version" in before or before.rstrip().endswith(("==", ">=", "<=", "~=", " v"))


def _special_ipv6(value: str, text: str, start: int) -> bool:
    """Keep loopback and C++/slice look-alikes: a real address has a digit and 2+ groups."""
    groups = [g for g in value.split(":") if g]
    return value in ("::1", "::") or len(groups) < 2 or not re.search(r"\d", value)


def _generic_user(value: str, text: str, start: int) -> bool:
    return value.lower() in _GENERIC_NAMES or PLACEHOLDER_RE.fullmatch(value) is not None


_SEP = r"""["']?\s*[:=]\s*["']?"""  # `KEY=v`, `key: v`, `"key": "v"`, `key = 'v'`
_SECRET_VALUE = r"""[^\s'",;(){}\[\]]{6,}"""

DETECTORS: tuple[Detector, ...] = (
    # --- multi-line blocks first: their bodies are base64 that later rows must not see
    _d(
        "PRIVATE_KEY",
        # a block cut off before its END line (a truncated log) is masked to the end
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?P<s>[\s\S]*?)"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)",
    ),
    # --- tokens with a recognisable prefix
    _d("HF_TOKEN", r"(?<![A-Za-z0-9_])(?P<s>(?:hf_|api_org_)[A-Za-z0-9]{30,})(?![A-Za-z0-9_])"),
    _d(
        "GITHUB_TOKEN",
        r"(?<![A-Za-z0-9_])(?P<s>(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}"
        r"|github_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_])",
    ),
    _d(
        "API_KEY",  # OpenAI (sk-, sk-proj-, sk-svcacct-) and Anthropic (sk-ant-api03-)
        r"(?<![A-Za-z0-9_-])(?P<s>sk-(?:proj-|svcacct-|admin-|ant-(?:api|admin)\d\d-)?"
        r"[A-Za-z0-9_-]{20,})(?![A-Za-z0-9_-])",
        keep=_not_random,
    ),
    _d(
        "AWS_ACCESS_KEY",
        r"(?<![A-Z0-9])(?P<s>(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16})"
        r"(?![A-Z0-9])",
    ),
    _d(
        "AWS_SECRET_KEY",
        r"(?i:aws_?secret_?access_?key|aws_?secret_?key|secret_?access_?key)(?:" + _SEP + r"|\s+)"
        r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    ),
    _d(
        "AWS_SESSION_TOKEN",
        r"(?i:aws_?session_?token|aws_?security_?token)" + _SEP + r"(?P<s>[A-Za-z0-9/+=]{16,})",
    ),
    _d("GOOGLE_API_KEY", r"(?<![A-Za-z0-9_-])(?P<s>AIza[0-9A-Za-z_-]{35})(?![A-Za-z0-9_-])"),
    _d("SLACK_TOKEN", r"(?<![A-Za-z0-9_-])(?P<s>xox[abposr]-[A-Za-z0-9-]{10,})"),
    _d(
        "JWT",
        r"(?<![A-Za-z0-9_-])(?P<s>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}"
        r"\.[A-Za-z0-9_-]{8,})",
    ),
    # --- W&B: 40 hex is only a key where W&B put it (a git commit id is 40 hex too)
    _d(
        "WANDB_API_KEY",
        r"(?:WANDB_API_KEY" + _SEP + r"|wandb login\s+(?:--?[\w-]+(?:=\S+)?\s+)*"
        r"|--wandb[_-]api[_-]key[= ]\s*|wandb\.login\([^)\n]{0,80}?key\s*=\s*[\"'])"
        r"(?P<s>(?:local-)?[A-Za-z0-9_-]{40,})",
    ),
    _d(
        "WANDB_API_KEY",  # wandb: W&B API key is configured: <40 hex> (key from env or netrc)
        r"(?i:\b(?:W&B|wandb)[ _-]?API[ _-]?key)[^\n:=]{0,40}[:=]\s*[\"']?"
        r"(?P<s>(?:local-)?[0-9a-f]{40,})(?![0-9A-Za-z])",
    ),
    _d(
        "WANDB_API_KEY",  # ~/.netrc: `machine api.wandb.ai login user password <40 hex>`
        r"(?<![\w-])password\s+(?P<s>(?:local-)?[0-9a-f]{40})(?![0-9A-Za-z])",
    ),
    # --- passwords and credentials by context
    _d(
        "PASSWORD",  # scheme://user:pass@host (keeps the user and the host)
        r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@'\"<>]*:(?P<s>[^\s@/'\"<>]+)@(?=[\w\[.-])",
        keep=lambda v, t, s: PLACEHOLDER_RE.fullmatch(v) is not None,
    ),
    _d("BEARER_TOKEN", r"\b(?i:bearer)\s+(?P<s>[A-Za-z0-9._~+/-]{16,}=*)"),
    _d(
        "AUTH_TOKEN",
        r"(?i:authorization)" + _SEP + r"(?i:basic|token|digest)\s+"
        r"(?P<s>[A-Za-z0-9+/=._-]{8,})",
    ),
    _d("PASSWORD", r"(?m)^\s*password\s+(?P<s>\S{4,})\s*$"),  # netrc, one field per line
    _d(
        "SECRET",  # PREFIX_TOKEN=, HF_TOKEN: ..., "api_key": "...", password = '...'
        r"(?<![A-Za-z0-9])(?P<k>(?:[A-Z][A-Z0-9]*_)*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY"
        r"|ACCESS_?KEY|SECRET_?KEY|PRIVATE_?KEY|AUTH_?KEY|CREDENTIALS?)"
        r"|(?<![A-Za-z0-9_])(?:password|passwd|secret|api_?key|apikey|access_?token|auth_?token"
        r"|secret_?key|client_?secret|refresh_?token|token)(?![A-Za-z0-9]))"
        + _SEP
        + r"(?P<s>"
        + _SECRET_VALUE
        + ")",
        keep=_weak_value,
    ),
    _d(
        "SECRET",  # --hf-token X, --token=X, --password X, --api-key X
        r"(?<![\w-])--(?:[a-z0-9]+-)*(?:token|password|passwd|secret|api-?key)[= ](?P<s>"
        + _SECRET_VALUE
        + ")",
        keep=_weak_value,
    ),
    _d(
        "EMAIL",
        r"(?<![\w.+%-])(?P<s>(?!git@)[A-Za-z0-9][A-Za-z0-9._%+-]*@"
        + _HOST_LABEL
        + r"(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24})(?![A-Za-z0-9-])",
    ),
    # --- mode "all": who and where
    _d(
        "USER",
        r"(?:/home/|/homes/|/[Uu]sers/|[A-Za-z]:\\Users\\)(?P<s>[A-Za-z0-9._-]+)",
        mode="all",
        keep=_generic_user,
        learn=True,
    ),
    _d(
        "HOST",  # a shell prompt: alice@gpu-node-17:~$
        r"(?<![\w.-])(?P<u>[a-z_][a-z0-9_-]{0,31})@(?P<s>"
        + _HOST_LABEL
        + r"(?:\."
        + _HOST_LABEL
        + r")*):[~/]",
        {"u": "USER", "s": "HOST"},
        mode="all",
        keep=_host_value,
        learn=True,
    ),
    _d(
        "IP",
        r"(?<![\w.])(?P<s>(?:" + _IPV4_OCTET + r"\.){3}" + _IPV4_OCTET + r")(?![\w]|\.\d)",
        mode="all",
        keep=_special_ipv4,
    ),
    _d(
        "IP",
        r"(?<![\w:.])(?P<s>(?:"
        + _H16
        + r":){7}"
        + _H16
        + r"|(?:"
        + _H16
        + r":){1,6}(?::"
        + _H16
        + r"){1,6}|::"
        + _H16
        + r"(?::"
        + _H16
        + r"){0,5})(?![\w:]|\.\d)",
        mode="all",
        keep=_special_ipv6,
    ),
    # SLURM host lists, by context (SLURM_JOB_NODELIST=, NodeList=, BatchHost=)
    # and, bare, by their bracket shape: one placeholder for the list, each host learned
    _d(
        "NODELIST",
        r"(?:\b(?:SLURM_(?:JOB_|STEP_)?NODELIST|SLURM_(?:STEP_)?NODENAME|SLURMD_NODENAME"
        r"|SLURM_SUBMIT_HOST|SLURM_LAUNCH_NODE_IPADDR|(?:Req|Exc|Sched)?NodeList|BatchHost"
        r"|nodelist|node_?list)" + _SEP + r")"
        r"(?P<s>" + _NODE_ITEM + r"(?:," + _NODE_ITEM + r")*)(?![\w\[-])",
        mode="all",
        keep=_host_value,
        expand=expand_nodelist,
    ),
    _d(
        "NODELIST",
        r"(?<![\w.\[-])(?P<s>[A-Za-z][A-Za-z0-9-]*"
        + _NODE_RANGES
        + r"[A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*)(?![\w\[-])",
        mode="all",
        keep=_not_a_node_list,
        expand=expand_nodelist,
    ),
    _d(
        "HOST",  # srun: error: gpu-node-03: task 3: Exited ...; srun: error: Node failure on X
        r"\bsrun: error: (?:Node failure on )?(?P<s>" + _HOST + r")(?=: tasks? \d|\s*$)",
        mode="all",
        keep=_host_value,
        learn=True,
        flags=re.M,
    ),
    _d(
        "HOST",  # slurmstepd: *** JOB 1234 ON gpu-node-01 CANCELLED AT ...
        r"\*\*\* (?:JOB|STEP) [\w.+-]+ ON (?P<s>" + _HOST + r") CANCELLED",
        mode="all",
        keep=_host_value,
        learn=True,
    ),
    _d(
        "HOST",  # named by context: host: X, hostname=X, MASTER_ADDR=X, rdzv_endpoint=X:port
        r"(?i:\b(?:host(?:_?name)?|node_?name|master_?addr(?:ess)?|rdzv_?endpoint|local_?addr))"
        + _SEP
        + r"(?P<s>"
        + _HOST
        + r")(?![\w-])",
        mode="all",
        keep=_host_value,
        learn=True,
    ),
    _d(
        "HOST",
        r"--(?:master[_-]addr|rdzv[_-]endpoint|hostname)[= ](?P<s>" + _HOST + r")(?![\w-])",
        mode="all",
        keep=_host_value,
        learn=True,
    ),
    _d(
        "HOST",  # NCCL's line prefix, host:pid:tid [cudaDev], before INFO or a source file
        r"(?m)(?:^|[\]:]\s?|\s)(?P<s>[A-Za-z][A-Za-z0-9.-]*):\d+:\d+ \[\d+\] ",
        mode="all",
        keep=_host_value,
        learn=True,
    ),
    _d(
        "HOST",  # c10d: failed to connect to [gpu-node-01]:29500 / to (gpu-node-01, 29500)
        r"\bconnect(?:ing|ed)? to (?:\[(?P<s>" + _HOST + r")\]:\d{1,5}|\((?P<t>" + _HOST + r"), \d{1,5}\))",
        {"s": "HOST", "t": "HOST"},
        mode="all",
        keep=_host_value,
        learn=True,
    ),
    _d(
        "HOST",
        r"\b(?:on|from|to) (?:host|node|machine) (?P<s>" + _HOST + r")(?![\w-])",
        mode="all",
        keep=_host_value,
        learn=True,
    ),
    _d(
        "HOST",  # fully qualified names under common or internal suffixes
        r"(?<![\w.-])(?P<s>(?:" + _HOST_LABEL + r"\.)+(?:com|net|org|io|ai|dev|edu|gov|cloud"
        r"|internal|lan|corp|intra|cluster\.local))(?![\w-]|\.\w)",
        mode="all",
        keep=_public_or_code,
        learn=True,
    ),
    _d(
        "HOST",  # ... and under a country's (three labels or more: see _CC_TLDS)
        r"(?<![\w.-])(?P<s>(?:" + _HOST_LABEL + r"\.){2,}(?:" + _CC_TLDS + r"))(?![\w-]|\.\w)",
        mode="all",
        keep=_host_value,
        learn=True,
    ),
)


@dataclass
class Redactor:
    """Masks secrets in text with stable placeholders.

    mode "secrets": tokens, keys, passwords, emails. mode "all": also hostnames, IP
    addresses and user names in home paths. One instance keeps its placeholders across
    calls, so a log and its evidence snapshot redacted by one instance agree.
    """

    mode: str = "secrets"
    _seen: dict[str, str] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=dict)
    _learned: dict[str, str] = field(default_factory=dict)  # name -> kind, masked where bare
    _hosts: dict[str, str] = field(default_factory=dict)  # host_key -> placeholder
    _learned_re: re.Pattern[str] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"redaction mode must be one of {MODES}, not {self.mode!r}")

    @property
    def replacements(self) -> dict[str, str]:
        """Each masked value and its placeholder (for a summary; never print the values)."""
        return dict(self._seen)

    def placeholder(self, kind: str, value: str) -> str:
        """The placeholder for `value`: the same value always gets the same one, and a
        host gets one for its short and its fully qualified name (see `host_key`)."""
        ph = self._seen.get(value)
        if ph is not None:
            return ph
        key = host_key(value) if kind == "HOST" else None
        if key is not None and key in self._hosts:
            ph = self._hosts[key]
        else:
            n = self._counts.get(kind, 0) + 1
            self._counts[kind] = n
            ph = f"<{kind}_{n}>"
            if key is not None:
                self._hosts[key] = ph
        self._seen[value] = ph
        return ph

    def redact(self, text: str) -> str:
        """Return `text` with every recognised secret replaced by its placeholder."""
        for det in DETECTORS:
            if det.mode == "all" and self.mode != "all":
                continue
            text = det.pattern.sub(lambda m, d=det: self._replace(m, d), text)  # type: ignore[misc]
        if self._learned:
            text = self._replace_learned(text)
        return text

    def redact_data(self, obj: T) -> T:
        """Redact every string inside `obj`: dataclasses (a `Report`), tuples, lists and
        dicts are rebuilt; other values pass unchanged. Views render the redacted data
        and escape placeholders like any text, so XML and Markdown stay well-formed.

        Every string is read once before any is masked: a host that one string names by
        its shape is then masked in an earlier string that mentions it bare."""
        for text in _strings(obj):
            self.redact(text)  # learn names and number placeholders in reading order
        return self._redact_obj(obj)

    def _redact_obj(self, obj: T) -> T:
        if isinstance(obj, str):
            return self.redact(obj)  # type: ignore[return-value]
        if isinstance(obj, tuple | list):
            return type(obj)(self._redact_obj(x) for x in obj)  # type: ignore[return-value]
        if isinstance(obj, dict):
            return {
                self._redact_obj(k): self._redact_obj(v)  # type: ignore[return-value]
                for k, v in obj.items()
            }
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            changes = {
                f.name: self._redact_obj(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.init
            }
            return dataclasses.replace(obj, **changes)  # type: ignore[return-value]
        return obj

    def redact_bytes(self, data: bytes) -> bytes:
        """Redact bytes that may not be valid UTF-8: undecodable bytes pass unchanged."""
        text = data.decode("utf-8", "surrogateescape")
        return self.redact(text).encode("utf-8", "surrogateescape")

    def _replace(self, m: re.Match[str], det: Detector) -> str:
        text = m.string
        spans: list[tuple[int, int, str]] = []
        for group, kind in det.groups.items():
            value = m.group(group)
            if not value or PLACEHOLDER_RE.fullmatch(value):
                continue
            if det.keep is not None and det.keep(value, text, m.start(group)):
                continue
            if group == "s" and det.name == "SECRET" and "k" in m.groupdict():
                kind = _secret_kind(m.group("k"))
            if det.expand is not None:
                hosts = det.expand(value)
                for host in hosts:
                    self._learn(host, "HOST")
                if hosts == [value]:  # a "list" of one host is that host
                    kind = "HOST"
            ph = self.placeholder(kind, value)
            if det.name == "PRIVATE_KEY":
                ph = _keep_newlines(value, ph)
            elif det.learn:
                self._learn(value, kind)
                if kind == "HOST" and host_key(value) != value.lower().rstrip("."):
                    self._learn(host_key(value), kind)  # the short name, said bare
            spans.append((m.start(group) - m.start(), m.end(group) - m.start(), ph))
        if not spans:
            return m.group(0)
        out = m.group(0)
        for start, end, ph in sorted(spans, reverse=True):
            out = out[:start] + ph + out[end:]
        return out

    def _learn(self, name: str, kind: str) -> None:
        """Mask `name` wherever else it appears bare (generic words excepted)."""
        if len(name) >= 3 and name.lower() not in _GENERIC_NAMES and not PLACEHOLDER_RE.fullmatch(name):
            self._learned.setdefault(name, kind)
            self._learned_re = None

    def _replace_learned(self, text: str) -> str:
        """Mask other bare occurrences of hosts and users named somewhere by context."""
        pat = self._learned_re
        if pat is None:
            names = sorted(self._learned, key=len, reverse=True)
            pat = re.compile(r"(?<![\w.-])(?:" + "|".join(re.escape(n) for n in names) + r")(?![\w-])")
            self._learned_re = pat
        return pat.sub(lambda m: self.placeholder(self._learned[m.group(0)], m.group(0)), text)


def _strings(obj: object) -> Iterator[str]:
    """Every string inside `obj`, in the order `Redactor.redact_data` visits them."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, tuple | list):
        for x in obj:
            yield from _strings(x)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(k)
            yield from _strings(v)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            if f.init:
                yield from _strings(getattr(obj, f.name))


def _secret_kind(key: str) -> str:
    k = key.upper()
    if "PASS" in k:
        return "PASSWORD"
    if "TOKEN" in k:
        return "TOKEN"
    return "SECRET"


def _keep_newlines(value: str, ph: str) -> str:
    """A masked block keeps its line count, so later line numbers stay right."""
    n = value.count("\n")
    return ph if n == 0 else "\n" + ph + "\n" * (n - 1)


def redact(text: str, mode: str = "secrets") -> str:
    """Convenience: redact one text with a fresh `Redactor`."""
    return Redactor(mode=mode).redact(text)
