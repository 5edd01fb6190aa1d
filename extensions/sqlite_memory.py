"""A `MemoryStore` on SQLite full-text search, and ``remember`` / ``recall`` operations that
give a notebook a memory which survives kernel restarts.

`SQLiteMemoryStore` implements the six members of `lion_nb.MemoryStore`, so it can be any
branch's or session's memory (``Session(memory=store)``, ``session.new_branch(memory=
store)``) and works with the memory-recall provider. Design:

- one table of records (``seq`` for insertion order, the record's ``id``, ``content``,
  ``metadata`` as JSON, ``created_at``) and an FTS5 index over ``content`` whose rowid is
  ``seq``; both are written in one transaction, so the index never disagrees with the
  records (and it is rebuilt on opening if a process without FTS5 wrote records meanwhile);
- search matches any query word (``"a" OR "b"``: query text is reduced to its words, so
  nothing a user types is FTS syntax), with Porter stemming ("apple" finds "apples"),
  ranked by BM25, ties in insertion order;
- without FTS5 (an SQLite built without it) the store still works: it says so once with a
  `UserWarning`, ``store.fts`` is ``False``, and search ranks by shared words like
  `InMemoryStore` (no stemming). ``fts=True`` makes a missing FTS5 an error instead;
- every call runs in a worker thread (``anyio.to_thread``), never on the event loop; one
  connection serves them under a lock; a file database uses WAL so readers do not block;
- ``PRAGMA user_version`` holds the schema version; a file from a newer version is refused
  with an error naming it.

The extension (``extend``) opens a store -- ``path=``, else ``$LION_NB_MEMORY_DB``, else
``.lion_nb/memory.sqlite3`` in the working directory (the notebook's folder) -- and
registers ``remember`` (store the instruction's text; the same text twice is kept once, so
re-running a cell is harmless) and ``recall`` (the best matches, as Markdown lines). It
returns the store, so ``record.value`` reaches it.

    %lion extend ../extensions/sqlite_memory.py
    %%lion --op remember
    The client prefers morning meetings.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any
from uuid import uuid4

import anyio

from lion_nb.protocols.memory import MemoryRecord

__all__ = ["SCHEMA_VERSION", "SQLiteMemoryStore", "extend", "fts5_available"]

SCHEMA_VERSION = 1
_WORDS = re.compile(r"\w+", re.UNICODE)
_FTS_TABLE = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts "
    "USING fts5(content, tokenize = 'porter unicode61 remove_diacritics 2')"
)


def fts5_available() -> bool:
    """Whether this Python's SQLite can create FTS5 tables."""
    connection = sqlite3.connect(":memory:")
    try:
        connection.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        connection.close()


