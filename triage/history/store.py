"""The crash history store: SQLite (the default, stdlib) or PostgreSQL (a team's).

Both backends share one schema, versioned by numbered migrations (`MIGRATIONS`), and
one set of queries written with `?` placeholders. Every failure of the store (locked,
corrupt, read-only, unreachable, a schema from a newer triage) is a `HistoryError`
with a one-line reason: callers warn once and go on without it.

Many processes may record at once: SQLite runs in WAL mode, writes take the write lock
up front (`BEGIN IMMEDIATE`) and wait for it; PostgreSQL migrates under an advisory
lock, so 64 jobs starting at once on a fresh store create the schema once.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from triage.model import Unknown


class HistoryError(Exception):
    """The store cannot be used; str() is the one-line reason."""


# (version, statements). `{id}` is the auto-numbered key of each backend. Never edit a
# shipped migration: add the next one.
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            "CREATE TABLE crashes ("
            " id {id},"
            " recorded_at DOUBLE PRECISION NOT NULL,"  # seconds since the epoch, UTC
            " day TEXT NOT NULL,"  # YYYY-MM-DD (UTC): the stats' day without date functions
            " host TEXT NOT NULL,"
            " run_key TEXT NOT NULL, run_name TEXT NOT NULL, run_via TEXT NOT NULL,"
            " fingerprint TEXT NOT NULL, fp_kind TEXT NOT NULL, fp_parts TEXT NOT NULL,"
            " label TEXT NOT NULL,"
            " signature TEXT, confidence TEXT,"
            " failed INTEGER NOT NULL,"
            " diagnoses TEXT NOT NULL, ruled_out TEXT NOT NULL, facts TEXT NOT NULL,"
            " sources TEXT NOT NULL, log_id TEXT,"
            " command TEXT NOT NULL, triage_version TEXT NOT NULL)",
            "CREATE INDEX crashes_run ON crashes (run_key, id)",
        ),
    ),
    (
        2,
        (
            "CREATE INDEX crashes_fingerprint ON crashes (fingerprint, id)",
            "CREATE INDEX crashes_day ON crashes (day, signature)",
        ),
    ),
)
LATEST = MIGRATIONS[-1][0]
COLUMNS = (
    "recorded_at",
    "day",
    "host",
    "run_key",
    "run_name",
    "run_via",
    "fingerprint",
    "fp_kind",
    "fp_parts",
    "label",
    "signature",
    "confidence",
    "failed",
    "diagnoses",
    "ruled_out",
    "facts",
    "sources",
    "log_id",
    "command",
    "triage_version",
)
# How long a writer waits for a busy store's lock, and a connection for a server, before
# the triage goes on without the history (one warning). Enough for 64 jobs recording at
# once; TRIAGE_HISTORY_TIMEOUT (seconds) changes it.
TIMEOUT_ENV = "TRIAGE_HISTORY_TIMEOUT"
DEFAULT_TIMEOUT_S = 10.0


def timeout_s() -> float:
    """The store's wait, from TRIAGE_HISTORY_TIMEOUT (a bad value: the default)."""
    try:
        value = float(os.environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT_S))
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


PG_LOCK_KEY = 7_211_802  # pg_advisory_xact_lock: one migration at a time
STATE_ENV = "XDG_STATE_HOME"


@dataclass
class Record:
    """One triage of one crash, as stored."""

    recorded_at: float
    host: str
    run_key: str
    run_name: str
    run_via: str
    fingerprint: str
    fp_kind: str
    fp_parts: dict[str, Any]
    label: str
    signature: str | None
    confidence: str | None
    failed: bool
    diagnoses: list[dict[str, Any]] = field(default_factory=list)
    ruled_out: list[dict[str, Any]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    log_id: str | None = None
    command: str = "logs"
    triage_version: str = ""
    id: int | None = None

    @property
    def day(self) -> str:
        return time.strftime("%Y-%m-%d", time.gmtime(self.recorded_at))

    def when(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.recorded_at))

    def name(self) -> str:
        """How the report names this crash: `crash #12 (2026-12-01 20:01 UTC, node-17)`."""
        return f"crash #{self.id} ({self.when()}, {self.host})"

    def row(self) -> tuple[Any, ...]:
        values = {**self.__dict__, "day": self.day, "failed": int(self.failed)}
        for k in ("fp_parts", "diagnoses", "ruled_out", "facts", "sources"):
            values[k] = json.dumps(jsonable(values[k]), sort_keys=True, ensure_ascii=False)
        return tuple(values[c] for c in COLUMNS)

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Record:
        d = dict(zip(("id", *COLUMNS), row, strict=True))
        for k in ("fp_parts", "diagnoses", "ruled_out", "facts", "sources"):
            d[k] = json.loads(d[k])
        d["failed"] = bool(d["failed"])
        d.pop("day")
        return cls(**d)


