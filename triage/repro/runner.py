"""Run a scenario in a subprocess, capture its log, snapshot, triage, judge the outcome.

The scenario runs with the chosen interpreter (sys.executable or --python) in its own
process group, stdout and stderr merged into one pipe that this process copies to
`run.log` byte for byte. Limits apply to the child only: a wall-clock timeout, an
optional file-size limit (RLIMIT_FSIZE, set between fork and exec) and an optional
memory watchdog that SIGKILLs the largest process of the tree when the tree's resident
memory passes a limit (the job a cgroup's OOM killer does, done here from user space
because a cgroup needs privileges). Then the log (and an evidence snapshot of the run's
interpreter, when triage.evidence can take one) goes through `triage.engine.analyze`.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from triage.errors import TriageError
from triage.fixtures.write import next_fixture_dir, write_fixture
from triage.repro.scenarios import HERE as SCENARIOS_DIR
from triage.repro.scenarios import by_name
from triage.repro.spec import Context, Run, Scenario

POLL_S = 0.02  # watchdog period: at most a few MiB of overshoot at CPU allocation speed
SETUP_TIMEOUT_S = 120.0


@dataclass
class Outcome:
    """What `triage repro NAME` prints (as JSON) and how it exits."""

    scenario: str
    expected: str
    fix: bool
    device: str
    reproduced: bool | None = None
    diagnosed: list[str] = field(default_factory=list)
    top: str | None = None  # the first root-cause diagnosis
    fixed: bool | None = None  # only with --fix
    ok: bool = False  # the outcome is the expected one
    log: str | None = None  # the kept log's path (--keep), else None
    log_tail: list[str] = field(default_factory=list)
    seconds: float = 0.0
    exit_status: int | None = None
    signal: str | None = None  # the signal that ended the run, if one did
    killed_by: str | None = None  # "timeout" or "memory-watchdog" when the runner killed it
    peak_rss_mib: float | None = None
    skipped: str | None = None
    snapshot: str | None = None  # "taken", or why not
    stalled_rank: int | None = None  # scenarios where one rank stalls: which one
    stalled_rank_named: bool | None = None  # does the top diagnosis name it?
    notes: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    report: Any = None  # the triage Report (not serialised)

    def to_json(self) -> dict[str, Any]:
        """The JSON object printed by the CLI."""
        d = asdict(self)
        d.pop("report", None)
        return d


def get(name: str) -> Scenario:
    """The scenario called `name`; a TriageError (exit 2) naming the known ones otherwise."""
    known = by_name()
    if name not in known:
        raise TriageError(f"unknown scenario {name!r}", hint=f"known: {', '.join(known)}")
    return known[name]


def repo_root() -> Path | None:
    """The checkout holding triage and dflash_runtime side by side, if this is one."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "dflash_runtime" / "__main__.py").is_file() else None


