"""The notebook-scoped Session and the notebook's own state around it.

There is one `NotebookState` per kernel (per process). Its Session is created on first use
-- not when the extension loads -- with a default branch named ``main``. The state also
holds what only the notebook layer needs: the active branch's name, the last errors (for
``{Err}`` and ``%lion explain``), a bounded log of every signal the Session emitted (for
``%lion signals``), the background runs, the models built from ``--model`` strings (kept
per branch, so a CLI agent resumes its own session on the next turn), and the Stop of the
foreground turn running now (`NotebookState.stop_current`), so that a widget anywhere -- not
only the turn's own view -- can stop it.

Unloading the extension leaves this state alone: the conversations are the user's data.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

from .lasterror import ErrorLog

__all__ = [
    "NotebookState",
    "current_session",
    "find_branch",
    "notebook_state",
    "on_attach",
    "reset_notebook_state",
]

DEFAULT_BRANCH = "main"

_state: NotebookState | None = None

#: called as ``hook(state, session)`` after every `NotebookState.attach`
_attach_hooks: list[Callable[[NotebookState, Any], None]] = []


def on_attach(hook: Callable[[NotebookState, Any], None]) -> None:
    """Call ``hook(state, session)`` whenever a Session becomes the notebook's (first use,
    ``%lion load``, ``%lion reset --all``). What follows the Session from above -- autosave --
    registers here, so the state imports none of it."""
    if hook not in _attach_hooks:
        _attach_hooks.append(hook)


def notebook_state() -> NotebookState:
    """The kernel's notebook state, created on first use."""
    global _state
    if _state is None:
        _state = NotebookState()
    return _state


def reset_notebook_state() -> NotebookState:
    """Forget the notebook state (Session, active branch, errors, signals): a fresh start, as
    after a kernel restart. Background runs still going are cancelled."""
    global _state
    if _state is not None:
        for handle in list(_state.runs.values()):
            handle.cancel()
        for server in _state.mcp.values():  # `%lion mcp add` servers: stopped at once
            server.kill_now()
        _state.stop_agents()
    _state = NotebookState()
    return _state


def current_session() -> Any:
    """The notebook-scoped `Session` (one per kernel, created lazily, default branch ``main``)."""
    return notebook_state().session


def find_branch(session: Any, name: str) -> Any | None:
    """The branch called ``name`` in ``session`` (or with that id), else ``None``."""
    for branch in session.branches:
        if branch.name == name or str(branch.id) == name:
            return branch
    return None


class NotebookState:
    """Everything the notebook layer keeps between cells."""

    def __init__(self, *, default_branch: str = DEFAULT_BRANCH, signal_log_size: int = 1000):
        self._session: Any = None
        self.default_branch_name = default_branch
        self._active_name = default_branch
        self._active_id: str | None = None  # follows the branch through a rename
        self.errors = ErrorLog()
        self.signals: deque[Any] = deque(maxlen=signal_log_size)
        self.runs: dict[int, Any] = {}
        #: (branch id, `-m` spec) -> (iModel, the notebook variable it came from, or None)
        self.models: dict[tuple[str, str], tuple[Any, Any]] = {}
        self.hooked_cell_id: str | None = None
        self.foreground_stop: Callable[[], bool] | None = None
        self.mcp: dict[str, Any] = {}  # `%lion mcp add` servers by name
        self._subscription: Any = None

    # -- the session -----------------------------------------------------------------------
    @property
    def session(self) -> Any:
        if self._session is None:
            from ...session.session import Session

            self.attach(Session())
        return self._session

    def stop_agents(self) -> None:
        """Stop at once the agent processes that ``-m`` models keep between turns (an ACP
        agent's): the models are forgotten, so nothing would stop them later."""
        for model, _source in self.models.values():
            kill = getattr(getattr(model, "endpoint", None), "kill_now", None)
            if callable(kill):
                kill()

    def attach(self, session: Any) -> None:
        """Make ``session`` the notebook's Session (used on first use, load and reset)."""
        from ...protocols.signals import Signal, keep_history

        if self._subscription is not None:
            self._subscription()
        self._session = session
        self.stop_agents()
        self.models.clear()
        branch = session.default_branch
        if branch is None:
            branch = session.new_branch(name=self.default_branch_name)
        if not branch.name:
            branch.name = self.default_branch_name
        self.set_active(branch)
        self._subscription = session.observe(Signal, self.signals.append)
        ref = weakref.ref(session)  # the history must not keep the Session alive
        keep_history(session, lambda: self._signals_of(ref()))  # a SignalLog starts with them
        from .autoload import autoload

        autoload(session)  # installed entry-point extensions; each broken one is a warning
        for hook in list(_attach_hooks):
            hook(self, session)  # e.g. autosave follows the new Session (when loaded)

    def _signals_of(self, session: Any) -> list[Any]:
        """The logged signals of ``session``'s branches (the log outlives a Session)."""
        if session is None:
            return []
        ids = {str(b.id) for b in session.branches}
        return [s for s in self.signals if s.branch_id is None or s.branch_id in ids]

    def resize_signal_log(self, size: int) -> None:
        self.signals = deque(self.signals, maxlen=max(1, size))
        if self._session is not None:
            if self._subscription is not None:
                self._subscription()
            from ...protocols.signals import Signal

            self._subscription = self._session.observe(Signal, self.signals.append)

    # -- branches ------------------------------------------------------------------------------
    @property
    def active(self) -> str:
        """The active branch's name: its name now, so renaming it keeps it active."""
        if self._active_id is not None and self._session is not None:
            found = find_branch(self._session, self._active_id)
            if found is not None:
                return found.name or self._active_id
        return self._active_name

    @active.setter
    def active(self, name: str) -> None:
        self._active_name, self._active_id = name, None

    def branch(self, name: str | None = None) -> Any:
        """The branch called ``name`` (the active one when ``None``), or ``None``."""
        session = self.session
        if name is None:
            found = find_branch(session, self._active_id or self._active_name)
            if found is None and self._active_id is not None:
                found = find_branch(session, self._active_name)
            if found is None:  # the active branch was removed elsewhere
                found = session.default_branch or next(iter(session.branches), None)
            if found is not None:
                self._active_name, self._active_id = found.name or str(found.id), str(found.id)
            return found
        return find_branch(session, name)

    def set_active(self, branch: Any) -> None:
        self._active_name = branch.name or str(branch.id)
        self._active_id = str(branch.id)
        try:
            self.session.default_branch = branch
        except (AttributeError, TypeError, ValueError):
            pass

    def busy(self, branch: Any) -> Any | None:
        """The background run currently using ``branch``, if any."""
        for handle in self.runs.values():
            if handle.branch is branch and not handle.done():
                return handle
        return None

    # -- the running foreground turn -----------------------------------------------------------
    def stop_current(self) -> bool:
        """Stop the foreground turn running now (from any thread); ``False`` if none runs."""
        stop = self.foreground_stop
        return stop() if stop is not None else False

    def swap_foreground_stop(
        self, stop: Callable[[], bool] | None, *, only_if: Any = None
    ) -> Callable[[], bool] | None:
        """Make ``stop`` the current foreground turn's Stop and return the one it replaces;
        with ``only_if``, only while that one is still current (a turn restoring the one
        before it)."""
        previous = self.foreground_stop
        if only_if is None or previous is only_if:
            self.foreground_stop = stop
        return previous

    def specials(self) -> dict[str, Any]:
        """Names a prompt can use besides the namespace: the notebook's errors."""
        return {"Err": self.errors, "error": self.errors}