def jsonable(v: Any) -> Any:
    """Facts as JSON: an unreadable fact keeps its reason ({"unknown": why})."""
    if isinstance(v, Unknown):
        return {"unknown": v.reason}
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple | set | frozenset):
        return [jsonable(x) for x in v]
    if v is None or isinstance(v, str | int | float | bool):
        return v
    return str(v)


SELECT = "SELECT id, " + ", ".join(COLUMNS) + " FROM crashes"


class Store:
    """The queries, over a DB-API connection of either backend (`_cursor`, `_write`)."""

    url: str = ""
    param = "?"

    def describe(self) -> str:
        """The store, for people (a password in a URL is masked)."""
        return re.sub(r"(//[^:/@]+:)[^@]*@", r"\1***@", self.url)

    # -- backend hooks ---------------------------------------------------------------
    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        raise NotImplementedError
        yield

    @contextmanager
    def _write(self) -> Iterator[Any]:
        raise NotImplementedError
        yield

    def _sql(self, q: str) -> str:
        return q if self.param == "?" else q.replace("?", self.param)

    def close(self) -> None:
        """Release the connection."""

    # -- schema ----------------------------------------------------------------------
    def version(self) -> int | None:
        """The store's schema version; None when it has no schema yet."""
        raise NotImplementedError

    def migrate(self) -> int:
        """Bring the schema to `LATEST`; the version it had before."""
        raise NotImplementedError

    def _apply(self, cur: Any, have: int, id_type: str) -> None:
        if have > LATEST:
            raise HistoryError(
                f"{self.describe()}: schema version {have} is newer than this "
                f"triage knows ({LATEST}); upgrade triage"
            )
        for version, statements in MIGRATIONS:
            if version <= have:
                continue
            for stmt in statements:
                cur.execute(stmt.replace("{id}", id_type))
        if have == 0:
            cur.execute(self._sql("INSERT INTO triage_schema (version) VALUES (?)"), (LATEST,))
        elif have < LATEST:
            cur.execute(self._sql("UPDATE triage_schema SET version = ?"), (LATEST,))

    def ready(self) -> None:
        """Migrate when the schema is missing or old; a newer one is an error."""
        have = self.version()
        if have is None or have < LATEST:
            self.migrate()
        elif have > LATEST:
            raise HistoryError(
                f"{self.describe()}: schema version {have} is newer than this "
                f"triage knows ({LATEST}); upgrade triage"
            )

    # -- records ---------------------------------------------------------------------
    def record(self, rec: Record) -> int:
        """Store `rec`; its id."""
        q = f"INSERT INTO crashes ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
        with self._write() as cur:
            if self.param == "?":
                cur.execute(q, rec.row())
                new_id = int(cur.lastrowid)
            else:
                cur.execute(self._sql(q + " RETURNING id"), rec.row())
                new_id = int(cur.fetchone()[0])
        rec.id = new_id
        return new_id

    def query(
        self, where: str = "", args: Sequence[Any] = (), order: str = "id DESC", limit: int | None = None
    ) -> list[Record]:
        """Records matching a WHERE clause (with `?` placeholders)."""
        q = SELECT + (f" WHERE {where}" if where else "") + f" ORDER BY {order}"
        if limit is not None:
            q += f" LIMIT {int(limit)}"
        with self._cursor() as cur:
            cur.execute(self._sql(q), tuple(args))
            return [Record.from_row(r) for r in cur.fetchall()]

    def rows(self, q: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of an aggregate query (with `?` placeholders)."""
        with self._cursor() as cur:
            cur.execute(self._sql(q), tuple(args))
            return [tuple(r) for r in cur.fetchall()]

    def count(self) -> int:
        return int(self.rows("SELECT COUNT(*) FROM crashes")[0][0])


class SqliteStore(Store):
    """The embedded default: one file, WAL mode, safe for many processes at once."""

    def __init__(self, path: Path) -> None:
        self.path = path.absolute()
        self.url = f"sqlite://{self.path}"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # autocommit (isolation_level=None): transactions are begun by hand, writes
            # with BEGIN IMMEDIATE so a writer waits for the lock instead of failing
            # half-way through; the timeout is sqlite's busy handler
            self.wait = timeout_s()
            self.conn = sqlite3.connect(str(path), timeout=self.wait, isolation_level=None)
        except (OSError, sqlite3.Error) as e:
            raise HistoryError(f"{path}: cannot open ({_why(e)})") from None
        self._retry(self._wal)

    def _wal(self) -> None:
        mode = self.conn.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")

    def _retry(self, fn: Any) -> Any:
        """Run `fn`; "locked" and "busy" (which some statements report without waiting,
        like the switch to WAL) are retried until the store's wait has passed."""
        deadline = time.monotonic() + self.wait
        delay = 0.01
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as e:
                transient = "locked" in str(e) or "busy" in str(e)
                if not transient or time.monotonic() > deadline:
                    raise HistoryError(f"{self.path}: {_why(e)}") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.2)
            except sqlite3.Error as e:
                raise HistoryError(f"{self.path}: {_why(e)}") from None

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        try:
            yield self.conn.cursor()
        except sqlite3.Error as e:
            raise HistoryError(f"{self.path}: {_why(e)}") from None

    @contextmanager
    def _write(self) -> Iterator[Any]:
        self._retry(lambda: self.conn.execute("BEGIN IMMEDIATE"))
        try:
            yield self.conn.cursor()
            self.conn.execute("COMMIT")
        except sqlite3.Error as e:
            with suppress(sqlite3.Error):  # the failed statement may have ended it
                self.conn.execute("ROLLBACK")
            raise HistoryError(f"{self.path}: {_why(e)}") from None
        except BaseException:
            with suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
            raise

    def version(self) -> int | None:
        def read() -> int | None:
            try:
                row = self.conn.execute("SELECT version FROM triage_schema").fetchone()
            except sqlite3.OperationalError as e:
                if "no such table" in str(e):
                    return None
                raise
            return int(row[0]) if row else None

        return self._retry(read)  # type: ignore[no-any-return]

    def migrate(self) -> int:
        with self._write() as cur:
            cur.execute("CREATE TABLE IF NOT EXISTS triage_schema (version INTEGER NOT NULL)")
            row = cur.execute("SELECT version FROM triage_schema").fetchone()
            have = int(row[0]) if row else 0
            self._apply(cur, have, "INTEGER PRIMARY KEY AUTOINCREMENT")
        return have

    def close(self) -> None:
        with suppress(sqlite3.Error):  # a broken connection is closed all the same
            self.conn.close()


