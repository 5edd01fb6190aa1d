"""The notebook's Session in the session store: autosave, and restoring it after a restart.

`install` (run by ``%load_ext lion_nb``) creates the kernel's `NotebookPersistence`, which
follows `LionMagics`' ``autosave``, ``store_path`` and ``restore_on_load``:

- whenever the notebook's Session is attached (first use, ``%lion load``, ``%lion reset
  --all``), an `Autosaver` follows it into the store, unless ``autosave`` is off;
- after every cell, and after a turn tags its messages with their cell, it checkpoints (a
  few dictionary look-ups when nothing changed; never a wait on the disk);
- ``%lion load`` with no file restores this notebook's latest saved session (the notebook
  is known from the front end: ``__session__``, ``__vsc_ipynb_file__`` or
  ``JPY_SESSION_NAME``; without one, the latest session in the store), with its branches,
  active branch and the cell tags that make a re-run fork instead of append;
- with ``restore_on_load``, loading the extension does the same, quietly when there is
  nothing to restore.

Nothing opens the database at load unless ``restore_on_load`` asks for it. When autosave
fails (a newer or corrupt store, a locked file, a full disk) it turns off with one
`StoreWarning` that names the file and the fix, and the notebook goes on in memory;
``%lion autosave on`` tries again.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any, Protocol

from IPython.core.error import UsageError

from .session import on_attach

__all__ = [
    "AutosaveSettings",
    "NotebookPersistence",
    "checkpoint",
    "install",
    "installed",
    "session_attached",
]

RESUME_HINT = "`%lion autosave on` tries again"

_installed: NotebookPersistence | None = None


class AutosaveSettings(Protocol):
    """What autosave reads of the extension's options, and how it hears them change.

    `LionMagics` is one; persistence sees these three options and the shell, and nothing
    else of the layer above it."""

    autosave: bool
    store_path: str
    restore_on_load: bool
    shell: Any  # Any: IPython's InteractiveShell, whose stubs are incomplete

    def observe(self, handler: Callable[[Any], None], names: list[str]) -> None: ...

    def unobserve(self, handler: Callable[[Any], None], names: list[str]) -> None: ...


def installed() -> NotebookPersistence | None:
    """The kernel's persistence, when the extension is loaded."""
    return _installed


def session_attached(state: Any, session: Any) -> None:
    """Follow the new Session (`NotebookState.attach` calls this through `on_attach`)."""
    if _installed is not None:
        _installed.follow(session)


on_attach(session_attached)


def checkpoint(session: Any) -> None:
    """Save what changed in ``session`` (a turn calls this once its messages are tagged)."""
    if _installed is not None:
        _installed.checkpoint(session)


def notebook_label(shell: Any) -> str | None:
    """The notebook this kernel runs, as the front end tells it (``None`` when it does not)."""
    ns = getattr(shell, "user_ns", None) or {}
    for key in ("__session__", "__vsc_ipynb_file__"):
        value = ns.get(key)
        if isinstance(value, str) and value:
            return value
    return os.environ.get("JPY_SESSION_NAME") or None


