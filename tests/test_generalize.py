"""The clause kinds and reasoning that make rules generalize past the reference messages
(issue 14): cut-aware text, series, frames, phases, the root error of an unclassified
crash, and errors a run survived. Each case is the shape a real log had."""

from __future__ import annotations

from triage.engine import analyze_text, get_rules
from triage.model import Confidence, Report


def triage(text: str) -> Report:
    return analyze_text(text, rules=get_rules())


def top(text: str) -> tuple[str, Confidence] | None:
    r = triage(text)
    return (r.diagnoses[0].signature, r.diagnoses[0].confidence) if r.diagnoses else None


# -- cut-aware text ------------------------------------------------------------------


def test_a_hard_wrapped_message_matches_when_the_next_line_completes_it() -> None:
    log = (
        "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for\n"
        "clients. 1/2 clients joined.\n"
    )
    assert top(log) == ("rendezvous-failure", Confidence.LIKELY)


def test_a_message_cut_at_the_end_of_a_paste_is_at_most_likely() -> None:
    log = (
        "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. "
        "1/2 cli"
    )  # no newline: the paste stops inside the message
    d = triage(log).diagnoses[0]
    assert (d.signature, d.confidence) == ("rendezvous-failure", Confidence.LIKELY)
    assert d.evidence[0].line == 1


def test_a_whole_last_line_is_not_taken_for_a_cut_one() -> None:
    # the same prefix, but the line ends with a newline: nothing says it was cut
    log = "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for\n"
    assert top(log) != ("rendezvous-failure", Confidence.LIKELY)


def test_a_wildcard_pattern_never_matches_a_prefix() -> None:
    # nccl-error's WARN clause ends in a wildcard: a benign WARN line at the end of a cut
    # paste is not "the start of" a failure
    log = "node1:311:402 [0] transport/net_ib.cc:199 NCCL WARN NET/IB : Unable to open device mlx5_0"
    assert all(d.confidence < Confidence.LIKELY for d in triage(log).diagnoses)


# -- series ----------------------------------------------------------------------------


def test_a_loss_column_turning_nan_is_nan_loss_on_its_row() -> None:
    log = "step   loss    lr\n100    2.3145  3e-4\n200    2.1021  3e-4\n300    nan     3e-4\n"
    d = triage(log).diagnoses[0]
    assert d.signature == "nan-loss" and d.evidence[0].line == 4


def test_a_finite_loss_table_is_quiet() -> None:
    log = "step   loss    lr\n100    2.3145  3e-4\n200    2.1021  3e-4\n300    1.9984  3e-4\n"
    assert all(d.signature != "nan-loss" for d in triage(log).diagnoses)


def test_a_loss_scale_halving_again_and_again_is_divergence() -> None:
    log = "".join(
        f"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {2 ** (16 - i)}, "
        f"reducing to {2 ** (15 - i)}\n"
        for i in range(10)
    )
    assert top(log) == ("nan-loss", Confidence.LIKELY)


def test_warm_up_overflow_skips_are_quiet() -> None:
    skips = "".join(
        f"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {2 ** (32 - i)}, "
        f"reducing to {2 ** (31 - i)}\n"
        for i in range(8)
    )
    steps = "".join(f"step {i} loss 2.{i}\n" for i in range(10, 30))
    assert all(d.signature != "nan-loss" for d in triage(skips + steps).diagnoses)


# -- frames, phases --------------------------------------------------------------------


def test_anything_raised_inside_torch_save_is_a_failed_save() -> None:
    log = (
        'Traceback (most recent call last):\n  File "/w/main.py", line 332, in save_checkpoint\n'
        "    torch.save(state, filename)\n"
        '  File "/usr/lib/python3/dist-packages/torch/serialization.py", line 238, in _save\n'
        "    serialized_storages[key]._write_file(f, _is_real_file(f))\n"
        "RuntimeError: Unknown error -1\n"
    )
    assert top(log) == ("checkpoint-save-failed", Confidence.LIKELY)


def test_an_excerpt_that_starts_mid_traceback_keeps_its_frames() -> None:
    log = (
        '  File "/env/lib/python3.7/site-packages/torch/serialization.py", line 328, in save\n'
        "    _legacy_save(obj, opened_file, pickle_module, pickle_protocol)\n"
        "OSError: [Errno 5] Input/output error\n"
    )
    got = top(log)
    assert got is not None and got[0] == "checkpoint-save-failed"


