"""A throwaway PostgreSQL server for the history tests (and .ci/run): initdb into a
folder, listen on a unix socket there only, trust auth, no fsync.

    python3 tests/history/pgserver.py start DIR   # prints the URL; the server keeps running
    python3 tests/history/pgserver.py stop DIR

Stdlib only (CI calls it before the venv exists). As root, the server runs as the
`postgres` user (PostgreSQL refuses root).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

PORT = 5432  # only names the socket file: nothing listens on TCP


def bin_dir() -> Path | None:
    """Where initdb and pg_ctl are: Debian's versioned folder, else the PATH."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    which = shutil.which("initdb")
    return Path(which).parent if which else None


def _as_server_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "postgres", "--", *cmd]


def url(base: Path) -> str:
    return f"postgresql://triage@/postgres?host={base}&port={PORT}"


def start(base: Path) -> str:
    """Start a server with its data and socket under `base`; its URL."""
    bins = bin_dir()
    if bins is None:
        raise RuntimeError("no PostgreSQL server binaries (apt-get install -y postgresql)")
    base.mkdir(parents=True, exist_ok=True)
    data = base / "data"
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
    run: dict[str, Any] = {"check": True, "capture_output": True, "text": True}
    if not data.exists():
        subprocess.run(
            _as_server_user(
                [
                    str(bins / "initdb"),
                    "-D",
                    str(data),
                    "-A",
                    "trust",
                    "-U",
                    "triage",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ]
            ),
            **run,
        )
    opts = (
        f"-k {base} -p {PORT} -c listen_addresses='' -c fsync=off "
        "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
    )
    subprocess.run(
        _as_server_user(
            [
                str(bins / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                opts,
                "-w",
                "-t",
                "60",
                "-l",
                str(base / "server.log"),
                "start",
            ]
        ),
        **run,
    )
    return url(base)


def stop(base: Path) -> None:
    bins = bin_dir()
    if bins is None or not (base / "data").exists():
        return
    subprocess.run(
        _as_server_user([str(bins / "pg_ctl"), "-D", str(base / "data"), "-m", "immediate", "-w", "stop"]),
        capture_output=True,
    )


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("start", "stop"):
        sys.exit("usage: pgserver.py start|stop DIR")
    where = Path(sys.argv[2]).resolve()
    if sys.argv[1] == "start":
        print(start(where))
    else:
        stop(where)
