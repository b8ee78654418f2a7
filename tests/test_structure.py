"""structure: tracebacks with chains, torchrun reports, C++ traces, phases, end state."""

from __future__ import annotations

from triage.engine import Analysis, get_rules
from triage.ingest.normalize import SourceState, normalize
from triage.ingest.reader import split_lines
from triage.model import Line, SourceInfo
from triage.structure import Structurer


def structure(text: str):
    s = Structurer()
    state = SourceState()
    n = 0
    seq = 0
    complete = True
    for raw in split_lines([text.encode()]):
        n, complete = raw.lineno, raw.complete
        for p in normalize(raw.data, state):
            seq += 1
            s.feed(Line("t.log", raw.lineno, p.text, p.rank, seq, p.ts))
    return s.finish([SourceInfo("t.log", n, (), not complete, not complete)])


CHAIN = """Traceback (most recent call last):
  File "a.py", line 3, in load
    open(p)
FileNotFoundError: [Errno 2] No such file or directory: 'ckpt.pt'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "a.py", line 9, in <module>
    load()
RuntimeError: could not load the checkpoint
"""


def test_chained_traceback():
    st = structure(CHAIN)
    assert [(e.short_type, e.chain_index, e.chained_as) for e in st.exceptions] == [
        ("FileNotFoundError", 0, None),
        ("RuntimeError", 1, "during-handling"),
    ]
    assert st.exceptions[0].frames == ('File "a.py", line 3, in load',)
    assert st.end_state.kind == "traceback"


def test_a_deep_traceback_keeps_its_outermost_frame():
    """Only the innermost eight frames are kept, and the outermost one beside them: where a
    traceback starts (a DataLoader worker's loop) is what some rules read."""
    frames = "".join(f'  File "m{i}.py", line {i}, in f{i}\n    f{i + 1}()\n' for i in range(12))
    st = structure("Traceback (most recent call last):\n" + frames + "ValueError: deep\n")
    (e,) = st.exceptions
    assert len(e.frames) == 8 and e.first_frame == 'File "m0.py", line 0, in f0'
    assert e.all_kept_frames[0] == e.first_frame and e.all_kept_frames[1:] == e.frames


def test_multiline_exception_message_is_kept():
    text = (
        'Traceback (most recent call last):\n  File "x.py", line 1, in f\n'
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n\nnext\n"
    )
    st = structure(text)
    assert "CUDA_LAUNCH_BLOCKING" in st.exceptions[0].message


def test_interleaved_ranks_keep_separate_tracebacks():
    text = (
        "\n".join(
            [
                "[rank0]: Traceback (most recent call last):",
                "[rank1]: Traceback (most recent call last):",
                '[rank0]:   File "t.py", line 1, in <module>',
                '[rank1]:   File "t.py", line 2, in <module>',
                "[rank1]: KeyError: 'b'",
                "[rank0]: ValueError: a",
            ]
        )
        + "\n"
    )
    st = structure(text)
    assert sorted((e.short_type, e.line.rank) for e in st.exceptions) == [("KeyError", 1), ("ValueError", 0)]


TORCHRUN = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-29_17:32:30
  host      : localhost
  rank      : 5 (local_rank: 5)
  exitcode  : -9 (pid: 24243)  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 24243
