"""The runner's limits on real child processes: memory watchdog, file-size limit, timeout."""

from __future__ import annotations

import os
import signal
import sys
import textwrap

import pytest

from triage.repro import runner

PY = sys.executable


def _run(tmp_path, code, **kw):
    return runner.run_command(
        [PY, "-c", textwrap.dedent(code)],
        cwd=tmp_path,
        env=dict(os.environ),
        log_path=tmp_path / "run.log",
        **kw,
    )


@pytest.mark.skipif(not runner.memory_watch_supported(), reason="needs Linux /proc")
def test_memory_watchdog_sigkills_the_child_past_its_limit(tmp_path):
    # 8 MiB at a time up to 400 MiB, slowly enough that the watchdog sees it pass 120 MiB.
    run = _run(
        tmp_path,
        """
        import time
        print("allocating", flush=True)
        hold = []
        for _ in range(50):
            hold.append(bytearray(8 << 20))
            time.sleep(0.03)
        print("never killed", flush=True)
    """,
        timeout_s=60,
        rss_limit_mib=120,
    )
    assert run.killed_by == "memory-watchdog"
    assert run.exit_status == -signal.SIGKILL
    assert "never killed" not in run.log
    assert run.peak_rss_mib is not None and 120 < run.peak_rss_mib < 250


@pytest.mark.skipif(not runner.memory_watch_supported(), reason="needs Linux /proc")
def test_memory_watchdog_leaves_a_small_child_alone(tmp_path):
    run = _run(tmp_path, "print('small', flush=True)", timeout_s=30, rss_limit_mib=200)
    assert run.exit_status == 0 and run.killed_by is None and "small" in run.log


def test_file_size_limit_fails_writes_in_the_child_only(tmp_path):
    run = _run(
        tmp_path,
        """
        import sys
        try:
            with open("big.bin", "wb") as f:
                f.write(b"x" * 200_000)
        except OSError as e:
            print("write failed:", e.strerror, flush=True)
            sys.exit(1)
    """,
        timeout_s=30,
        fsize=16 * 1024,
    )
    assert run.exit_status == 1
    assert "write failed: File too large" in run.log
    # The parent (which wrote run.log) had no limit.
    big = tmp_path / "x.bin"
    big.write_bytes(b"y" * 200_000)
    assert big.stat().st_size == 200_000


def test_timeout_kills_the_process_group(tmp_path):
    run = _run(
        tmp_path,
        """
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        print("sleeping", flush=True)
        time.sleep(60)
    """,
        timeout_s=2,
    )
    assert run.killed_by == "timeout"
    assert run.exit_status == -signal.SIGKILL
    assert run.seconds < 30


def test_log_is_merged_and_byte_exact(tmp_path):
    run = _run(
        tmp_path,
        """
        import sys
        sys.stdout.write("out\\n"); sys.stdout.flush()
        sys.stderr.write("err\\n"); sys.stderr.flush()
        sys.stdout.buffer.write(b"caf\\xc3\\xa9 no newline"); sys.stdout.flush()
    """,
        timeout_s=30,
    )
    data = (tmp_path / "run.log").read_bytes()
    assert data == b"out\nerr\ncaf\xc3\xa9 no newline"
    assert run.log.endswith("café no newline")


def test_sigterm_to_the_runner_kills_the_child_in_its_own_session(tmp_path):
    # `timeout` sends SIGTERM to triage only; the child runs in a session of its own,
    # out of reach of a group kill, so the runner must end it itself.
    pidfile = tmp_path / "child.pid"
    parent_code = textwrap.dedent(f"""
        import os, sys
        from pathlib import Path
        from triage.repro import runner
        runner.run_command(["bash", "-c", "echo $$ > {pidfile}; exec sleep 60"],
                           cwd=Path({str(tmp_path)!r}), env=dict(os.environ),
                           log_path=Path({str(tmp_path / "run.log")!r}), timeout_s=120)
    """)
    import subprocess
    import time

    parent = subprocess.Popen([PY, "-c", parent_code])
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline and parent.poll() is None
        time.sleep(0.05)
    child = int(pidfile.read_text())
    parent.send_signal(signal.SIGTERM)
    assert parent.wait(timeout=60) == 128 + signal.SIGTERM
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
