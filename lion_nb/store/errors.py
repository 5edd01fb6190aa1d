"""What can go wrong with the session store, each error naming the file and the way out.

::

    LionError
    └── StoreError                 the store cannot be used (``path`` names the file)
        ├── StoreVersionError      written by a newer lion_nb (a newer schema)
        ├── StoreCorruptError      not a lion_nb store, or damaged
        ├── StoreLockedError       another program holds a lock past the wait
        ├── StoreFullError         the disk, or the database's size limit, is full
        └── StoreConflictError     another kernel took over saving this session

    UserWarning
    └── StoreWarning               autosave turned itself off (the error is in the text)

`translate` turns a ``sqlite3`` or ``OSError`` into the right one. Nothing here imports
``sqlite3``: the error codes are read off the exception.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import LionError

__all__ = [
    "StoreConflictError",
    "StoreCorruptError",
    "StoreError",
    "StoreFullError",
    "StoreLockedError",
    "StoreVersionError",
    "StoreWarning",
    "translate",
]

ELSEWHERE = "or use another store file (`LION_NB_STORE`, or `%config LionMagics.store_path`)"


class StoreError(LionError):
    """The session store at ``path`` cannot be used; the message says why and what to do."""

    def __init__(self, message: str, *, path: str | Path | None = None):
        super().__init__(message)
        self.path = str(path) if path is not None else None


class StoreVersionError(StoreError):
    """The database was written by a newer lion_nb."""


class StoreCorruptError(StoreError):
    """The file is not a lion_nb session store, or it is damaged."""


class StoreLockedError(StoreError):
    """Another program held a lock on the database for longer than the store waits."""


class StoreFullError(StoreError):
    """The disk is full, or the database reached its size limit."""


class StoreConflictError(StoreError):
    """Another process now saves this session (it restored it later)."""


class StoreWarning(UserWarning):
    """Autosave stopped; the conversation goes on in memory."""


def version_error(path: Path, found: int, supported: int) -> StoreVersionError:
    return StoreVersionError(
        f"The session store `{path}` was written by a newer lion_nb (store schema {found}; "
        f"this lion_nb reads up to {supported}). Upgrade lion_nb (`pip install -U lion-nb`), "
        f"{ELSEWHERE}.",
        path=path,
    )


def corrupt_error(path: Path, detail: str) -> StoreCorruptError:
    return StoreCorruptError(
        f"`{path}` is not a lion_nb session store, or it is damaged (SQLite: {detail}). Move it "
        f"aside (`mv {path} {path}.broken`; `sqlite3 {path}.broken .recover` may rescue what it "
        f"holds) and a new store is created in its place, {ELSEWHERE}.",
        path=path,
    )


def conflict_error(path: Path, session_id: str) -> StoreConflictError:
    return StoreConflictError(
        f"Session `{session_id}` in `{path}` is now saved by another kernel (it restored the "
        "session after this one did), or it was deleted from the store. This kernel stops saving "
        "it; `%lion save FILE` (or `Session.to_dict()`) still exports what it holds.",
        path=path,
    )


def _code(exc: BaseException) -> str:
    name = getattr(exc, "sqlite_errorname", None)  # Python 3.11+
    if name:
        return str(name)
    text = str(exc).lower()
    for needle, code in (
        ("not a database", "SQLITE_NOTADB"),
        ("malformed", "SQLITE_CORRUPT"),
        ("locked", "SQLITE_BUSY"),
        ("busy", "SQLITE_BUSY"),
        ("full", "SQLITE_FULL"),
    ):
        if needle in text:
            return code
    return ""


def translate(exc: BaseException, path: Path, *, timeout: float | None = None) -> StoreError:
    """The `StoreError` for a ``sqlite3`` error or an ``OSError`` met while using ``path``."""
    if isinstance(exc, StoreError):
        return exc
    detail = str(exc) or type(exc).__name__
    code = _code(exc).split("_")[0:2]
    kind = "_".join(code)
    if kind in ("SQLITE_NOTADB", "SQLITE_CORRUPT"):
        return corrupt_error(path, detail)
    if kind in ("SQLITE_BUSY", "SQLITE_LOCKED"):
        waited = f" for {timeout:g} s" if timeout is not None else ""
        return StoreLockedError(
            f"The session store `{path}` is locked by another program (SQLite: {detail}; waited"
            f"{waited}). Close the program that holds it (another kernel in the middle of a long "
            f"write, an open `sqlite3` shell), {ELSEWHERE}.",
            path=path,
        )
    if kind == "SQLITE_FULL" or getattr(exc, "errno", None) == 28:  # ENOSPC
        return StoreFullError(
            f"The session store `{path}` is full: the disk has no space left, or the database "
            f"reached its size limit (SQLite: {detail}). Free some space, {ELSEWHERE}.",
            path=path,
        )
    return StoreError(
        f"The session store `{path}` cannot be used ({type(exc).__name__}: {detail}). Check that "
        f"its folder exists and is writable, {ELSEWHERE}.",
        path=path,
    )
