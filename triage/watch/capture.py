"""Capture a tmux pane into a file without losing or repeating a line.

The hand-over from scrollback to live output is the hard part. Three tmux commands go
to the server as one command list, which the server runs without reading pane output
in between:

    display -p ...         cursor position, history size, pane height, dead?
    capture-pane -p        the visible screen, row by row (to see the cursor's row)
    capture-pane -p -J -S - the whole scrollback, wrapped lines joined
    pipe-pane 'cat GATE - >> FILE'   every byte the pane gets from now on

pipe-pane starts the pipe at the point the screen was parsed to, so the captured text
and the piped bytes meet exactly: no gap, no overlap. The piped `cat` first copies a
FIFO (the gate) and only then its stdin, so the scrollback that the watcher writes into
the gate lands in FILE before the first live byte (tmux buffers meanwhile). If the
cursor stands mid-line, that last line is written without its newline and the live
bytes complete it.

So that the output of a pane whose process dies is kept, the pane (that pane only)
gets remain-on-exit while it is watched: tmux then reads the pty to its end and keeps
the pane, with `pane_dead_status`, instead of dropping it with the bytes it had not
yet written to the pipe. On close the pipe is stopped and the user's remain-on-exit
is restored; a dead pane that their setting would have closed is closed.

How the process ended: tmux 3.3a sometimes marks a piped pane dead and never reaps its
process (about 1 death in 7 on a busy server: `#{pane_dead_status}` stays empty for
good). The process is then a zombie, and a zombie's /proc/PID/stat carries its wait
status (field 52, Linux 3.5+). So the watcher notes the pane process's start time while
it lives and, when tmux has no status, reads it there (the start time proves the pid
was not reused). Wrapping the pane's command would need the run to be started by
triage; reading /proc works on the pane the user already has.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from triage.errors import TriageError

GATE_TIMEOUT = 5.0  # seconds for the pipe's `cat` to open the gate
PIPE_DRAIN = 2.0  # seconds at most for the pipe's `cat` to copy what is left at the end
DEAD_LINE = "Pane is dead"  # tmux writes this into a kept dead pane; it is not output


class TmuxError(TriageError):
    """tmux is missing, the server or the target is not there, or a command failed."""


@dataclass(frozen=True, slots=True)
class PaneStatus:
    """What `display -p` says about the watched pane now."""

    exists: bool
    dead: bool = False
    exit_status: int | None = None
    signal: str | None = None
    current_command: str = ""
    status_from: str | None = None  # "tmux" | "proc": who told the exit status


@dataclass
class Attach:
    """What was found when attaching: the pane, and the scrollback handed to the file."""

    pane_id: str
    session: str
    window: str
    pane_pid: int | None
    history_lines: int
    partial: bool
    dead_at_attach: bool
    notes: list[str] = field(default_factory=list)


class Tmux:
    """Run tmux commands on one server (the default one, or `-L NAME` / `-S PATH`)."""

    def __init__(self, socket: str | None = None, *, binary: str = "tmux") -> None:
        exe = shutil.which(binary)
        if exe is None:
            raise TmuxError("tmux is not installed (the --tmux mode needs it)")
        self.base = [exe]
        if socket:
            self.base += ["-S", socket] if "/" in socket else ["-L", socket]

    def run(self, *args: str, check: bool = True) -> str:
        """Run one command (list); return stdout. A failure raises TmuxError."""
        try:
            p = subprocess.run([*self.base, *args], capture_output=True, timeout=30, check=False)
        except subprocess.TimeoutExpired:
            raise TmuxError(f"tmux {args[0]}: no answer from the server in 30 s") from None
        if check and p.returncode != 0:
            msg = p.stderr.decode("utf-8", "replace").strip() or f"exit {p.returncode}"
            raise TmuxError(f"tmux {args[0]}: {msg}")
        return p.stdout.decode("utf-8", "replace")


_INFO = "\t".join(
    [
        "#{pane_id}",
        "#{session_name}",
        "#{window_index}",
        "#{pane_index}",
        "#{pane_dead}",
        "#{pane_pipe}",
        "#{pane_pid}",
        "#{history_size}",
        "#{history_limit}",
        "#{cursor_x}",
        "#{cursor_y}",
        "#{pane_height}",
    ]
)
_STATUS = "\t".join(["#{pane_dead}", "#{pane_dead_status}", "#{pane_dead_signal}", "#{pane_current_command}"])


class TmuxPane:
    """One watched pane: `attach()` once, `status()` while watching, `close()` at the end."""

    def __init__(self, target: str, capture: Path, *, socket: str | None = None) -> None:
        self.target = target
        self.capture = capture
        self.tmux = Tmux(socket)
        self.pane_id = ""
        self.piped = False
        self._pipe_pid: int | None = None
        self._pipe_mark = ""
        self._roe_local: str | None = None  # pane-level remain-on-exit before we set it
        self._roe_effective = "off"
        self._roe_set = False
        self.closed = False
        self.pane_pid: int | None = None
        self._pid_start: str | None = None  # /proc/PID/stat field 22 while it lived
        self.last_screen: list[str] = []  # the visible screen at the last status()

    # -- attach -------------------------------------------------------------------
    def attach(self) -> Attach:
        """Resolve the target, keep its pane on exit, and start the capture file with
        the scrollback followed by every live byte."""
        info = self._info(self.target)
        self.pane_id = info[0]
        session, window, pane = info[1], info[2], info[3]
        dead, already_piped = info[4] == "1", info[5] == "1"
        if already_piped and not dead:
            raise TmuxError(
                f"pane {self.pane_id} ({session}:{window}.{pane}) already has a pipe-pane, and "
                f"tmux allows one per pane; stop it (tmux pipe-pane -t {self.pane_id}) or "
                "watch the file it writes: triage watch FILE"
            )
        self.capture.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.capture.write_bytes(b"")
        except OSError as e:
            raise TriageError(f"{self.capture}: cannot write the capture file ({e.strerror})") from None
        if not dead:
            self._keep_pane_on_exit()
        notes: list[str] = []
        if dead:
            hist, partial, hsize, hlimit = self._capture_dead()
        else:
            hist, partial, hsize, hlimit, dead = self._capture_and_pipe()
        if hsize >= hlimit > 0:
            notes.append(
                f"the pane's scrollback was full ({hlimit} lines, tmux history-limit): "
                "older output was dropped by tmux before triage attached"
            )
        pid = int(info[6]) if info[6].isdigit() else None
        self.pane_pid = pid
        self._pid_start = proc_start_time(pid) if pid is not None and not dead else None
        n = len(hist) - (1 if partial else 0)
        return Attach(self.pane_id, session, window, pid, n, partial, dead, notes)

    def _info(self, target: str) -> list[str]:
        try:
            out = self.tmux.run("display-message", "-p", "-t", target, _INFO)
        except TmuxError as e:
            raise TmuxError(f"cannot watch tmux target {target!r}: {e.message}") from None
        parts = out.rstrip("\n").split("\t")
        if len(parts) != 12 or not parts[0].startswith("%"):
            raise TmuxError(f"cannot watch tmux target {target!r}: unexpected answer {out!r}")
        return parts

    def _keep_pane_on_exit(self) -> None:
        local = self.tmux.run(
            "show-options", "-p", "-q", "-v", "-t", self.pane_id, "remain-on-exit", check=False
        ).strip()
        self._roe_local = local or None
        eff = self.tmux.run(
            "display-message", "-p", "-t", self.pane_id, "#{remain-on-exit}", check=False
        ).strip()
        self._roe_effective = eff or "off"
        self.tmux.run("set-option", "-p", "-t", self.pane_id, "remain-on-exit", "on")
        self._roe_set = True

    def _capture_dead(self) -> tuple[list[str], bool, int, int]:
        lines = self.final_screen()
        self._write(lines, partial=False)
        return lines, False, 0, 0

    def _capture_and_pipe(self) -> tuple[list[str], bool, int, int, bool]:
        gate_dir = Path(tempfile.mkdtemp(prefix="triage-gate-"))
        gate = gate_dir / "gate"
        os.mkfifo(gate, 0o600)
        pidfile = gate_dir / "pid"
        # the shell records its pid, which `exec` hands to cat: a dead pane's pipe cannot
        # be closed through tmux ("target pane has exited"), so we may have to stop it
        cmd = (
            f"echo $$ > {shlex.quote(str(pidfile))}; "
            f"exec cat {shlex.quote(str(gate))} - >> {shlex.quote(str(self.capture))}"
        )
        try:
            out = self.tmux.run(*self._attach_commands(cmd), check=False)
            rows = out.split("\n")
            info = rows[0].split("\t")
            if len(info) != 12:
                raise TmuxError(f"tmux: unexpected answer while attaching: {rows[0]!r}")
            if info[4] == "1":  # died between the first look and now: no pipe started
                shutil.rmtree(gate_dir, ignore_errors=True)
                lines, _, _, _ = self._capture_dead()
                return lines, False, int(info[7]), int(info[8]), True
            self.piped = self._pipe_open()
            if not self.piped:
                raise TmuxError(f"tmux pipe-pane did not start on {self.pane_id}")
            cx, cy, height = int(info[9]), int(info[10]), int(info[11])
            visible = rows[1 : 1 + height]
            joined = _strip_screen(rows[1 + height :])
            cursor_row = visible[cy] if 0 <= cy < len(visible) else ""
            partial = cx > 0 and bool(cursor_row.strip()) and bool(joined)
            self._feed_gate(gate, joined, partial)
            with contextlib.suppress(OSError, ValueError):
                self._pipe_pid = int(pidfile.read_text().strip())
                self._pipe_mark = str(gate)
            return joined, partial, int(info[7]), int(info[8]), False
        finally:
            shutil.rmtree(gate_dir, ignore_errors=True)

    def _attach_commands(self, pipe_cmd: str) -> tuple[str, ...]:
        """One tmux command list, run by the server without reading pane output in
        between: where the cursor is, the visible screen, the whole joined scrollback,
        then the pipe of every later byte into the capture file."""
        pane = self.pane_id
        return (
            *("display-message", "-p", "-t", pane, _INFO, ";"),
            *("capture-pane", "-p", "-t", pane, ";"),
            *("capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", pane, ";"),
            *("pipe-pane", "-o", "-t", pane, pipe_cmd),
        )

    def _feed_gate(self, gate: Path, lines: list[str], partial: bool) -> None:
        text = "\n".join(lines)
        if lines and not partial:
            text += "\n"
        deadline = time.monotonic() + GATE_TIMEOUT
        while True:
            try:
                fd = os.open(gate, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as e:
                if e.errno != errno.ENXIO or time.monotonic() > deadline:
                    self.stop_pipe()
                    _release(gate)
                    raise TmuxError(f"tmux pipe-pane: the capture command did not start ({e})") from None
                time.sleep(0.005)
        try:
            os.set_blocking(fd, True)
            data = text.encode("utf-8")
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
        finally:
            os.close(fd)

    def _write(self, lines: list[str], partial: bool) -> None:
        text = "\n".join(lines) + ("" if partial or not lines else "\n")
        with self.capture.open("ab") as fh:
            fh.write(text.encode("utf-8"))

    def _pipe_open(self) -> bool:
        out = self.tmux.run("display-message", "-p", "-t", self.pane_id, "#{pane_pipe}", check=False)
        return out.strip() == "1"

    # -- while watching -----------------------------------------------------------
    def status(self) -> PaneStatus:
        """Is the pane there, is its process dead, and with what status (tmux's, else
        the zombie's own from /proc). The visible screen comes along in the same command
        list: after a `kill-pane` it is the only copy of what tmux had not yet piped."""
        try:
            out = self.tmux.run(
                "display-message",
                "-p",
                "-t",
                self.pane_id,
                _STATUS,
                ";",
                "capture-pane",
                "-p",
                "-J",
                "-t",
                self.pane_id,
            )
        except TmuxError:
            return PaneStatus(exists=False)
        first, _, screen = out.partition("\n")
        parts = first.split("\t")
        if len(parts) != 4:
            return PaneStatus(exists=False)
        self.last_screen = _strip_screen(screen.split("\n"))
        dead = parts[0] == "1"
        status = int(parts[1]) if parts[1].removeprefix("-").isdecimal() and parts[1].isascii() else None
        sig = parts[2] or None
        if sig and sig.isdigit():
            with contextlib.suppress(ValueError):
                sig = signal.Signals(int(sig)).name
        if dead and status is None and sig is None:
            got = self.proc_status()
            if got is not None:
                return PaneStatus(True, dead, got[0], got[1], parts[3], "proc")
        return PaneStatus(True, dead, status, sig, parts[3], "tmux" if status is not None or sig else None)

    def proc_status(self) -> tuple[int | None, str | None] | None:
        """(exit status, signal name) of the pane's process if it is a zombie that tmux
        has not reaped, and the very process we saw alive (same start time)."""
        if self.pane_pid is None or self._pid_start is None:
            return None
        return zombie_status(self.pane_pid, self._pid_start)

    def final_screen(self) -> list[str]:
        """The dead pane's scrollback and screen, without tmux's "Pane is dead" line:
        what the pane showed last, to check the capture's end against."""
        try:
            out = self.tmux.run("capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", self.pane_id)
        except TmuxError:
            out = "\n".join(self.last_screen)  # closed (kill-pane): the last screen seen
        lines = _strip_screen(out.split("\n"))
        if lines and lines[-1].startswith(DEAD_LINE):
            lines = _strip_screen(lines[:-1])
        return lines

    # -- close --------------------------------------------------------------------
    def stop_pipe(self) -> None:
        """Stop our pipe (only ours: we refused to attach over someone else's)."""
        if not self.piped:
            return
        self.piped = False
        try:
            self.tmux.run("pipe-pane", "-t", self.pane_id)
        except TmuxError:
            self._kill_pipe()  # a dead (kept) pane: tmux refuses to touch its pipe

    def _kill_pipe(self) -> None:
        """Stop our `cat` once it has copied what the pipe still holds. A killed pane's
        end of the pipe is closed, so cat copies the rest and exits by itself; a kept
        dead pane holds it open, so cat is stopped once it waits on an empty pipe. A
        SIGTERM before that would drop bytes tmux had handed over (cat runs late on a
        loaded machine)."""
        pid = self._pipe_pid
        if pid is None or not self._is_our_cat(pid):
            return
        deadline = time.monotonic() + PIPE_DRAIN
        idle = 0
        while time.monotonic() < deadline and idle < 2:
            st = _proc_stat(pid)
            if st is None or st[0] == "Z" or not self._is_our_cat(pid):
                return  # it copied everything and exited
            idle = idle + 1 if _waiting_for_input(pid) else 0
            time.sleep(0.02)
        if self._is_our_cat(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)

    def _is_our_cat(self, pid: int) -> bool:
        """Is `pid` still our pipe's cat (its command line names our gate), not a
        process that got the pid after it?"""
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False
        return bool(self._pipe_mark) and self._pipe_mark.encode() in cmdline

    def close(self, *, dead: bool | None = None, exit_status: int | None = None) -> None:
        """Stop the pipe, give the pane its remain-on-exit back, and close a dead pane
        that the user's setting would have closed. Idempotent; never raises."""
        if self.closed or not self.pane_id:
            return
        self.closed = True
        try:
            self.stop_pipe()
            if not self._roe_set:
                return
            if self._roe_local is None:
                self.tmux.run("set-option", "-p", "-u", "-t", self.pane_id, "remain-on-exit", check=False)
            else:
                self.tmux.run(
                    "set-option", "-p", "-t", self.pane_id, "remain-on-exit", self._roe_local, check=False
                )
            if dead is None:
                st = self.status()
                dead, exit_status = st.exists and st.dead, st.exit_status
            if dead and not _would_remain(self._roe_effective, exit_status):
                self.tmux.run("kill-pane", "-t", self.pane_id, check=False)
        except TriageError:
            pass  # the server went away: nothing of ours is left to undo


def _proc_stat(pid: int) -> tuple[str, str, int | None] | None:
    """(state, start time, exit code) from /proc/PID/stat; None when it is not there.
    The command name may hold spaces and parentheses: fields count from the last ')'."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = raw.rpartition(")")[2].split()
    # fields[0] is field 3 (state); start time is field 22, the exit code field 52
    if len(fields) < 20:
        return None
    code = int(fields[49]) if len(fields) >= 50 and fields[49].isdigit() else None
    return fields[0], fields[19], code


def _waiting_for_input(pid: int) -> bool:
    """Is the process asleep in a read of an empty pipe or socket? (/proc/PID/wchan:
    the kernel function it sleeps in.) Where the kernel does not tell, say no: the
    caller then waits its full time, which is safe."""
    try:
        where = Path(f"/proc/{pid}/wchan").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return "read" in where or where in ("pipe_wait", "pipe_read", "unix_stream_data_wait")


def proc_start_time(pid: int) -> str | None:
    """The start time of a live process (/proc/PID/stat field 22): with the pid, it
    names one process even after the pid is reused."""
    st = _proc_stat(pid)
    return st[1] if st else None


def zombie_status(pid: int, start: str) -> tuple[int | None, str | None] | None:
    """(exit status, signal name) of process `pid` if it is an unreaped zombie that
    started at `start`: the wait status the kernel keeps for its parent (field 52). A
    signal gives the shell's convention, -N. None when it is not (or no longer) one."""
    st = _proc_stat(pid)
    if st is None or st[0] != "Z" or st[1] != start or st[2] is None:
        return None
    code = st[2]
    if code & 0x7F:  # WIFSIGNALED: the low 7 bits are the signal
        num = code & 0x7F
        try:
            return -num, signal.Signals(num).name
        except ValueError:
            return -num, None
    return (code >> 8) & 0xFF, None


def _release(gate: Path) -> None:
    """Let a `cat` that is still to open the gate through (it then reads EOF)."""
    with contextlib.suppress(OSError):
        os.close(os.open(gate, os.O_RDWR | os.O_NONBLOCK))


def _would_remain(setting: str, exit_status: int | None) -> bool:
    if setting == "on":
        return True
    if setting == "failed":
        return exit_status != 0
    return False


def _strip_screen(rows: list[str]) -> list[str]:
    """Drop the empty rows below the last output (tmux pads the visible screen)."""
    end = len(rows)
    while end and not rows[end - 1].strip():
        end -= 1
    return rows[:end]


def default_capture_path(name: str) -> Path:
    """~/.cache/triage/watch/<name>-<time>.log (XDG_CACHE_HOME respected)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "pane"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return base / "triage" / "watch" / f"{safe}-{stamp}.log"