============================================================
"""


def test_torchrun_report():
    st = structure(TORCHRUN)
    ev = [e for e in st.events if e.kind == "torchrun-failure"]
    assert len(ev) == 1
    assert ev[0].data["root_rank"] == 5
    assert ev[0].data["exitcode"] == -9
    assert ev[0].data["signal"] == "SIGKILL"


def test_old_torchrun_exitcode_without_signal_name():
    st = structure(
        TORCHRUN.replace("  (SIGKILL)", "").replace(
            "traceback : Signal 9 (SIGKILL) received by PID 24243", "traceback : <N/A>"
        )
    )
    ev = [e for e in st.events if e.kind == "torchrun-failure"][0]
    assert ev.data["signal"] == "SIGKILL"  # derived from the negative exit code


def test_cpp_exception_trace():
    text = (
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "  what():  [PG 0 Rank 3] Process group watchdog thread terminated with exception\n"
        "Exception raised from ncclCommWatchdog at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1603 (most recent call first):\n"
    )
    st = structure(text)
    kinds = [e.kind for e in st.events]
    assert "cpp-terminate" in kinds and "cpp-exception" in kinds
    cpp = [e for e in st.events if e.kind == "cpp-exception"][0]
    assert cpp.data["file"].endswith("ProcessGroupNCCL.cpp") and cpp.data["line"] == 1603


def test_end_states():
    assert structure("Loading 5 target models...\nTarget 0 on cuda:0...\nT").end_state.kind == "cut-mid-line"
    st = structure("Loading 5 target models...\nTarget 0 on cuda:0...\nT")
    assert st.end_state.last_phase == "model-loading"
    assert structure("step 1 loss 2.0\nstep 2 loss 1.9\n").end_state.kind == "no-terminal-event"
    assert structure("step 1 loss 2.0\nTraining completed.\n").end_state.kind == "clean-exit"
    assert structure("step 1 loss 2.0\nKilled\n").end_state.kind == "error"
    assert structure("").end_state.kind == "empty"


def test_ranks_teardown_after_a_finished_run_is_a_clean_exit():
    """Each rank says it finished and prints its teardown warning, the ranks' lines mixed:
    the clean exit is more than five lines from the end of the log but among its rank's
    own last lines, with nothing like an error after it."""
    warn = "[W1129 23:59:0{r}.5 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed"
    done = [f"[rank{r}]: Training completed." for r in range(4)]
    warns = [f"[rank{r}]:" + warn.format(r=r) for r in range(4)] * 2
    text = "\n".join(["[rank0]: step 1 loss 2.0", *done, *warns]) + "\n"
    assert structure(text).end_state.kind == "clean-exit"
    for bad in ("[rank3]: Killed", "[rank2]: Segmentation fault (core dumped)"):
        assert structure(text + bad + "\n").end_state.kind == "error"
    crash = text + '[rank1]: Traceback (most recent call last):\n[rank1]:   File "t.py", line 9, in f\n'
    crash += "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert structure(crash).end_state.kind != "clean-exit"
    one_rank = "\n".join(["step 1 loss 2.0", "Training completed.", *(["still going"] * 6)]) + "\n"
    assert structure(one_rank).end_state.kind == "no-terminal-event"  # one stream: the last 5 lines


def test_metrics():
    st = structure("step 1 loss 2.5 acc 0.1 tok/s 1000\nstep 2 loss nan acc 0.1 tok/s 900\n")
    assert st.metrics["steps"] == 2
    assert st.metrics["loss_first"] == 2.5
    assert st.metrics["nonfinite_loss"] == 1
    assert st.metrics["toks_last"] == 900.0


def test_analysis_streaming_api():
    a = Analysis(get_rules())
    a.feed(Line("x", 1, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB", None, 1))
    rep = a.report([SourceInfo("x", 1)])
    assert rep.top is not None and rep.top.signature == "cuda-oom"


def test_stall_event_from_step_timestamps():
    import datetime

    t = datetime.datetime(2026, 11, 29, 12, 0, 0)
    lines = [f"{(t + datetime.timedelta(seconds=2 * i)).isoformat()} step {i} loss 2.0" for i in range(1, 30)]
    lines.append(f"{(t + datetime.timedelta(seconds=60 + 1800)).isoformat()} heartbeat: still alive")
    st = structure("\n".join(lines) + "\n")
    stalls = [e for e in st.events if e.kind == "stall"]
    assert len(stalls) == 1
    assert stalls[0].data["step_interval_s"] == 2.0
    assert stalls[0].data["silent_s"] >= 1800
    # the same run without the silence has no stall
    assert not [e for e in structure("\n".join(lines[:-1]) + "\n").events if e.kind == "stall"]


def test_clock_prefix_gives_a_time_of_day():
    from triage.ingest.normalize import SourceState, normalize

    p = next(iter(normalize(b"[14:22:10] heartbeat: step=1891", SourceState())))
    assert p.text == "heartbeat: step=1891" and p.ts is not None
    assert p.ts % 86400 == 14 * 3600 + 22 * 60 + 10


def test_stall_from_a_step_number_that_does_not_move():
    lines = [
        f"[1{h}:{m:02d}:00] heartbeat: step=1891 elapsed_since_last_step={h * 3600 + m * 60}s"
        for h in range(0, 3)
        for m in range(0, 60, 20)
    ]
    st = structure("\n".join(lines) + "\n")
    stalls = [e for e in st.events if e.kind == "stall"]
    assert stalls and stalls[0].data["last_step"] == 1891 and stalls[0].data["silent_s"] >= 300
    # a step that moves is no stall
    moving = [f"[10:{m:02d}:00] heartbeat: step={m}" for m in range(0, 60, 10)]
    assert not [e for e in structure("\n".join(moving) + "\n").events if e.kind == "stall"]


def test_stall_from_a_progress_bar_redrawn_at_one_count():
    # no timestamps: the bar's own elapsed clock runs on while the count stays at 7/50
    bar = " 14%|█▍        | 7/50 [{}<{}, {}s/it]"
    lines = [
        bar.format("00:42", "04:18", "6.00"),
        bar.format("2:10:05", "12:30:00", "1115.00"),
        bar.format("5:01:44", "30:11:02", "2582.00"),
    ]
    stalls = [e for e in structure("\n".join(lines) + "\n").events if e.kind == "stall"]
    assert stalls and stalls[0].data["last_step"] == 7 and stalls[0].data["repeats"] == 3
    assert stalls[0].data["silent_s"] >= 300
    # a bar that moves, or one redrawn at one count for less than the threshold, is no stall
    moving = [f" {i * 2}%|▏         | {i}/50 [00:{i * 6:02d}<04:18, 6.00s/it]" for i in range(1, 6)]
    brief = [bar.format("00:42", "04:18", "6.00"), bar.format("01:30", "04:18", "6.00")] * 2
    for other in (moving, brief):
        assert not [e for e in structure("\n".join(other) + "\n").events if e.kind == "stall"]


def test_completed_progress_bar_after_an_error_is_a_clean_exit():
    text = (
        'Traceback (most recent call last):\n  File "t.py", line 1, in f\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n\n"
        "retrying with batch size 16\n"
        "Epoch 1: 100%|##########| 782/782 [03:10<00:00,  4.11it/s]\n"
    )
    assert structure(text).end_state.kind == "clean-exit"
    unfinished = text.replace("782/782", "391/782").replace("100%", " 50%")
    assert structure(unfinished).end_state.kind != "clean-exit"


def test_exception_python_ignored_is_no_root_error():
    # sys.unraisablehook's output: raised in a weakref finalizer (or __del__, atexit) and
    # swallowed there, so it cannot be what ended the run; a chained link of it neither
    from triage.structure import root_exception

    ignored = (
        "Exception ignored in: <finalize object at 0x7f7d81a9c2c0; dead>\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/weakref.py", line 585, in __call__\n'
        "    def __call__(self, _=None):\n"
        '  File "/venv/lib/python3.12/site-packages/math_verify/utils.py", line 43, in handler\n'
        '    raise TimeoutError("Operation timed out!")\n'
        "TimeoutError: Operation timed out!\n"
    )
    st = structure(ignored + "step 1233 loss 0.019\n")
    assert [e.ignored for e in st.exceptions] == [True]
    assert root_exception(st.exceptions) is None
    raised = (
        ignored
        + "Traceback (most recent call last):\n  File \"t.py\", line 3, in <module>\nKeyError: 'prompt'\n"
    )
    root = root_exception(structure(raised).exceptions)
    assert root is not None and root.type == "KeyError"


def test_clean_end_seen_past_exit_time_warnings():
    # torch 2.4+'s per-rank warning at interpreter exit hides nothing: the line before it ends the run
    pg = (
        "[rank{r}]:[W616 21:29:33.762196891 ProcessGroupNCCL.cpp:1496] Warning: WARNING: destroy_process_group() was not "
        "called before program exit, which can leak resources. For more info, please see "
        "https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())\n"
    )
    text = "Epoch 0: 100%|##########| 500/500 [03:12<00:00]\n`Trainer.fit` stopped: `max_epochs=1` reached.\n"
    text += "".join(pg.format(r=r) for r in range(8))
    assert structure(text).end_state.kind == "clean-exit"
    assert (
        structure("step 10 loss 2.0\n" + "".join(pg.format(r=r) for r in range(8))).end_state.kind
        != "clean-exit"
    )


# -- a report is pure: it may be taken at any time, as often as wanted ---------------

PURE_LOG = """[rank0]: step 10 loss 2.5 tok/s 1200 grad_norm: 0.8
[rank1]: step 10 loss 2.6 tok/s 1190 grad_norm: 0.9
Traceback (most recent call last):
  File "train.py", line 9, in <module>
    step()
