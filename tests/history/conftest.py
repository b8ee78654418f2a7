"""Fixtures of the history tests: the store on both backends, and the history turned on
(the suite's conftest turns it off everywhere else) in a temporary state folder.

PostgreSQL is a real server: TRIAGE_TEST_PG_URL (CI starts one: .ci/run), else a
throwaway one this session starts from the installed binaries (tests/history/pgserver.py).
Without either the PostgreSQL cases skip locally and fail under CI.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import pgserver  # the helper next to this file

BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(autouse=True)
def history_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """History on, its default store under tmp_path (never the user's state folder)."""
    state = tmp_path / "state"
    monkeypatch.delenv("TRIAGE_HISTORY", raising=False)
    monkeypatch.delenv("TRIAGE_HISTORY_URL", raising=False)
    for var in (
        "SLURM_JOB_NAME",
        "PBS_JOBNAME",
        "LSB_JOBNAME",
        "JOB_NAME",
        "TRIAGE_RUN",
        "KUBERNETES_JOB_NAME",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str | None]:
    """The URL of a running PostgreSQL server, or None when there is none."""
    url = os.environ.get("TRIAGE_TEST_PG_URL")
    if url:
        yield url
        return
    if pgserver.bin_dir() is None:
        yield None
        return
    # a short path: a unix socket's path is limited to ~107 bytes
    base = Path(tempfile.mkdtemp(prefix="tpg", dir="/tmp"))
    try:
        yield pgserver.start(base)
    finally:
        pgserver.stop(base)
        shutil.rmtree(base, ignore_errors=True)


def _ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


@pytest.fixture
def pg_url(pg_server: str | None) -> Iterator[str]:
    """A PostgreSQL URL whose schema (search_path) is this test's own, empty."""
    if pg_server is None:
        if _ci():
            pytest.fail("no PostgreSQL server for the history tests (.ci/run starts one)")
        pytest.skip("no PostgreSQL server binaries here (apt-get install postgresql)")
    import psycopg

    schema = "t_" + secrets.token_hex(6)
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in pg_server else "?"
    yield f"{pg_server}{sep}options=-csearch_path%3D{schema}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The history store's URL, once per backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'team' / 'history.sqlite'}"
    return str(request.getfixturevalue("pg_url"))
