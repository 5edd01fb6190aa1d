"""`SessionStore`: sessions in one SQLite file, written and read on the store's own thread.

Writes arrive as *units*: an autosaved message is one unit (one row, plus the session's
``updated_at``). The thread commits each unit as soon as it is free: one transaction, or --
when several units queued up while it was busy -- one transaction for all of them, so a slow
disk costs fewer commits, not a longer wait for the loop. A crash therefore loses at most what
was not committed yet: the messages in flight. A unit belongs to a *stream* (one autosaver of
one session): once a unit of a stream fails, the later units of that stream are dropped rather
than applied over the hole, and the stream's owner learns the error. Every unit but the first
of a stream checks that the session row still names the stream as its owner, so two processes
never interleave writes to one session: the one that restored it last owns it.

The public methods wait for the thread (they are for commands and scripts); the autosaver
never waits. Each store path has one `SessionStore` per process (`open_store`), so two
autosavers of one notebook share a thread and a connection.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ItemNotFoundError
from ..store_location import store_path
from .blobs import find_refs, verify
from .errors import StoreError, conflict_error, translate
from .rows import BranchRows, SessionRows
from .units import Stream, Unit
from .worker import Worker

if TYPE_CHECKING:
    import sqlite3

    from ..session.session import Session
    from .autosave import Autosaver

__all__ = ["SessionInfo", "SessionStore", "open_store"]

TIMEOUT_ENV = "LION_NB_STORE_TIMEOUT"
DEFAULT_TIMEOUT = 5.0


def _default_timeout() -> float:
    raw = os.environ.get(TIMEOUT_ENV, "")
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if value >= 0 else DEFAULT_TIMEOUT


@dataclass(frozen=True)
class SessionInfo:
    """One saved session, as `SessionStore.sessions` lists it."""

    id: str
    name: str | None
    notebook: str | None
    branches: int
    messages: int
    default_branch: str | None  # its name (or id, when unnamed)
    created_at: float
    updated_at: float


# -- write units -----------------------------------------------------------------------------------
def _apply(conn: sqlite3.Connection, unit: Unit, now: float) -> None:
    stream = unit.stream
    sid = stream.session_id
    if unit.replace:
        _delete_session(conn, sid, keep_row=True)
    if unit.claim is not None:
        header, default, notebook = unit.claim
        conn.execute(
            "INSERT INTO sessions (id, data, default_branch, notebook, owner, created_at, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
            "data = excluded.data, default_branch = excluded.default_branch, "
            "notebook = coalesce(excluded.notebook, sessions.notebook), "
            "owner = excluded.owner, updated_at = excluded.updated_at",
            (sid, header, default, notebook, stream.owner, now, now),
        )
    else:
        cur = conn.execute(
            "UPDATE sessions SET updated_at = ? WHERE id = ? AND owner = ?",
            (now, sid, stream.owner),
        )
        if cur.rowcount != 1:
            raise conflict_error(_path_of(conn), sid)
    for op in unit.ops:
        _OPS[op[0]](conn, sid, *op[1:])


def _path_of(conn: sqlite3.Connection) -> Path:
    row = conn.execute("PRAGMA database_list").fetchone()
    return Path(row[2]) if row and row[2] else Path("?")


def _op_session(conn: Any, sid: str, header: str, default: str | None) -> None:
    conn.execute(
        "UPDATE sessions SET data = ?, default_branch = ? WHERE id = ?", (header, default, sid)
    )


def _op_branch(conn: Any, sid: str, branch_id: str, seq: int, header: str) -> None:
    conn.execute(
        "INSERT INTO branches (id, session_id, seq, data) VALUES (?, ?, ?, ?) ON CONFLICT (id) "
        "DO UPDATE SET session_id = excluded.session_id, seq = excluded.seq, data = excluded.data",
        (branch_id, sid, seq, header),
    )


def _op_order(conn: Any, sid: str, branch_ids: list[str]) -> None:
    conn.executemany(
        "UPDATE branches SET seq = ? WHERE id = ? AND session_id = ?",
        [(i, b, sid) for i, b in enumerate(branch_ids)],
    )


def _op_drop(conn: Any, sid: str, branch_id: str) -> None:
    for table, key in (("messages", "branch_id"), ("logs", "branch_id"), ("branches", "id")):
        conn.execute(f"DELETE FROM {table} WHERE {key} = ?", (branch_id,))


def _op_put(conn: Any, sid: str, branch_id: str, rows: list[tuple[int, str, str, str]]) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO messages (branch_id, position, id, kind, data) "
        "VALUES (?, ?, ?, ?, ?)",
        [(branch_id, *row) for row in rows],
    )


def _op_blobs(conn: Any, sid: str, branch_id: str, blobs: dict[str, str]) -> None:
    # by content hash: a blob already kept (by any message of any session) is not written again
    conn.executemany("INSERT OR IGNORE INTO blobs (hash, data) VALUES (?, ?)", list(blobs.items()))


def _op_cut(conn: Any, sid: str, branch_id: str, position: int) -> None:
    conn.execute(
        "DELETE FROM messages WHERE branch_id = ? AND position >= ?", (branch_id, position)
    )


def _op_log(conn: Any, sid: str, branch_id: str, rows: list[tuple[str, int, str]]) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO logs (branch_id, id, seq, data) VALUES (?, ?, ?, ?)",
        [(branch_id, *row) for row in rows],
    )


def _op_unlog(conn: Any, sid: str, branch_id: str, ids: list[str]) -> None:
    conn.executemany(
        "DELETE FROM logs WHERE branch_id = ? AND id = ?", [(branch_id, i) for i in ids]
    )


_OPS: dict[str, Callable[..., None]] = {
    "session": _op_session,
    "branch": _op_branch,
    "order": _op_order,
    "drop": _op_drop,
    "put": _op_put,
    "blobs": _op_blobs,
    "cut": _op_cut,
    "log": _op_log,
    "unlog": _op_unlog,
}


def _delete_session(conn: Any, sid: str, *, keep_row: bool = False) -> int:
    ids = [r[0] for r in conn.execute("SELECT id FROM branches WHERE session_id = ?", (sid,))]
    for branch_id in ids:
        _op_drop(conn, sid, branch_id)
    if keep_row:  # a first save replacing the session's rows: its runs' items stay
        return 1
    conn.execute("DELETE FROM run_items WHERE session_id = ?", (sid,))
    return conn.execute("DELETE FROM sessions WHERE id = ?", (sid,)).rowcount


# -- reading -----------------------------------------------------------------------------------
def _read_session(conn: Any, sid: str) -> SessionRows | None:
    row = conn.execute(
        "SELECT data, default_branch, notebook FROM sessions WHERE id = ?", (sid,)
    ).fetchone()
    if row is None:
        return None
    rows = SessionRows(id=sid, header=row[0], default_branch=row[1], notebook=row[2])
    for branch_id, header in conn.execute(
        "SELECT id, data FROM branches WHERE session_id = ? ORDER BY seq", (sid,)
    ).fetchall():
        branch = BranchRows(id=branch_id, header=header)
        # one pass over the branch's rows, aggregated by SQLite: positions, ids and one JSON
        # array of the messages (validated in one pass when restored). The three lists are
        # built from the same rows in the same order, so positions in order prove the array
        # is in order, without looking at a message.
        n, positions, ids, array = conn.execute(_ARRAY, (branch_id,)).fetchone()
        if n:
            branch.message_ids = ids.split(_SEP)
            branch.messages = array
            branch.contiguous = positions == ",".join(map(str, range(n)))
            if not branch.contiguous:
                found = list(map(int, positions.split(",")))
                branch.ordered = found == sorted(found)  # positions are a key: no repeats
        branch.logs = conn.execute(
            "SELECT id, seq, data FROM logs WHERE branch_id = ? ORDER BY seq", (branch_id,)
        ).fetchall()
        rows.branches.append(branch)
    wanted: set[str] = set()
    for branch in rows.branches:
        wanted |= find_refs(branch.messages)
    if wanted:
        rows.blobs = _read_blobs(conn, wanted)
    return rows


def _read_blobs(conn: Any, hashes: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    keys = sorted(hashes)
    for start in range(0, len(keys), 500):  # under SQLite's limit on bound parameters
        chunk = keys[start : start + 500]
        marks = ",".join("?" * len(chunk))
        out.update(conn.execute(f"SELECT hash, data FROM blobs WHERE hash IN ({marks})", chunk))
    return out


def _forget_blobs(conn: Any) -> int:
    """Delete the blobs no message references any more (after a session is deleted)."""
    return conn.execute(
        "DELETE FROM blobs WHERE NOT EXISTS (SELECT 1 FROM messages "
        "WHERE instr(messages.data, blobs.hash) > 0)"
    ).rowcount


_SEP = "\x1f"  # the unit separator: never in an id
_ARRAY = (
    "SELECT count(*), group_concat(position, ','), group_concat(id, char(31)), "
    "'[' || group_concat(data, ',') || ']' FROM "
    "(SELECT position, id, data FROM messages WHERE branch_id = ? ORDER BY position)"
)


def _resolve(conn: Any, ref: str) -> list[str]:
    """The ids that are ``ref`` or start with it, most recently saved first (a look-up in
    the sessions table alone: resolving must not count every message, as listing does)."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT id FROM sessions WHERE substr(id, 1, ?) = ? ORDER BY updated_at DESC",
            (len(ref), ref),
        )
    ]


