"""Closing a session: nothing it started is left running.

`Session.aclose` (and `Session.close` outside a running event loop) releases what the
session's branches hold:

- every model a member branch uses -- chat model, parse model, and models connected as
  tools with `Branch.connect` -- is closed once: its HTTP connection pool is closed, and a
  CLI model stops every run still going (SIGTERM to the agent's process group, SIGKILL after
  the grace; a run busy in another task is killed at once);
- MCP servers the session or its branches connected are stopped (a stdio server with its
  process group) and their tools removed; connect them again to use them;
- message signals still being delivered to async observers are awaited, so no task of the
  session outlives it.

A model shared with another session is closed too: closing only releases connections and
processes, and a later call opens a new pool. The session and its branches stay usable;
their conversations are untouched.

`Session.close` inside a running event loop (a notebook cell runs inside one) stops CLI
processes at once, synchronously, and schedules the rest as a task, which it returns:
``await session.aclose()`` is the way to wait for everything there.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, TypeAlias

#: a `lion_nb.session.session.Session`, which imports this module: not imported back
#: (the two would import each other), so typed loosely here
Session: TypeAlias = Any

__all__ = ["aclose_session", "close_session", "session_models"]

log = logging.getLogger("lion_nb.session")


def session_models(session: Session) -> list[Any]:
    """Every distinct model the member branches use (chat, parse, connected tools)."""
    seen: dict[int, Any] = {}
    for branch in session._branches:
        manager = branch.mdls
        candidates = [manager.chat, manager.parse]
        for tool in branch.acts.registry.values():
            consulted = getattr(tool.func_callable, "imodel", None)
            if consulted is not None:
                candidates.append(consulted)
        for model in candidates:
            if model is not None and hasattr(model, "aclose"):
                seen.setdefault(id(model), model)
    return list(seen.values())


async def aclose_session(session: Session) -> None:
    """See the module docstring."""
    for model in session_models(session):
        try:
            await model.aclose()
        except Exception:  # one model failing to close must not keep the others open
            log.warning("closing %r failed", model, exc_info=True)
    from ..mcp.connect import disconnect_all

    for owner in [session, *session._branches]:
        if owner.connected_mcp:
            await disconnect_all(owner)
    for branch in list(session._branches):
        await branch.attachment.drain()


def close_session(session: Session) -> asyncio.Task | None:
    """`aclose_session` now when no event loop runs; inside one, CLI processes are stopped
    at once and the rest is scheduled (the task is returned)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        import anyio

        anyio.run(aclose_session, session)
        return None
    _kill_cli_runs(session)
    from ..mcp.connect import kill_all

    for owner in [session, *session._branches]:
        kill_all(owner)
    return loop.create_task(aclose_session(session))


def _kill_cli_runs(session: Session) -> None:
    from ..models.endpoints._process import LIVE_GROUPS, kill_group

    for model in session_models(session):
        groups = getattr(getattr(model, "endpoint", None), "_groups", None)
        for pgid in list(groups or ()):
            if pgid in LIVE_GROUPS:
                kill_group(pgid)