class PostgresStore(Store):
    """A shared store for a team or a cluster (psycopg 3: pip install 'triage[postgres]')."""

    param = "%s"

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            import psycopg
        except ModuleNotFoundError:
            raise HistoryError(
                f"{self.describe()}: PostgreSQL needs psycopg (pip install 'triage[postgres]')"
            ) from None
        self._psycopg = psycopg
        try:
            self.conn = psycopg.connect(url, connect_timeout=max(1, round(timeout_s())), autocommit=True)
        except psycopg.Error as e:
            raise HistoryError(f"{self.describe()}: cannot connect ({_why(e)})") from None

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        try:
            with self.conn.cursor() as cur:
                yield cur
        except self._psycopg.Error as e:
            raise HistoryError(f"{self.describe()}: {_why(e)}") from None

    @contextmanager
    def _write(self) -> Iterator[Any]:
        try:
            with self.conn.transaction(), self.conn.cursor() as cur:
                yield cur
        except self._psycopg.Error as e:
            raise HistoryError(f"{self.describe()}: {_why(e)}") from None

    def version(self) -> int | None:
        with self._cursor() as cur:
            cur.execute("SELECT to_regclass('triage_schema') IS NOT NULL")
            if not cur.fetchone()[0]:
                return None
            cur.execute("SELECT version FROM triage_schema")
            row = cur.fetchone()
            return int(row[0]) if row else None

    def migrate(self) -> int:
        with self._write() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (PG_LOCK_KEY,))
            cur.execute("CREATE TABLE IF NOT EXISTS triage_schema (version INTEGER NOT NULL)")
            cur.execute("SELECT version FROM triage_schema")
            row = cur.fetchone()
            have = int(row[0]) if row else 0
            self._apply(cur, have, "BIGSERIAL PRIMARY KEY")
        return have

    def close(self) -> None:
        with suppress(self._psycopg.Error):  # a broken connection is closed all the same
            self.conn.close()


def default_path(env: dict[str, str] | os._Environ[str] | None = None) -> Path:
    """`$XDG_STATE_HOME/triage/history.sqlite` (default `~/.local/state`)."""
    env = os.environ if env is None else env
    base = env.get(STATE_ENV) or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "triage" / "history.sqlite"


def open_store(url: str | None = None) -> Store:
    """Open (and migrate) the store at `url`: postgresql://..., sqlite:///PATH, a path,
    or None for the default SQLite file."""
    store: Store
    if not url:
        store = SqliteStore(default_path())
    elif url.startswith(("postgresql://", "postgres://")):
        store = PostgresStore(url)
    elif url.startswith("sqlite:"):
        # sqlite:///abs/path, sqlite:////abs/path (SQLAlchemy's spelling), sqlite:rel/path
        store = SqliteStore(Path(re.sub(r"^/+", "/", re.sub(r"^sqlite:(//)?", "", url))).expanduser())
    elif "://" in url:
        raise HistoryError(
            f"unsupported history URL {url.split('://', 1)[0]}://...: use postgresql://... or sqlite:///PATH"
        )
    else:
        store = SqliteStore(Path(url).expanduser())
    try:
        store.ready()
    except HistoryError:
        store.close()
        raise
    return store


def _why(e: BaseException) -> str:
    """The first line of a driver's message."""
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__