def test_an_assertion_raised_inside_dynamo_hints_at_the_thread_race_but_a_user_one_does_not() -> None:
    inside = (
        'Traceback (most recent call last):\n  File "/w/train.py", line 12, in worker\n'
        "    out = compiled(x)\n"
        '  File "/v/lib/python3.11/site-packages/torch/_dynamo/convert_frame.py", line 1100, in __call__\n'
        "    assert tracing_context is not None\nAssertionError\n"
    )
    user = (
        "Traceback (most recent call last):\n"
        '  File "/v/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py", line 655, in _fn\n'
        '    return fn(*args, **kwargs)\n  File "/w/model.py", line 40, in forward\n'
        "    assert x.shape[-1] == self.dim\nAssertionError\n"
    )
    assert top(inside) == ("fx-tracing-flag-race", Confidence.POSSIBLE)
    got = top(user)
    assert got is not None and got[0] == "unclassified-error"


def test_a_port_in_use_while_training_is_only_a_hint() -> None:
    bar = "Epoch 3:  47%|████▋     | 4701/10000 [3:02:11<3:25:12,  2.33s/it, loss=1.92]"
    warn = (
        "[W1201 14:02:11.123456 4242 socket.cpp:428] [c10d] The server socket has failed to listen "
        "on any local network address. useIpv6: 0, code: -98, name: EADDRINUSE, message: address "
        "already in use"
    )
    during = triage(f"{bar}{warn}\n{bar}\n").diagnoses
    at_start = triage(f"{warn}\n").diagnoses
    assert (during[0].signature, during[0].confidence) == ("rendezvous-failure", Confidence.POSSIBLE)
    assert (at_start[0].signature, at_start[0].confidence) == ("rendezvous-failure", Confidence.CONFIRMED)


def test_a_decode_error_while_loading_a_checkpoint_is_a_corrupt_checkpoint() -> None:
    log = (
        "0: loading distributed checkpoint at iteration 622125\n"
        "0: UnicodeDecodeError: 'utf-8' codec can't decode byte 0xde in position 8: invalid continuation byte\n"
    )
    got = top(log)
    assert got is not None and got[0] == "checkpoint-load-corrupt"


# -- the root error, and errors a run survived --------------------------------------------


def test_the_root_error_is_the_earliest_rank_even_when_messages_differ_in_numbers() -> None:
    tb = (
        '[rank{r}]: Traceback (most recent call last):\n[rank{r}]:   File "/w/t.py", line 9, in <module>\n'
        "[rank{r}]:     x = torch.cat([a, b])\n[rank{r}]: RuntimeError: Expected all tensors to be on the "
        "same device, but found at least two devices, cpu and cuda:{r}!\n"
    )
    log = tb.format(r=2) + tb.format(r=0)
    d = triage(log).diagnoses[0]
    assert d.signature == "unclassified-error" and d.evidence[0].rank == 2 and d.evidence[0].line == 4


def test_bare_errors_lead_with_the_first_not_the_teardown() -> None:
    d = triage("RuntimeError: invalid configuration\nFileNotFoundError: cleanup marker missing\n").diagnoses[
        0
    ]
    assert d.evidence[0].line == 1


def test_an_oom_the_run_trained_on_after_is_handled() -> None:
    oom = (
        "INFO CUDA out of memory. Tried to allocate 306.00 MiB (GPU 0; 15.78 GiB total capacity; "
        "13.52 GiB already allocated; 94.75 MiB free)\nWARNING skipping batch\n"
    )
    steps = "".join(f"DEBUG Batch loss: 0.00{i}\n" for i in range(1, 6))
    d = next(d for d in triage(steps + oom + steps).diagnoses if d.signature == "cuda-oom")
    assert d.confidence == Confidence.POSSIBLE and "went on" in d.counter_evidence[0].text
    # the same OOM as the last thing the run did is the failure
    last = next(d for d in triage(steps + oom).diagnoses if d.signature == "cuda-oom")
    assert last.confidence == Confidence.CONFIRMED


def test_a_message_wholly_on_the_next_line_is_not_credited_to_the_cut_one() -> None:
    # the long line ends inside a cut-aware message's prefix; the whole message follows
    # on its own line: that line is the evidence, not the one before it
    first = "x" * 40 + " torch.distributed.DistStoreError: Timed out after 601 seconds waiting fo"
    second = "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 1/2 clients joined."
    d = triage(f"{first}\n{second}\n").diagnoses[0]
    assert d.signature == "rendezvous-failure"
    assert d.evidence[0].line == 2


def test_a_run_that_says_how_it_ended_is_not_cut_off() -> None:
    body = "".join(f"step {i} loss 2.{i}\n" for i in range(5))
    for last in (
        "Results written to eval_out/scores.json",
        "Model saved to /train/saved_model/mnist/1",
        "wandb: Synced 6 W&B file(s), 0 media file(s), 0 artifact file(s) and 0 other file(s)",
        "Time limit reached. Elapsed time is 0:00:05. Signaling Trainer to stop.",
    ):
        r = triage(body + last + "\n")
        assert r.end_state.kind == "clean-exit", last
        assert not r.diagnoses, last
    assert triage(body + "the results saved to the cache are stale\n").end_state.kind != "clean-exit"
