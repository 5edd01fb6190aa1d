"""Where the session store lives: one SQLite file per notebook directory.

The database is ``.lion_nb/sessions.db`` under the working directory (a kernel's working
directory is its notebook's folder), so each folder of notebooks keeps its own conversations
beside them. The first of these that is set wins:

1. `configure` -- the notebook's ``%config LionMagics.store_path``;
2. the ``LION_NB_STORE`` environment variable;
3. ``.lion_nb/sessions.db`` in the working directory.

A path ending in ``.db``, ``.sqlite`` or ``.sqlite3`` names the database file; any other path
names the folder, and the file is ``sessions.db`` in it. The folder is the store's folder:
`run(stream_persist=True)` writes its buffers under ``runs/`` and `DataLogger.dump` its logs
under ``logs/`` there unless told otherwise. A folder the store creates gets a ``.gitignore``
of ``*``, so conversations never reach a repository by accident.

Nothing here imports ``sqlite3`` or touches the disk: resolving a path is free.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DIR_NAME", "ENV_VAR", "FILE_NAME", "configure", "ensure_dir", "store_dir", "store_path"]

ENV_VAR = "LION_NB_STORE"
DIR_NAME = ".lion_nb"
FILE_NAME = "sessions.db"
_SUFFIXES = (".db", ".sqlite", ".sqlite3")

_configured: str | None = None


def configure(path: str | os.PathLike[str] | None) -> None:
    """Make ``path`` the process's store (``None`` or ``""``: back to the environment or the
    default). The notebook calls this when ``LionMagics.store_path`` changes."""
    global _configured
    _configured = str(path) if path else None


def store_path(path: str | os.PathLike[str] | None = None) -> Path:
    """The database file: ``path`` when given, else the configured one (see the module
    docstring for the order), as an absolute path."""
    given = str(path) if path else (_configured or os.environ.get(ENV_VAR) or "")
    if not given:
        return Path.cwd() / DIR_NAME / FILE_NAME
    p = Path(os.path.expanduser(given))
    if p.suffix.lower() not in _SUFFIXES:
        p = p / FILE_NAME
    return p.absolute()


def store_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The store's folder (the database's parent), where run buffers and log dumps go."""
    return store_path(path).parent


def ensure_dir(folder: Path) -> None:
    """Create ``folder`` (and its parents) if needed; a folder created here gets a
    ``.gitignore`` that ignores everything in it."""
    if folder.is_dir():
        return
    folder.mkdir(parents=True, exist_ok=True)
    try:
        (folder / ".gitignore").write_text("# created by lion_nb\n*\n", encoding="utf-8")
    except OSError:
        pass  # an unwritable marker file is no reason to refuse the store
