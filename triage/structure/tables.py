"""Data tables for the structure stage: phase markers, metric patterns, end markers.

Each is an ordered list of rows; a new training framework is a new row, not a branch.
"""

from __future__ import annotations

import re

# (phase, its markers). A marker is (literals, regex): every match of the regex holds one
# of the literals (case as written), so a line with none of a phase's literals cannot be
# in that phase and most lines of a log skip the phase regexes. A phase's regex is its
# markers' alternation; the last phase seen is the log's phase.
Marker = tuple[tuple[str, ...], str]


def _lit(text: str) -> Marker:
    """A marker that is a plain literal (no regex metacharacter in it)."""
    return (text,), text


PHASE_MARKERS: list[tuple[str, tuple[Marker, ...]]] = [
    (
        "distributed-init",
        (
            _lit("init_process_group"),
            (("process group",), r"Initializing (?:the )?process group"),
            (("endezvous",), r"[Rr]endezvous"),
            _lit("MASTER_ADDR"),
            (
                ("NCCL INFO Bootstrap", "NCCL INFO NET/", "NCCL INFO cudaDriverVersion", "NCCL INFO comm 0x"),
                r"NCCL INFO (?:Bootstrap|NET/|cudaDriverVersion|comm 0x)",
            ),
            _lit("Added key: store_based_barrier"),
        ),
    ),
    # a training checkpoint read back (resume, Megatron/DCP load); HF's "Loading checkpoint
    # shards" is model loading
    (
        "checkpoint-loading",
        (
            (
                ("checkpoint",),
                r"[Ll]oading (?:the )?(?:distributed |sharded |latest )?checkpoint\b(?! shards)",
            ),
            (("checkpoint",), r"[Rr]esum(?:ing|e) (?:training )?from (?:the )?(?:latest )?checkpoint"),
            (("load_checkpoint",), r"\bload_checkpoint\b"),
        ),
    ),
    (
        "model-loading",
        (
            (("Loading ",), r"Loading (?:\d+ )?(?:target |draft |base |pretrained )?models?\b"),
            _lit("Loading checkpoint shards"),
            (("Target ",), r"Target \d+ on \S+"),
            _lit("from_pretrained"),
            _lit("Loading weights"),
            (("Instantiating ",), r"Instantiating \w+ model"),
            _lit("Loading model"),
            _lit("load_state_dict"),
            _lit("Building model"),
        ),
    ),
    (
        "data-loading",
        (
            (("Loading ",), r"Loading (?:the )?(?:dataset|data)"),
            (("Tokeniz",), r"Tokeniz(?:ing|ation)"),
            (("Map",), r"Map(?: \(num_proc=\d+\))?:"),
            (("Generating ",), r"Generating (?:train|test) split"),
            _lit("Building dataset"),
        ),
    ),
    (
        "compiling",
        (
            (("Compiling",), r"Compiling\b"),
            (("torch.compile",), r"torch\.compile"),
            (("torch._dynamo",), r"torch\._dynamo"),
            _lit("inductor"),
            (("triton.compile",), r"triton\.compile"),
            _lit("Compile time"),
        ),
    ),
    (
        "checkpoint-saving",
        (
            (("checkpoint",), r"[Ss]aving (?:a )?(?:full |model |sharded |distributed )?checkpoint"),
            _lit("Saving model"),
            _lit("save_pretrained"),
            _lit("Saving state"),
            _lit("Writing checkpoint"),
            _lit("checkpoint saved"),
            _lit("Saved checkpoint"),
        ),
    ),
    (
        "evaluation",
        (
            (("***** Running Evaluation",), r"\*\*\*\*\* Running Evaluation"),
            (("Evaluating",), r"Evaluating\b"),
            (("eval",), r"\beval(?:uation)? (?:step|loss)"),
        ),
    ),
    (
        "training",
        (
            (("step",), r"\bstep[ =:]+\d+"),
            (("iter",), r"\biter(?:ation)?[ =:]+\d+"),
            (("{'loss': ",), r"\{'loss': "),
            (("epoch",), r"\bepoch[ =:]+\d+"),
            (("***** Running training",), r"\*\*\*\*\* Running training"),
            (("<",), r"\d+/\d+ \[(?:\d+:)?\d+:\d+<"),
        ),
    ),
]

# (phase, regex searched in a line): each phase's markers in one alternation.
PHASES: list[tuple[str, re.Pattern[str]]] = [
    (name, re.compile("|".join(rx for _lits, rx in markers))) for name, markers in PHASE_MARKERS
]

# All phases in one alternation: one search finds the leftmost marker; the group name is
# the phase (the first in table order where several match there).
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
    r"|^Ran \d+ tests? in [\d.]+s$|^OK(?: \([\w ,=]+\))?$"
    # what an evaluation, an export or a tracker says as the run ends: the results
    # written, the model saved, wandb's files synced, Lightning's max_time stop
    r"|^(?:(?-i:[A-Z])\w* )?results? (?:(?:were|was) )?(?:written|saved) to\b|^(?:final )?model saved to\b"
    r"|\bSynced \d+ W&B file|Signaling Trainer to stop)"
    # Lightning's own end of fit: "`Trainer.fit` stopped: `max_epochs=1` reached." (it opens with
    # a backtick, so outside the word-boundary group above)
    r"|`Trainer\.fit` stopped: `max_(?:epochs|steps)=\d+` reached"
)

# What torch (2.4+) prints at interpreter exit when the process group was not destroyed, once
# per rank: it says nothing about how the run ended, so it does not hide the line before it
EXIT_NOISE_RE = re.compile(
    r"process group has NOT been destroyed|destroy_process_group\(\) was not called before program exit"
)

# a progress bar that reached its end: "100%|██████████| 782/782 [...]"
BAR_DONE_RE = re.compile(r"100%\|[^|]*\|\s*(\d+)/\1\b")

ERROR_END_RE = re.compile(
    r"\bKilled\b|Segmentation fault|core dumped|Aborted|Bus error|ChildFailedError"
    r"|exitcode\s*:\s*-?\d+|FAILED|Terminated|srun: error|CANCELLED|DUE TO TIME LIMIT"
)

TRACEBACK_START = "Traceback (most recent call last):"
# IPython/Jupyter's traceback: "ImportError      Traceback (most recent call last)" opens
# it; each frame quotes its source, numbered: "----> 3 model = ...", "   2705     ..."
IPYTHON_TB_RE = re.compile(r"^\w[\w.]*\s{2,}Traceback \(most recent call last\)")
IPYTHON_SOURCE_RE = re.compile(r"^(?:-+> ?| +)\d+ ")
IPYTHON_EXCEPTION_RE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning)\b")
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

# Python's unraisable hook heads the traceback of an exception it swallowed: "Exception ignored
# in: <finalize object at 0x...; dead>", "Exception ignored in atexit callback: <function ...>",
# "Exception ignored on calling ctypes callback function: ...", 3.13's "Exception ignored while ..."
UNRAISABLE_RE = re.compile(r"^Exception ignored (?:in\b|on\b|while\b)")

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
# deepspeed/launcher/launch.py's sigkill_handler: "[...] ['/usr/bin/python', '-u',
# 'train.py', '--local_rank=3', ...] exits with return code = -9"
DEEPSPEED_EXIT_RE = re.compile(r"\] exits with return code = (?P<code>-?\d+)\s*$")
DEEPSPEED_LOCAL_RANK_RE = re.compile(r"'--local_rank=(?P<lr>\d+)'")
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