class SQLiteMemoryStore:
    """Memory records in an SQLite database, searched with FTS5 (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, fts: bool | None = None):
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        available = fts5_available() if fts is not False else False
        if fts is True and not available:
            raise RuntimeError(
                f"SQLite {sqlite3.sqlite_version} here has no FTS5, and `fts=True` requires it. "
                "Pass `fts=None` to search by shared words instead."
            )
        if fts is None and not available:
            warnings.warn(
                f"SQLite {sqlite3.sqlite_version} here has no FTS5: `SQLiteMemoryStore` searches "
                "by shared words instead (no stemming, no BM25 ranking).",
                UserWarning,
                stacklevel=2,
            )
        self.fts = available
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            os.path.expanduser(self.path), check_same_thread=False, isolation_level=None
        )
        try:
            self._open()
        except BaseException:
            self._db.close()
            raise

    def _open(self) -> None:
        db = self._db
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise RuntimeError(
                f"`{self.path}` was written by a newer version of this store (schema {version}; "
                f"this one reads {SCHEMA_VERSION}). Open it with that version, or use another file."
            )
        if self.path != ":memory:":
            db.execute("PRAGMA journal_mode=WAL")
        with _transaction(db):
            db.execute(
                "CREATE TABLE IF NOT EXISTS memory ("
                " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
                " id TEXT NOT NULL UNIQUE,"
                " content TEXT NOT NULL,"
                " metadata TEXT NOT NULL DEFAULT '{}',"
                " created_at REAL NOT NULL)"
            )
            db.execute("CREATE INDEX IF NOT EXISTS memory_content ON memory(content)")
            if self.fts:
                db.execute(_FTS_TABLE)
                records = db.execute("SELECT count(*) FROM memory").fetchone()[0]
                indexed = db.execute("SELECT count(*) FROM memory_fts").fetchone()[0]
                if records != indexed:  # written where FTS5 was missing: index it now
                    db.execute("DELETE FROM memory_fts")
                    db.execute(
                        "INSERT INTO memory_fts(rowid, content) SELECT seq, content FROM memory"
                    )
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # -- the MemoryStore protocol ---------------------------------------------------------------
    async def add(self, content: str, *, metadata: dict[str, Any] | None = None) -> str:
        if not isinstance(content, str):
            raise TypeError(
                f"`SQLiteMemoryStore.add` stores text, got `{type(content).__name__}`; "
                "pass `str(value)` or a JSON string."
            )
        record_id = uuid4().hex
        data = json.dumps(dict(metadata or {}), default=str, ensure_ascii=False)
        await self._run(self._add, record_id, content, data, time.time())
        return record_id

    async def get(self, id: str) -> MemoryRecord | None:
        rows = await self._run(self._select, "WHERE id = ?", (id,))
        return rows[0] if rows else None

    async def search(self, query: str, limit: int = 5) -> list[MemoryRecord]:
        words = list(dict.fromkeys(w.casefold() for w in _WORDS.findall(query or "")))
        if not words or limit <= 0:
            return []
        if self.fts:
            return await self._run(self._search_fts, words, limit)
        return await self._run(self._search_words, words, limit)

    async def delete(self, id: str) -> bool:
        return await self._run(self._delete, id)

    async def list(self) -> list[MemoryRecord]:
        return await self._run(self._select, "", ())

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT count(*) FROM memory").fetchone()[0]

    # -- beyond the protocol --------------------------------------------------------------------
    async def find(self, content: str) -> MemoryRecord | None:
        """The oldest record whose content is exactly ``content``, or ``None``."""
        rows = await self._run(self._select, "WHERE content = ?", (content,), 1)
        return rows[0] if rows else None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SQLiteMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        search = "fts5" if self.fts else "words"
        return f"SQLiteMemoryStore({self.path!r}, search={search})"

    # -- in the worker thread -------------------------------------------------------------------
    async def _run(self, func: Any, *args: Any) -> Any:
        def locked() -> Any:
            with self._lock:
                return func(*args)

        return await anyio.to_thread.run_sync(locked)

    def _add(self, record_id: str, content: str, metadata: str, created: float) -> None:
        db = self._db
        with _transaction(db):
            cursor = db.execute(
                "INSERT INTO memory(id, content, metadata, created_at) VALUES (?, ?, ?, ?)",
                (record_id, content, metadata, created),
            )
            if self.fts:
                db.execute(
                    "INSERT INTO memory_fts(rowid, content) VALUES (?, ?)",
                    (cursor.lastrowid, content),
                )

    def _delete(self, record_id: str) -> bool:
        db = self._db
        with _transaction(db):
            row = db.execute("SELECT seq FROM memory WHERE id = ?", (record_id,)).fetchone()
            if row is None:
                return False
            db.execute("DELETE FROM memory WHERE seq = ?", row)
            if self.fts:
                db.execute("DELETE FROM memory_fts WHERE rowid = ?", row)
        return True

    def _select(
        self, where: str, args: tuple[Any, ...], limit: int | None = None
    ) -> list[MemoryRecord]:
        sql = f"SELECT id, content, metadata, created_at FROM memory {where} ORDER BY seq"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_record(row) for row in self._db.execute(sql, args)]

    def _search_fts(self, words: list[str], limit: int) -> list[MemoryRecord]:
        match = " OR ".join(f'"{w}"' for w in words)  # words only: no FTS syntax gets through
        rows = self._db.execute(
            "SELECT m.id, m.content, m.metadata, m.created_at FROM memory_fts f "
            "JOIN memory m ON m.seq = f.rowid WHERE memory_fts MATCH ? "
            "ORDER BY f.rank, m.seq LIMIT ?",
            (match, limit),
        )
        return [_record(row) for row in rows]

    def _search_words(self, words: list[str], limit: int) -> list[MemoryRecord]:
        wanted = set(words)
        like = " OR ".join("content LIKE ?" for _ in words)
        rows = self._db.execute(
            f"SELECT id, content, metadata, created_at, seq FROM memory WHERE {like} ORDER BY seq",
            [f"%{w}%" for w in words],
        )
        scored = []
        for row in rows:
            counts = Counter(w.casefold() for w in _WORDS.findall(row[1]))
            shared = wanted & counts.keys()
            if shared:
                scored.append((-len(shared), -sum(counts[w] for w in shared), row[4], row[:4]))
        scored.sort(key=lambda item: item[:3])
        return [_record(item[3]) for item in scored[:limit]]


class _transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error) on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")


def _record(row: Any) -> MemoryRecord:
    record_id, content, metadata, created = row
    return MemoryRecord(
        id=record_id, content=content, metadata=json.loads(metadata), created_at=created
    )


# -- the extension ------------------------------------------------------------------------------
def default_path() -> Path:
    """``$LION_NB_MEMORY_DB``, else ``.lion_nb/memory.sqlite3`` in the working directory."""
    given = os.environ.get("LION_NB_MEMORY_DB")
    return Path(given).expanduser() if given else Path(".lion_nb") / "memory.sqlite3"


def operations(store: SQLiteMemoryStore) -> dict[str, Any]:
    """The ``remember`` and ``recall`` operations on ``store``."""

    async def remember(branch: Any, instruction: Any) -> str:
        """Store the instruction's text (once: the same text again is not duplicated)."""
        text = str(instruction).strip()
        if not text:
            raise ValueError("`remember` needs some text to store.")
        if await store.find(text) is None:
            await store.add(text, metadata={"branch": branch.name})
        return f"Remembered: {text}"

    async def recall(branch: Any, instruction: Any, limit: int = 5) -> str:
        """The remembered texts that best match the instruction, best first."""
        records = await store.search(str(instruction), limit=limit)
        if not records:
            return "Nothing remembered matches that."
        return "\n".join(f"- {record.content}" for record in records)

    return {"remember": remember, "recall": recall}


def extend(session: Any, path: str | os.PathLike[str] | None = None) -> SQLiteMemoryStore:
    """Open the store and register ``remember`` and ``recall`` on ``session``."""
    store = SQLiteMemoryStore(path if path is not None else default_path())
    try:
        for name, func in operations(store).items():
            session.register_operation(name, func)
    except BaseException:
        store.close()
        raise
    return store
