"""The store's schema: named, append-only migrations, and opening a connection.

A database records its schema version in SQLite's ``user_version`` and its owner in
``application_id`` (``LION``), and the name of every migration applied to it in the
``migrations`` table. `MIGRATIONS` is append-only: a released migration is never edited or
removed, a change is a new entry at the end, and `SCHEMA_VERSION` is their count. Opening a
store applies the missing ones in one transaction (another process doing the same at the same
moment waits on the write lock, then finds nothing left to do).

Tables (version 5):

``sessions``  id, data (the Session's own fields as JSON), default_branch, notebook (the
              notebook's path when the front end tells it; version 2), owner (the process that
              saves it), created_at, updated_at
``branches``  id, session_id, seq (the order in the session), data (the branch projection of
              ADR-0016 D2 without its messages and logs, as JSON)
``messages``  (branch_id, position) -> id, kind, data (the message as JSON); a branch's rows at
              positions 0..n-1 are its progression
``logs``      (branch_id, id) -> seq, data (the log entry as JSON, secrets redacted)
``eval_runs`` id, name, created_at, data (an evaluation's rows and labels as JSON; version 3)
``blobs``     hash -> data: the ``data:`` URL of an image or file that messages reference by
              its hash, kept once however many messages carry it (`store.blobs`; version 4)
``run_items`` (session_id, run, idx) -> data: one item of a `map` run, its branch as one
              compressed row (`lion_nb.session.batch_rows`; version 5)

Connections use WAL journaling with ``synchronous=NORMAL``: a commit survives the process
being killed at any point (SQLite's journal guarantees it), and readers never wait for the
writer. A power cut may lose the last commits, never the database.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..store_location import ensure_dir
from .errors import corrupt_error, translate, version_error

__all__ = ["APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION", "Migration", "connect", "migrate"]

APPLICATION_ID = 0x4C494F4E  # "LION"


@dataclass(frozen=True)
class Migration:
    """One step of the schema: ``name`` is recorded in the database once applied."""

    name: str
    apply: Callable[[sqlite3.Connection], None]


_INITIAL = """
        CREATE TABLE migrations (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at REAL NOT NULL
        );
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            data TEXT NOT NULL,
            default_branch TEXT,
            owner TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE TABLE branches (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            data TEXT NOT NULL
        );
        CREATE INDEX branches_by_session ON branches (session_id, seq);
        CREATE TABLE messages (
            branch_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            id TEXT NOT NULL,
            kind TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (branch_id, position)
        ) WITHOUT ROWID;
        CREATE TABLE logs (
            branch_id TEXT NOT NULL,
            id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (branch_id, id)
        );
        CREATE INDEX logs_in_order ON logs (branch_id, seq);
"""


def _initial(conn: sqlite3.Connection) -> None:
    # statement by statement: `executescript` would commit the migration's transaction first
    for statement in _INITIAL.split(";"):
        if statement.strip():
            conn.execute(statement)


def _notebook_label(conn: sqlite3.Connection) -> None:
    # `%lion load` restores *this notebook's* latest session: sessions learn which notebook
    # they belong to, and finding the latest of one notebook is an index look-up.
    conn.execute("ALTER TABLE sessions ADD COLUMN notebook TEXT")
    conn.execute("CREATE INDEX sessions_by_notebook ON sessions (notebook, updated_at)")


def _eval_runs(conn: sqlite3.Connection) -> None:
    # `session.evaluate(..., name=)` keeps each run, to compare the next one of that name with
    conn.execute(
        "CREATE TABLE eval_runs (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
        "created_at REAL NOT NULL, data TEXT NOT NULL)"
    )
    conn.execute("CREATE INDEX eval_runs_by_name ON eval_runs (name, created_at)")


def _blobs(conn: sqlite3.Connection) -> None:
    # an image repeated in every message of a branch is kept once (`lion_nb.store.blobs`);
    # rows written before keep their images inline and read back as they are
    conn.execute("CREATE TABLE blobs (hash TEXT PRIMARY KEY, data TEXT NOT NULL) WITHOUT ROWID")


def _run_items(conn: sqlite3.Connection) -> None:
    # a `map` run's items are rows, not branches of the session: a million of them must
    # neither be restored with the session nor listed as its branches
    conn.execute(
        "CREATE TABLE run_items (session_id TEXT NOT NULL, run TEXT NOT NULL, "
        "idx INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (session_id, run, idx)) "
        "WITHOUT ROWID"
    )


#: append-only; see the module docstring
MIGRATIONS: tuple[Migration, ...] = (
    Migration("0001_initial", _initial),
    Migration("0002_notebook_label", _notebook_label),
    Migration("0003_eval_runs", _eval_runs),
    Migration("0004_blobs", _blobs),
    Migration("0005_run_items", _run_items),
)
SCHEMA_VERSION = len(MIGRATIONS)


def _version(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """The schema version, the application id and the number of tables, read inside one
    transaction: read one by one, another process's migration could commit in between and
    make a store it is creating look like another program's database."""
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    finally:
        if own:
            conn.execute("COMMIT")
    return version, app, tables