def child_env(sc: Scenario, ctx: Context) -> dict[str, str]:
    """The run's environment: ours, unbuffered Python, the checkout on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    root = repo_root()
    if root is not None:
        # dflash_runtime importable even when triage was installed without it.
        env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH")])])
    env.update(sc.env(ctx))
    return env


# --- process tree memory -------------------------------------------------------------


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as f:
                kids += [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            continue
    return kids


def tree_rss(pid: int) -> tuple[float, int]:
    """(resident MiB of `pid` and its descendants, the pid using the most)."""
    total, biggest, biggest_pid = 0, -1, pid
    todo, seen = [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        r = _rss_kib(p)
        total += r
        if r > biggest:
            biggest, biggest_pid = r, p
        todo += _children(p)
    return total / 1024, biggest_pid


def memory_watch_supported() -> bool:
    """/proc with per-task children lists (Linux)."""
    return Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists()


# --- running ---------------------------------------------------------------------------


def _preexec(fsize: int | None) -> Callable[[], None] | None:
    if fsize is None:
        return None

    def limit() -> None:  # in the child, between fork and exec
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        # Ignored, so a write past the limit fails with EFBIG instead of SIGXFSZ killing the
        # process: a failed write, as on a full disk. Exec keeps ignored signals ignored.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    return limit


def _pump(src: IO[bytes], sink: IO[bytes]) -> None:
    while True:
        chunk = src.read1(65536) if hasattr(src, "read1") else src.read(65536)
        if not chunk:
            return
        sink.write(chunk)
        sink.flush()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    # SIGTERM (`timeout`, a job scheduler) would end this process at once and leave the
    # child, in its own session, running; as an exception it passes through the
    # handlers below that kill the child's group first.
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def _sigterm_kills_child() -> Any:
    """While running a child: SIGTERM raises SystemExit (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_command(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    log_path: Path,
    timeout_s: float,
    rss_limit_mib: float | None = None,
    fsize: int | None = None,
) -> Run:
    """Run argv with merged output copied to log_path; enforce the limits; wait for it."""
    with _sigterm_kills_child():
        return _run_command(
            argv,
            cwd=cwd,
            env=env,
            log_path=log_path,
            timeout_s=timeout_s,
            rss_limit_mib=rss_limit_mib,
            fsize=fsize,
        )


def _run_command(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    log_path: Path,
    timeout_s: float,
    rss_limit_mib: float | None,
    fsize: int | None,
) -> Run:
    """run_command's body: start, copy the output, supervise, collect the Run."""
    t0 = time.monotonic()
    with open(log_path, "wb") as sink:
        proc = _start(argv, cwd, env, fsize)
        pump: threading.Thread | None = None
        try:  # from here on, whatever ends this process (SIGTERM too) ends the child first
            assert proc.stdout is not None
            copier = threading.Thread(target=_pump, args=(proc.stdout, sink), daemon=True)
            copier.start()
            pump = copier  # joined below only once started
            killed_by, peak = _supervise(proc, t0, timeout_s, rss_limit_mib)
        except BaseException:
            _kill_group(proc)
            proc.wait()
            raise
        finally:
            # Anything left in the group (a killed parent's workers) goes too.
            _kill_group(proc)
            if pump is not None:
                pump.join(timeout=10)
    data = log_path.read_bytes()
    return Run(
        exit_status=proc.returncode,
        log=data.decode("utf-8", "replace"),
        seconds=time.monotonic() - t0,
        workdir=cwd,
        killed_by=killed_by,
        peak_rss_mib=round(peak, 1) if rss_limit_mib is not None else None,
    )


def _start(argv: list[str], cwd: Path, env: dict[str, str], fsize: int | None) -> subprocess.Popen[bytes]:
    """Start argv in its own session, stdout and stderr merged into one pipe."""
    try:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_preexec(fsize),
        )
    except OSError as e:
        raise TriageError(f"cannot start {argv[0]}: {e.strerror}") from None


def _supervise(
    proc: subprocess.Popen[bytes], t0: float, timeout_s: float, rss_limit_mib: float | None
) -> tuple[str | None, float]:
    """Wait for proc, killing its group at the timeout and its largest process when the
    tree's memory passes the limit (once, as the OOM killer); (killed_by, peak MiB)."""
    killed_by: str | None = None
    peak = 0.0
    while proc.poll() is None:
        if time.monotonic() - t0 > timeout_s:
            killed_by = "timeout"
            _kill_group(proc)
            break
        if rss_limit_mib is not None:
            rss, biggest = tree_rss(proc.pid)
            peak = max(peak, rss)
            if rss > rss_limit_mib:
                killed_by = "memory-watchdog"
                with contextlib.suppress(ProcessLookupError):
                    os.kill(biggest, signal.SIGKILL)
                rss_limit_mib = None  # one kill, as the OOM killer; then let it end
        time.sleep(POLL_S)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.wait()
    return killed_by, peak


def _signal_name(status: int | None, shell: bool) -> str | None:
    if status is None:
        return None
    num = -status if status < 0 else (status - 128 if shell and status > 128 else 0)
    if num <= 0:
        return None
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def versions(python: str, env: dict[str, str]) -> dict[str, str]:
    """torch and transformers versions of the run's interpreter (metadata only, fast)."""
    code = (
        "import importlib.metadata as m, json\n"
        "import sys\n"
        "v = {'python': sys.version.split()[0]}\n"
        "for n in ('torch', 'transformers', 'accelerate'):\n"
        "    try: v[n] = m.version(n)\n"
        "    except Exception: v[n] = 'absent'\n"
        "print(json.dumps(v))\n"
    )
    try:
        out = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True
        )
        import json

        return {str(k): str(v) for k, v in json.loads(out.stdout).items()}
    except (OSError, subprocess.SubprocessError, ValueError):
        return {}


def take_snapshot(python: str, out: Path) -> tuple[dict[str, Any] | None, str]:
    """An evidence snapshot of the run's interpreter, if triage.evidence can take one."""
    try:
        from triage import evidence

        snap = evidence.take_snapshot(python=python)
    except Exception as e:  # evidence is optional here: triage the log alone
        return None, f"not taken ({type(e).__name__}: {str(e)[:120]})"
    try:
        import json

        out.write_text(json.dumps(snap, indent=2, default=str) + "\n", encoding="utf-8")
    except (OSError, TypeError, ValueError):
        pass
    return snap, "taken"


