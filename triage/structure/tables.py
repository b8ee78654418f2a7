"""Data tables for the structure stage: phase markers, metric patterns, end markers.

Each is an ordered list of rows; a new training framework is a new row, not a branch.
"""

from __future__ import annotations

import re

# (phase, regex searched in a line). The last phase seen is the log's phase.
PHASES: list[tuple[str, re.Pattern[str]]] = [
    (
        "distributed-init",
        re.compile(
            r"init_process_group|Initializing (?:the )?process group|[Rr]endezvous|MASTER_ADDR"
            r"|NCCL INFO (?:Bootstrap|NET/|cudaDriverVersion|comm 0x)|Added key: store_based_barrier"
        ),
    ),
    # a training checkpoint read back (resume, Megatron/DCP load); HF's "Loading checkpoint
    # shards" is model loading
    (
        "checkpoint-loading",
        re.compile(
            r"[Ll]oading (?:the )?(?:distributed |sharded |latest )?checkpoint\b(?! shards)"
            r"|[Rr]esum(?:ing|e) (?:training )?from (?:the )?(?:latest )?checkpoint|\bload_checkpoint\b"
        ),
    ),
    (
        "model-loading",
        re.compile(
            r"Loading (?:\d+ )?(?:target |draft |base |pretrained )?models?\b|Loading checkpoint shards"
            r"|Target \d+ on \S+|from_pretrained|Loading weights|Instantiating \w+ model"
            r"|Loading model|load_state_dict|Building model"
        ),
    ),
    (
        "data-loading",
        re.compile(
            r"Loading (?:the )?(?:dataset|data)|Tokeniz(?:ing|ation)|Map(?: \(num_proc=\d+\))?:"
            r"|Generating (?:train|test) split|Building dataset"
        ),
    ),
    (
        "compiling",
        re.compile(r"Compiling\b|torch\.compile|torch\._dynamo|inductor|triton\.compile|Compile time"),
    ),
    (
        "checkpoint-saving",
        re.compile(
            r"[Ss]aving (?:a )?(?:full |model |sharded |distributed )?checkpoint|Saving model|save_pretrained"
            r"|Saving state|Writing checkpoint|checkpoint saved|Saved checkpoint"
        ),
    ),
    ("evaluation", re.compile(r"\*\*\*\*\* Running Evaluation|Evaluating\b|\beval(?:uation)? (?:step|loss)")),
    (
        "training",
        re.compile(
            r"\bstep[ =:]+\d+|\biter(?:ation)?[ =:]+\d+|\{'loss': |\bepoch[ =:]+\d+"
            r"|\*\*\*\*\* Running training|\d+/\d+ \[(?:\d+:)?\d+:\d+<"
        ),
    ),
]

# All phases in one alternation: one search per line; the group name is the phase.
PHASES_ANY = re.compile("|".join(f"(?P<{name.replace('-', '_')}>{rx.pattern})" for name, rx in PHASES))

STEP_RE = re.compile(r"\b(?:step|iter(?:ation)?|global_step)[\s=:]+(\d+)", re.IGNORECASE)
LOSS_RE = re.compile(
    # transformers 5.x logs values as strings: {'loss': '5.556', ...}
    r"""(?:\b|')loss(?:'|")?(?:\s*[=:]\s*|\s+(?:is\s+)?)['"]?(?:tensor\()?"""
    r"""([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))\b""",
    re.IGNORECASE,
)
GRAD_NORM_RE = re.compile(
    r"grad_?norm(?:'|\")?\s*[=:]\s*([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))", re.IGNORECASE
)
TOKS_RE = re.compile(r"(?:tok/s|tokens/s|tokens_per_sec(?:ond)?|tok_per_s)\s*[=:]?\s*([\d.]+)", re.IGNORECASE)

CLEAN_EXIT_RE = re.compile(
    r"(?i)\b(?:training (?:is )?(?:complete|completed|finished|done)|finished training"
    r"|all done|run (?:finished|completed)|exit(?:ed)?(?: with)? (?:code|status)[ =:]*0\b"
    r"|^done\b|train_runtime|Training completed|=+ \d+ passed\b|\bSynced \S+:|\(success\)\.?$"
    r"|^Ran \d+ tests? in [\d.]+s$|^OK(?: \([\w ,=]+\))?$)"
)

# a progress bar that reached its end: "100%|██████████| 782/782 [...]"
BAR_DONE_RE = re.compile(r"100%\|[^|]*\|\s*(\d+)/\1\b")

ERROR_END_RE = re.compile(
    r"\bKilled\b|Segmentation fault|core dumped|Aborted|Bus error|ChildFailedError"
    r"|exitcode\s*:\s*-?\d+|FAILED|Terminated|srun: error|CANCELLED|DUE TO TIME LIMIT"
)

TRACEBACK_START = "Traceback (most recent call last):"
# torchrun's report of a child that wrote an error file: "  traceback : Traceback (most ..."
REPORT_TRACEBACK_RE = re.compile(r"traceback\s*:\s*Traceback \(most recent call last\):")
CHAIN_MARKERS = {
    "During handling of the above exception, another exception occurred:": "during-handling",
    "The above exception was the direct cause of the following exception:": "direct-cause",
}

# '  File "/x/torch/serialization.py", line 328, in save' (Python's frame line)
FRAME_RE = re.compile(r'File "[^"]+", line \d+, in \S')

# "torch.OutOfMemoryError: CUDA out of memory", "ValueError", "KeyError: 'x'"
EXC_LINE_RE = re.compile(r"^(?P<type>(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*)(?::\s?(?P<msg>.*))?$")
# An exception mentioned on a line without its traceback (foreign prefixes tolerated).
BARE_EXC_RE = re.compile(
    r"(?:^|[\s:\]>|])(?P<type>(?:[a-z_][\w]*\.)*(?:[A-Z]\w*(?:Error|Exception)|KeyboardInterrupt"
    r"|SystemExit|ChildFailedError))(?::(?:\s(?P<msg>.*))?)?$"
)

# Exceptions that only carry another one (a launcher's report of a child that failed, a
# worker's error re-raised in the parent, a signal turned into an exception): never the
# root error of a log when the error they carry is in it too.
WRAPPER_TYPE_RE = re.compile(
    r"(?:^|\.)(?:ChildFailedError|ProcessRaisedException|ProcessExitedException|CalledProcessError"
    r"|SignalException|SystemExit|BrokenProcessPool)$"
)

CPP_RAISED_RE = re.compile(r"Exception raised from (?P<where>\S+) at (?P<file>[^\s:]+):(?P<line>\d+)")
TERMINATE_RE = re.compile(r"terminate called after throwing an instance of '(?P<type>[^']+)'")
WHAT_RE = re.compile(r"^\s*what\(\):\s+(?P<msg>.*)")

CHILD_EXIT_RE = re.compile(
    r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<lr>\d+) \(pid: (?P<pid>\d+)\)"
)
TORCHRUN_FIELD_RE = re.compile(
    r"^\s*(?P<key>time|host|rank|exitcode|error_file|traceback)\s*:\s?(?P<val>.*)$"
)

# Literals that make a line worth structuring on the fast path (triage.ingest.scan):
# the windows around them keep tracebacks, C++ traces and torchrun reports whole.
STRUCTURE_LITERALS = (
    "Traceback (most recent call last)",
    "Error",
    "Exception",
    "Root Cause (first observed",
    "exitcode",
    "Exception raised from",
    "terminate called",
    "Killed",
    "Interrupt",
    "During handling of the above",
    "direct cause of the following",
    "what():",
)