def _check(conn: sqlite3.Connection, path: Path, version: int, app: int, tables: int) -> None:
    if app not in (0, APPLICATION_ID) or (app == 0 and version != 0):
        raise corrupt_error(path, f"application id {app:#x}, not lion_nb's")
    if app == 0 and tables:  # a new file has no tables; somebody else's database has
        raise corrupt_error(path, "a SQLite database of another program")
    if version > SCHEMA_VERSION:
        raise version_error(path, version, SCHEMA_VERSION)


def migrate(conn: sqlite3.Connection, path: Path, target: int = SCHEMA_VERSION) -> int:
    """Bring the database to schema ``target`` (the latest by default); returns the version
    found. Raises `StoreVersionError` for a newer database, `StoreCorruptError` for a file
    that is not a lion_nb store."""
    version, app, tables = _version(conn)
    _check(conn, path, version, app, tables)
    if version >= target:
        return version
    conn.execute("BEGIN IMMEDIATE")
    try:
        version, app, tables = _version(conn)  # another process may have migrated meanwhile
        _check(conn, path, version, app, tables)
        found = version
        for number in range(version + 1, target + 1):
            step = MIGRATIONS[number - 1]
            step.apply(conn)
            conn.execute(
                "INSERT INTO migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (number, step.name, time.time()),
            )
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {int(target)}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return found


def _busy(exc: BaseException) -> bool:
    return getattr(exc, "sqlite_errorname", "").startswith("SQLITE_BUSY")


def _use_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switch the file to WAL journaling, waiting up to ``timeout`` for other connections.

    SQLite answers a journal-mode change that meets another connection's lock with
    ``SQLITE_BUSY`` at once, without its busy handler: two kernels opening a new store at the
    same moment would otherwise have one of them fail. A file already in WAL mode stays in it,
    so this retries only while stores are being created.
    """
    from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

    for attempt in Retrying(
        retry=retry_if_exception(_busy),
        stop=stop_after_delay(timeout),
        wait=wait_exponential(multiplier=0.005, max=0.1),
        reraise=True,
    ):
        with attempt:
            conn.execute("PRAGMA journal_mode = WAL").fetchone()


def connect(
    path: Path,
    *,
    timeout: float,
    pragmas: Mapping[str, Any] | None = None,
    target: int = SCHEMA_VERSION,
) -> sqlite3.Connection:
    """A connection to the store at ``path``, migrated to ``target``, in WAL mode. Every
    failure is a `StoreError` naming the file."""
    conn = None
    try:
        ensure_dir(path.parent)
        conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        _use_wal(conn, timeout)
        conn.execute("PRAGMA synchronous = NORMAL")
        for name, value in (pragmas or {}).items():
            if not name.isidentifier() or not isinstance(value, (int, str)):
                raise ValueError(f"PRAGMA {name!r} = {value!r} is not a simple setting")
            conn.execute(f"PRAGMA {name} = {value}")
        migrate(conn, path, target)
        return conn
    except BaseException as exc:
        if conn is not None:
            conn.close()
        if isinstance(exc, (sqlite3.Error, OSError)):
            raise translate(exc, path, timeout=timeout) from exc
        raise