def run_scenario(
    name: str,
    *,
    fix: bool = False,
    device: str = "cpu",
    python: str | None = None,
    keep: str | None = None,
    timeout_s: float | None = None,
    snapshot: bool = True,
    record: str | None = None,
) -> Outcome:
    """Run scenario `name` (or its fix), triage the log, and judge the outcome."""
    sc = get(name)
    out = Outcome(scenario=sc.name, expected=sc.expected, fix=fix, device=device)
    if sc.device == "cuda" and device != "cuda":
        out.skipped = "needs a GPU: run with --device cuda"
        out.ok = True
        return out
    py = python or sys.executable
    try:
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            workdir = Path(tempfile.mkdtemp(prefix=f"{sc.name}{'-fix' if fix else ''}-", dir=keep))
        else:
            workdir = Path(tempfile.mkdtemp(prefix=f"triage-repro-{sc.name}-"))
    except OSError as e:
        raise TriageError(
            f"{keep or tempfile.gettempdir()}: cannot create the run's folder ({e.strerror})"
        ) from None
    try:
        _run_in(
            sc,
            out,
            Context(python=py, workdir=workdir, device=device, fix=fix, scenarios_dir=SCENARIOS_DIR),
            timeout_s,
            snapshot,
        )
        if keep:
            out.log = str(workdir / "run.log")
        if record:
            where = record_fixture(sc, out, workdir, Path(record))
            out.notes.append(
                f"recorded fixture {where}"
                if where
                else "not recorded: only a run that reproduced and was diagnosed is"
            )
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return out


def _run_in(sc: Scenario, out: Outcome, ctx: Context, timeout_s: float | None, snapshot: bool) -> None:
    """Set up, run, triage and judge one scenario in ctx.workdir, filling `out`."""
    env = child_env(sc, ctx)
    if not _prepare(sc, out, ctx, env):
        return
    run = _execute(sc, out, ctx, env, timeout_s)
    if run is None:
        return
    facts = _snapshot_facts(sc, out, ctx) if snapshot else {}
    if not snapshot:
        out.snapshot = "not taken (--no-snapshot)"

    from triage.engine import analyze

    report = analyze([str(ctx.workdir / "run.log")], facts=facts)
    _judge(sc, out, ctx, run, report)


def _prepare(sc: Scenario, out: Outcome, ctx: Context, env: dict[str, str]) -> bool:
    """Record the run's versions and run the setup commands; False when the scenario
    cannot run here (skipped) or its setup failed (both said in `out`)."""
    # As the run sees them (accelerate is "absent" where the scenario hides it).
    out.versions = versions(sc.snapshot_python(ctx), env)
    why = sc.cannot_reproduce(ctx)
    if why:
        out.skipped = why
        out.ok = True  # an honest "not here", as a GPU scenario on a CPU machine
        return False
    for i, argv in enumerate(sc.setup(ctx)):
        setup_log = ctx.workdir / f"setup-{i}.log"
        r = run_command(argv, cwd=ctx.workdir, env=env, log_path=setup_log, timeout_s=SETUP_TIMEOUT_S)
        if not r.ok:
            out.notes.append(f"setup failed (exit {r.exit_status}): {shlex.join(argv)}")
            out.log_tail = r.log.splitlines()[-20:]
            return False
    return True


def _shell_job(argv: list[str], workdir: Path) -> list[str]:
    """argv as a job in a shell script, `bash run.sh`.

    bash reports a job killed by a signal ("run.sh: line 2: PID Killed ...") on its
    stderr, which is in the log. The interpreter's folder goes first on PATH, as `source
    venv/bin/activate` does, and the job names it as `python3 ...`, as job scripts do.
    """
    py = Path(argv[0])
    body = [
        f'export PATH={shlex.quote(str(py.parent))}:"$PATH"',
        shlex.join([py.name, *argv[1:]]) if py.is_absolute() else shlex.join(argv),
        "exit $?",
    ]
    (workdir / "run.sh").write_text("\n".join(body) + "\n", encoding="utf-8")
    return ["bash", "run.sh"]


def _execute(
    sc: Scenario, out: Outcome, ctx: Context, env: dict[str, str], timeout_s: float | None
) -> Run | None:
    """Run the scenario's command under its limits and note how it ended in `out`;
    None when the memory watchdog it needs is not available (skipped)."""
    argv = sc.command(ctx)
    if sc.shell:
        argv = _shell_job(argv, ctx.workdir)
    rss = sc.rss_limit_mib(ctx) if sc.rss_limit_mib else None
    if rss is not None and not memory_watch_supported():
        out.skipped = "the memory watchdog needs Linux /proc"
        out.ok = True
        return None
    run = run_command(
        argv,
        cwd=ctx.workdir,
        env=env,
        log_path=ctx.workdir / "run.log",
        timeout_s=timeout_s or sc.timeout_s,
        rss_limit_mib=rss,
        fsize=sc.fsize_limit_bytes(ctx) if sc.fsize_limit_bytes else None,
    )
    out.seconds = round(run.seconds, 2)
    out.exit_status = run.exit_status
    out.signal = _signal_name(run.exit_status, sc.shell)
    out.killed_by = run.killed_by
    out.peak_rss_mib = run.peak_rss_mib
    out.log_tail = run.log.splitlines()[-20:]
    if run.killed_by == "timeout":
        out.notes.append(f"the run passed its {timeout_s or sc.timeout_s:g}s limit and was killed")
    out.reproduced = sc.reproduced(run) and run.killed_by != "timeout"
    return run