_LIST = """
SELECT s.id, s.data, s.notebook, s.default_branch, s.created_at, s.updated_at,
       (SELECT count(*) FROM branches b WHERE b.session_id = s.id),
       (SELECT count(*) FROM messages m JOIN branches b ON m.branch_id = b.id
         WHERE b.session_id = s.id),
       (SELECT b.data FROM branches b WHERE b.id = s.default_branch)
FROM sessions s ORDER BY s.updated_at DESC
"""


def _list(conn: Any) -> list[SessionInfo]:
    from .rows import header_name

    out = []
    for sid, data, notebook, default, created, updated, n_b, n_m, branch in conn.execute(_LIST):
        name = header_name(data)  # a damaged header lists without a name; loading says why
        default_name = None
        if branch is not None:
            default_name = header_name(branch) or default
        out.append(SessionInfo(sid, name, notebook, n_b, n_m, default_name, created, updated))
    return out


# -- the store ------------------------------------------------------------------------------------
_OPEN: weakref.WeakValueDictionary[Path, SessionStore] = weakref.WeakValueDictionary()
_OPEN_LOCK = threading.Lock()


class SessionStore:
    """Saved sessions in the SQLite file at ``path`` (default: see `lion_nb.store_location`).

    ``timeout`` is how long a write waits for another process's lock (default 5 s, or
    ``LION_NB_STORE_TIMEOUT``); ``pragmas`` are extra SQLite settings for every connection
    (for example ``{"max_page_count": 10_000}`` caps the file's size). Nothing is opened or
    created until the first call that needs the file.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        timeout: float | None = None,
        pragmas: Mapping[str, Any] | None = None,
    ):
        self.path = store_path(path)
        self.timeout = _default_timeout() if timeout is None else float(timeout)
        self.pragmas = dict(pragmas or {})
        self._worker = Worker(self._connect, name=f"lion_nb-store:{self.path.name}")
        self._batch: list[Unit] = []
        self._batch_future: Future | None = None
        self._batch_lock = threading.Lock()
        _track(self)

    def __repr__(self) -> str:
        return f"SessionStore({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        from .schema import connect

        return connect(self.path, timeout=self.timeout, pragmas=self.pragmas)

    # -- running on the store's thread -------------------------------------------------------------
    def submit(self, job: Callable[[sqlite3.Connection], Any]) -> Future:
        """Run ``job(connection)`` on the store's thread; SQLite and file errors arrive in the
        future as `StoreError`. Async code can ``await asyncio.wrap_future(...)`` it."""
        path, timeout = self.path, self.timeout

        def guarded(conn: Any) -> Any:
            import sqlite3

            try:
                return job(conn)
            except (sqlite3.Error, OSError) as exc:
                raise translate(exc, path, timeout=timeout) from exc

        return self._worker.submit(guarded)

    def _call(self, job: Callable[[Any], Any]) -> Any:
        return self.submit(job).result()

    def write(self, unit: Unit) -> Future:
        """Queue one unit; never waits. Units queued while the thread is busy are applied
        together: each stream's run of them in one transaction (see the module docstring).
        The future resolves once they are; a failure is the stream's (``unit.stream.failure``)."""
        with self._batch_lock:
            self._batch.append(unit)
            future = self._batch_future
            new = future is None
            if new:
                future = self._batch_future = self._worker.submit(self._drain)
        if new:  # outside the lock: a future already done runs the callback right here
            future.add_done_callback(self._drained)
        return future

    def _take(self) -> list[Unit]:
        with self._batch_lock:
            units, self._batch, self._batch_future = self._batch, [], None
        return units

    def _drain(self, conn: sqlite3.Connection) -> None:
        """On the store's thread: apply the queued units, one transaction per stream's run."""
        units = self._take()
        start = 0
        while start < len(units):
            stream = units[start].stream
            end = start
            while end < len(units) and units[end].stream is stream:
                end += 1
            if stream.failure is None:
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    now = time.time()
                    for unit in units[start:end]:
                        _apply(conn, unit, now)
                    conn.execute("COMMIT")
                except Exception as exc:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    stream.failure = translate(exc, self.path, timeout=self.timeout)
            start = end

    def _drained(self, future: Future) -> None:
        error = future.exception()
        if error is None:
            return
        if not isinstance(error, StoreError):  # pragma: no cover - a bug, not a file problem
            error = StoreError(f"Saving to `{self.path}` failed: {error}", path=self.path)
        for unit in self._take():  # opening the file failed: nothing of them was written
            if unit.stream.failure is None:
                unit.stream.failure = error

    def flush(self, timeout: float | None = None) -> None:
        """Wait until everything queued so far is written (errors are the autosaver's)."""
        done = self._worker.submit(lambda conn: None) if self._worker.pending else None
        if done is not None:
            try:
                done.result(timeout)
            except StoreError:
                pass

    @property
    def pending(self) -> int:
        """Units and calls queued and not finished yet."""
        return self._worker.pending

    def close(self, timeout: float | None = 10.0) -> None:
        """Write what is queued, then close the connection and the thread."""
        self._worker.close(timeout)

    # -- sessions --------------------------------------------------------------------------------
    def exists(self) -> bool:
        """Whether the database exists, or will once the queued writes are done (listing and
        loading never create it)."""
        return self._worker.pending > 0 or self.path.exists()

    def sessions(self) -> list[SessionInfo]:
        """The saved sessions, most recently saved first."""
        if not self.exists():
            return []
        return self._call(_list)

    def resolve(self, ref: str) -> str:
        """The full id of the session whose id is ``ref`` or starts with it."""
        ref = ref.strip()
        found = self._call(lambda conn: _resolve(conn, ref)) if ref and self.exists() else []
        return self._one(ref, found)

    def _one(self, ref: str, found: list[str]) -> str:
        """The one id found for ``ref``; none or several is an `ItemNotFoundError`."""
        if len(found) == 1:
            return found[0]
        if not found:
            raise ItemNotFoundError(f"No saved session `{ref}` in `{self.path}`.")
        raise ItemNotFoundError(
            f"`{ref}` starts {len(found)} session ids ({', '.join(f[:12] for f in found)}); "
            "give more of the id."
        )

    def latest(self, *, notebook: str | None = None, exclude: str | None = None) -> str | None:
        """The id of the most recently saved session (of ``notebook`` when given)."""
        for info in self.sessions():
            if info.id == exclude:
                continue
            if notebook is None or info.notebook == notebook:
                return info.id
        return None

    def read(self, session_id: str) -> SessionRows:
        """The rows of one session (for restoring it with its autosave state)."""
        rows = self._call(lambda conn: _read_session(conn, session_id))
        if rows is None:
            raise ItemNotFoundError(f"No saved session `{session_id}` in `{self.path}`.")
        verify(rows.blobs, rows.id, self.path)  # here, not on the thread the autosaves use
        return rows

    def load(self, session_id: str) -> Session:
        """A saved session, rebuilt (tools and named operations must be registered again)."""
        from .rows import build_session

        ref = session_id.strip()
        if not (ref and self.exists()):
            self._one(ref, [])

        def job(conn: Any) -> SessionRows | list[str]:  # resolved and read in one visit
            found = _resolve(conn, ref)
            return _read_session(conn, found[0]) if len(found) == 1 else found

        rows = self._call(job)
        if isinstance(rows, list):
            self._one(ref, rows)
        if rows is None:  # deleted between the two statements by another process
            raise ItemNotFoundError(f"No saved session `{ref}` in `{self.path}`.")
        verify(rows.blobs, rows.id, self.path)
        return build_session(rows)

    def delete(self, session_id: str) -> bool:
        """Delete a saved session and everything in it; ``False`` if there was none."""
        full = self.resolve(session_id)

        def job(conn: Any) -> bool:
            conn.execute("BEGIN IMMEDIATE")
            deleted = _delete_session(conn, full)
            _forget_blobs(conn)
            conn.execute("COMMIT")
            return bool(deleted)

        return self._call(job)

    def save(self, session: Session, *, notebook: str | None = None) -> None:
        """Write ``session`` whole, replacing what the store holds of it, and wait."""
        from .autosave import full_unit

        unit = full_unit(Stream(str(session.id)), session, notebook, replace=True)
        self.write(unit).result()
        if unit.stream.failure is not None:
            raise unit.stream.failure

    def autosave(
        self,
        session: Session,
        *,
        notebook: str | None = None,
        on_failure: Callable[[StoreError], None] | None = None,
    ) -> Autosaver:
        """Follow ``session``: save every recorded message from now on (see `Autosaver`)."""
        from .autosave import Autosaver

        return Autosaver(self, session, notebook=notebook, on_failure=on_failure)


def open_store(path: str | os.PathLike[str] | None = None, **options: Any) -> SessionStore:
    """The process's `SessionStore` for ``path`` (one per file, so one writer thread)."""
    resolved = store_path(path)
    with _OPEN_LOCK:
        store = _OPEN.get(resolved)
        if store is None or store._worker._closed:
            store = SessionStore(resolved, **options)
            _OPEN[resolved] = store
        return store


_ALL: weakref.WeakSet[SessionStore] = weakref.WeakSet()
_AT_EXIT: list[bool] = []


def _track(store: SessionStore) -> None:
    if not _AT_EXIT:
        atexit.register(_close_all)
        _AT_EXIT.append(True)
    _ALL.add(store)


def _close_all() -> None:
    for store in list(_ALL):
        try:
            store.close(timeout=5.0)
        except Exception:
            pass