RuntimeError: CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported
Root Cause (first observed failure):
[0]:
  time      : 2024-01-01_00:00:00
  host      : node1
  rank      : 0 (local_rank: 0)
  exitcode  : -6 (pid: 123)
"""


def _lines(text: str) -> list[Line]:
    state, out, seq = SourceState(), [], 0
    for raw in split_lines([text.encode()]):
        for p in normalize(raw.data, state):
            seq += 1
            out.append(Line("t.log", raw.lineno, p.text, p.rank, seq, p.ts))
    return out


def test_report_twice_gives_equal_reports():
    a = Analysis(get_rules())
    for line in _lines(PURE_LOG):
        a.feed(line)
    src = [SourceInfo("t.log", PURE_LOG.count("\n"), (0, 1))]
    first = a.report(src)
    assert a.report(src) == first
    assert a.report(src) == first


def test_feeding_after_a_report_is_as_if_it_was_never_taken():
    lines = _lines(PURE_LOG)
    src = [SourceInfo("t.log", PURE_LOG.count("\n"), (0, 1))]
    plain, peeked = Analysis(get_rules()), Analysis(get_rules())
    for i, line in enumerate(lines):
        plain.feed(line)
        peeked.feed(line)
        peeked.report([SourceInfo("t.log", line.lineno, (0, 1))])  # mid-traceback, mid-report
        assert peeked.progress() == plain.progress(), i
    assert peeked.report(src) == plain.report(src)


def test_progress_is_what_the_report_says():
    a = Analysis(get_rules())
    for line in _lines("step 1200 loss 1.93 | Saving checkpoint\nstep 1201 loss 1.9 tok/s 800\n"):
        a.feed(line)
    p = a.progress()
    rep = a.report([SourceInfo("t.log", 2)])
    assert p.phase == rep.end_state.last_phase
    assert (p.step, p.loss, p.toks) == (
        rep.metrics["last_step"],
        rep.metrics["loss_last"],
        rep.metrics["toks_last"],
    )
    assert (p.step, p.loss, p.toks) == (1201, 1.9, 800.0)


def test_deepspeed_launcher_exit_is_a_child_exit_with_its_signal():
    """DeepSpeed prints no Root Cause section: its launcher's return-code line is the
    child's end, decoded like torchrun's (a negative code: killed by that signal)."""
    st = structure(
        "[2024-03-01 10:00:00,456] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python',"
        " '-u', 'train.py', '--local_rank=3', '--deepspeed', 'ds.json'] exits with return code = -9\n"
        "[2024-03-01 10:00:01,001] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python',"
        " '-u', 'train.py'] exits with return code = 1\n"
    )
    exits = [e.data for e in st.events if e.kind == "child-exit"]
    assert exits[0] == {"exitcode": -9, "local_rank": 3, "pid": None, "signal": "SIGKILL"}
    assert exits[1]["exitcode"] == 1 and exits[1]["signal"] is None and exits[1]["local_rank"] is None


IPYTHON_TB = (
    "---------------------------------------------------------------------------\n"
    "ImportError                               Traceback (most recent call last)\n"
    "<ipython-input-4-0a1b2c3d4e5f> in <cell line: 3>()\n"
    "----> 3 model = AutoModel.from_pretrained('m', device_map='auto')\n"
    "\n"
    "/usr/lib/python3.10/site-packages/transformers/modeling_utils.py in from_pretrained(cls)\n"
    "   2703             if not is_accelerate_available():\n"
    "-> 2704                 raise ImportError(\n"
    '   2705                     "Using `low_cpu_mem_usage=True` or a `device_map` requires Accelerate: `pip install accelerate`"\n'
    "   2706                 )\n"
    "\n"
    "ImportError: Using `low_cpu_mem_usage=True` or a `device_map` requires Accelerate: `pip install accelerate`\n"
    "   3 steps left\n"
)


def test_ipython_quoted_source_is_not_read_as_output():
    """The numbered code an IPython traceback quotes is code: the diagnosis's evidence is
    the exception line, not the quoted `raise ImportError("...")` message."""
    s = Structurer()
    quoted = []
    for i, text in enumerate(IPYTHON_TB.splitlines(), 1):
        s.feed(Line("a.log", i, text, None, i))
        quoted.append(s.quoted)
    assert [i + 1 for i, q in enumerate(quoted) if q] == [4, 7, 8, 9, 10]  # after the exception: not quoted
    a = Analysis(get_rules())
    for i, text in enumerate(IPYTHON_TB.splitlines(), 1):
        a.feed(Line("a.log", i, text, None, i))
    rep = a.report([SourceInfo("a.log", 13)])
    top = rep.diagnoses[0]
    assert top.signature == "missing-accelerate"
    assert [e.line for e in top.evidence if e.line is not None] == [12]


def test_python_traceback_source_lines_are_quoted_code():
    """The line under a `File "...", line N, in f` frame is that frame's source: a rule
    must find `raise ChildFailedError(` on the exception line, not in the quoted code."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 293, in launch_agent\n'
        "    raise ChildFailedError(\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "    not code: a message continuation\n"
    )
    s = Structurer()
    quoted = []
    for i, t in enumerate(text.splitlines(), 1):
        s.feed(Line("a.log", i, t, None, i))
        quoted.append(s.quoted)
    assert quoted == [False, False, True, False, False]


def test_a_message_that_opens_on_the_next_line_is_cited_with_its_type():
    """`RuntimeError: ` with the text below it (multiprocessing's bootstrapping error): the
    evidence names the message, not a bare type, and here the DataLoader's start is the rule's."""
    from triage.engine import analyze_text

    mp = "/py/lib/python3.10/multiprocessing"
    dl = "/py/lib/python3.10/site-packages/torch/utils/data/dataloader.py"
    text = (
        "Traceback (most recent call last):\n"
        f'  File "{dl}", line 918, in __init__\n    w.start()\n'
        f'  File "{mp}/spawn.py", line 154, in get_preparation_data\n    _check_not_importing_main()\n'
        f'  File "{mp}/spawn.py", line 134, in _check_not_importing_main\n    raise RuntimeError(\n'
        "RuntimeError: \n        An attempt has been made to start a new process before the\n"
        "        current process has finished its bootstrapping phase.\n\n"
    )
    rep = analyze_text(text)
    top = rep.diagnoses[0]
    assert top.signature == "dataloader-worker-crash"
    assert top.evidence[0].text.startswith("RuntimeError: An attempt has been made to start a new process")