def _snapshot_facts(sc: Scenario, out: Outcome, ctx: Context) -> dict[str, Any]:
    """Facts of an evidence snapshot of the run's interpreter ({} when none is readable);
    what became of the snapshot goes in out.snapshot."""
    snap, out.snapshot = take_snapshot(sc.snapshot_python(ctx), ctx.workdir / "evidence.json")
    if snap is None:
        return {}
    try:
        from triage.evidence import facts_from_snapshot

        return facts_from_snapshot(snap)
    except Exception as e:  # a snapshot we cannot read: the log alone
        out.snapshot = f"unreadable ({type(e).__name__})"
        return {}


def _judge(sc: Scenario, out: Outcome, ctx: Context, run: Run, report: Any) -> None:
    """What triage diagnosed, and whether that is the expected outcome."""
    out.report = report
    out.diagnosed = [d.signature for d in report.diagnoses]
    roots = [d.signature for d in report.diagnoses if d.role == "root-cause"]
    out.top = roots[0] if roots else (out.diagnosed[0] if out.diagnosed else None)
    stalled = getattr(sc.module, "STALLED_RANK", None)
    if stalled is not None and not ctx.fix:
        out.stalled_rank = stalled
        out.stalled_rank_named = names_rank(report, stalled)
        if not out.stalled_rank_named:
            out.notes.append(
                f"triage does not name the stalled rank ({stalled}): its top "
                "diagnosis points only at the ranks that timed out"
            )
    if ctx.fix:
        # Fixed: the run completed, the failure did not happen, and triage agrees.
        out.fixed = run.ok and not out.reproduced and sc.expected not in out.diagnosed
        out.ok = out.fixed
    else:
        # where one rank stalls, a diagnosis that does not name it is not good enough
        out.ok = bool(out.reproduced) and out.top == sc.expected and out.stalled_rank_named is not False


def names_rank(report: Any, rank: int) -> bool:
    """The top diagnosis cites evidence on `rank`, or the report says "rank N" in words."""
    import re

    if not report.diagnoses:
        return False
    top = report.diagnoses[0]
    if any(e.rank == rank for e in top.evidence):
        return True
    words = re.compile(rf"\brank {rank}\b", re.IGNORECASE)
    return any(words.search(t) for t in (top.summary, *report.notes))


def record_fixture(sc: Scenario, out: Outcome, workdir: Path, root: Path) -> Path | None:
    """Write the failing run's log (and snapshot) as `root/<signature>/NNN-repro-<name>/`."""
    if out.fix or not out.ok or not (workdir / "run.log").is_file():
        return None
    dest = next_fixture_dir(root / sc.expected, f"repro-{sc.name}")
    snapshot = workdir / "evidence.json"
    write_fixture(
        dest,
        (workdir / "run.log").read_bytes(),
        _expected_toml(sc, out),
        snapshot.read_text(encoding="utf-8") if snapshot.is_file() else None,
    )
    return dest


def _expected_toml(sc: Scenario, out: Outcome) -> str:
    """expected.toml of a recorded run: its source, what must not appear, and the
    first diagnosis as triage made it."""
    v = out.versions
    vers = ", ".join(f"{k} {v[k]}" for k in ("python", "torch", "transformers", "accelerate") if k in v)
    first = out.report.diagnoses[0] if out.report is not None and out.report.diagnoses else None
    source = f"recorded from `triage repro {sc.name}` ({vers}): {sc.failure}"
    lines = [f"source = {_toml_str(source)}"]
    avoid = [s for s in getattr(sc.module, "NOT", ()) if s not in out.diagnosed]
    if avoid:
        lines.append("not = [" + ", ".join(_toml_str(s) for s in avoid) + "]")
    if first is not None:
        lines += [
            "",
            "[[diagnoses]]",
            f"signature = {_toml_str(first.signature)}",
            f"confidence = {_toml_str(first.confidence.label)}",
            f"role = {_toml_str(first.role)}",
        ]
    return "\n".join(lines) + "\n"


def _toml_str(s: str) -> str:
    import json

    return json.dumps(s)  # a JSON string is a valid TOML basic string