class NotebookPersistence:
    """Autosave and restore for the notebook's Session (see the module docstring)."""

    def __init__(self, settings: AutosaveSettings):
        self.settings = settings
        self.autosaver: Any = None
        self._seed: Any = None
        self._store: Any = None

    # -- the store -------------------------------------------------------------------------------
    @property
    def store(self) -> Any:
        """The store at ``LionMagics.store_path`` (opened on first use)."""
        from ...store.store import open_store
        from ...store_location import store_path

        path = store_path(self.settings.store_path or None)
        if self._store is None or self._store.path != path:
            self._store = open_store(path)
        return self._store

    @property
    def notebook(self) -> str | None:
        return notebook_label(self.settings.shell)

    # -- autosave --------------------------------------------------------------------------------
    def follow(self, session: Any) -> None:
        """Autosave ``session`` from now on (stopping whatever was followed before)."""
        self.stop()
        seed, self._seed = self._seed, None
        if not self.settings.autosave:
            return
        from ...store.autosave import Autosaver

        if seed is not None and seed.id != str(session.id):
            seed = None
        self.autosaver = Autosaver(
            self.store,
            session,
            notebook=self.notebook,
            on_failure=self._failed,
            seed=seed,
            resume_hint=RESUME_HINT,
        )

    def checkpoint(self, session: Any = None) -> None:
        saver = self.autosaver
        if saver is None or (session is not None and saver.session is not session):
            return
        try:
            saver.checkpoint()
        except Exception:  # the autosaver guards itself; a cell must never fail here
            pass

    def stop(self) -> None:
        if self.autosaver is not None:
            self.autosaver.stop()
            self.autosaver = None

    def restart(self) -> None:
        """Follow the notebook's Session afresh (after a failure, or a new store path)."""
        from .session import notebook_state

        state = notebook_state()
        self.stop()
        if state._session is not None:
            self.follow(state._session)

    def _failed(self, error: Exception) -> None:
        from ...store.errors import StoreWarning

        warnings.warn(
            StoreWarning(
                f"Autosave is off: {error} The notebook's conversations go on in memory; "
                f"{RESUME_HINT}."
            ),
            stacklevel=2,
        )

    def status(self) -> str:
        """``on``, ``off``, or ``off (ErrorName)`` after a failure."""
        saver = self.autosaver
        if saver is not None and saver.failure is not None:
            return f"off ({type(saver.failure).__name__})"
        if saver is not None and saver.active:
            return "on"
        return "on" if self.settings.autosave and saver is None else "off"

    def _on_config(self, change: dict[str, Any]) -> None:
        if change["name"] == "store_path":
            from ...store_location import configure

            configure(change["new"] or None)
        self.restart()

    # -- restoring --------------------------------------------------------------------------------
    def find(self, ref: str | None, *, current: Any = None) -> str:
        """The id of the session to restore: ``ref`` (an id or its start), else this
        notebook's latest (not the one running now). A `UsageError` says what is missing."""
        from ...errors import ItemNotFoundError
        from ...store.errors import StoreError

        store = self.store
        if not store.exists():
            raise UsageError(
                f"`%lion load`: there is no session store at `{store.path}` yet. Sessions are "
                "saved there as turns run (autosave is "
                f"{'on' if self.settings.autosave else 'off: `%lion autosave on`'}); "
                "`%lion load FILE.json` imports a file saved with `%lion save`."
            )
        try:
            if ref:
                return store.resolve(ref)
            exclude = str(current.id) if current is not None else None
            notebook = self.notebook
            found = store.latest(notebook=notebook, exclude=exclude)
        except (StoreError, ItemNotFoundError) as exc:
            raise UsageError(
                f"`%lion load`: {exc} `%lion sessions` lists the saved ones."
            ) from None
        if found is None:
            which = f"of notebook `{notebook}` " if notebook else ""
            raise UsageError(
                f"`%lion load`: no saved session {which}in `{store.path}` besides the one "
                "running now. `%lion sessions` lists them all; `%lion load --session ID` "
                "restores one by id."
            )
        return found

    def unsaved_in_file(self, data: Any) -> int:
        """How many messages the store holds of the session serialized in ``data`` (a
        ``Session.to_dict``) that ``data`` lacks: committed after the file was saved. Importing
        it under the same id would replace them, so `%lion load FILE` then imports a copy."""
        from ...errors import ItemNotFoundError
        from ...store.errors import StoreError

        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            return 0
        try:
            if not self.store.exists():
                return 0
            rows = self.store.read(data["id"])
        except (StoreError, ItemNotFoundError):
            return 0
        in_file = set()
        for branch in data.get("branches") or ():
            messages = branch.get("messages") if isinstance(branch, dict) else None
            items = messages.get("collections") if isinstance(messages, dict) else messages
            for message in items or ():
                if isinstance(message, dict):
                    in_file.add(str(message.get("id")))
        return sum(1 for b in rows.branches for mid in b.message_ids if mid not in in_file)

    def restore(self, state: Any, ref: str | None = None) -> Any:
        """Make the saved session ``ref`` (default: this notebook's latest) the notebook's
        Session and follow it; returns it."""
        from ...store.errors import StoreError
        from ...store.rows import build_session

        session_id = self.find(ref, current=state._session)
        try:
            rows = self.store.read(session_id)
            session = build_session(rows)
        except StoreError as exc:
            raise UsageError(f"`%lion load`: {exc}") from None
        self._seed = rows
        state.attach(session)
        return session

    def restore_on_load(self, state: Any) -> Any:
        """``restore_on_load``: restore quietly; a problem is a warning, never a failure."""
        from ...store.errors import StoreWarning

        if not self.store.exists():
            return None
        try:
            session = self.restore(state)
        except UsageError as exc:
            if "no saved session" not in str(exc):
                warnings.warn(StoreWarning(str(exc)), stacklevel=2)
            return None
        except Exception as exc:  # whatever the store holds, loading the extension works
            warnings.warn(
                StoreWarning(
                    f"`%lion load`: restoring from `{self.store.path}` failed "
                    f"({type(exc).__name__}: {exc}); the notebook starts a new session."
                ),
                stacklevel=2,
            )
            return None
        print(
            f"Restored session `{str(session.id)[:8]}` from `{self.store.path}`: "
            f"{len(session.branches)} branch(es), active `{state.active}`."
        )
        return session


def install(ipython: Any, settings: AutosaveSettings) -> Callable[[], None]:
    """Set up autosave for ``ipython``, following ``settings``; returns what undoes it."""
    global _installed
    from ...store_location import configure
    from .session import notebook_state

    persistence = NotebookPersistence(settings)
    _installed = persistence
    configure(settings.store_path or None)
    settings.observe(persistence._on_config, names=["autosave", "store_path"])

    def post_run_cell(result: Any) -> None:
        persistence.checkpoint()

    ipython.events.register("post_run_cell", post_run_cell)
    state = notebook_state()
    if settings.restore_on_load:
        persistence.restore_on_load(state)
    elif state._session is not None:
        persistence.follow(state._session)

    def uninstall() -> None:
        global _installed
        try:
            ipython.events.unregister("post_run_cell", post_run_cell)
        except ValueError:
            pass
        settings.unobserve(persistence._on_config, names=["autosave", "store_path"])
        persistence.checkpoint()
        persistence.stop()
        if persistence._store is not None:
            persistence._store.close()
        if _installed is persistence:
            _installed = None
            configure(None)

    return uninstall
