"""The session store: conversations that survive a kernel restart, in one SQLite file.

`SessionStore` keeps sessions in ``.lion_nb/sessions.db`` under the notebook's folder
(`lion_nb.store_location` says how to move it); `Autosaver` writes a Session into it as
each message is recorded; ``load`` brings a session back. The exports turn a branch into
JSON, Markdown or a pandas DataFrame. The design (schema, autosave path, crash safety,
errors) is in ``docs/adr/0103-session-store.md``.

Importing this package is free: ``sqlite3`` is imported when a store is first used.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "Autosaver": "lion_nb.store.autosave",
    "SessionInfo": "lion_nb.store.store",
    "SessionStore": "lion_nb.store.store",
    "open_store": "lion_nb.store.store",
    "store_path": "lion_nb.store_location",
    "store_dir": "lion_nb.store_location",
    "StoreError": "lion_nb.store.errors",
    "StoreVersionError": "lion_nb.store.errors",
    "StoreCorruptError": "lion_nb.store.errors",
    "StoreLockedError": "lion_nb.store.errors",
    "StoreFullError": "lion_nb.store.errors",
    "StoreConflictError": "lion_nb.store.errors",
    "StoreWarning": "lion_nb.store.errors",
    "export_branch": "lion_nb.store.export",
    "to_dataframe": "lion_nb.store.export",
    "to_json": "lion_nb.store.export",
    "to_markdown": "lion_nb.store.export",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
