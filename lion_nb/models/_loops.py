"""Which event loop is running: state tied to one loop (a connection pool, a limiter's
lock) is rebuilt when the loop changes, e.g. between two ``anyio.run`` calls."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

__all__ = ["current_loop_token", "deadline"]


def current_loop_token() -> object:
    """An identity for the running loop: asyncio's loop object, or trio's token."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # not asyncio: the only other anyio backend is trio
        import trio

        return trio.lowlevel.current_trio_token()


#: the standard library's deadline (Python 3.11 and later)
_asyncio_timeout: Callable[[float], AbstractAsyncContextManager[Any]] | None = getattr(
    asyncio, "timeout", None
)


def deadline(seconds: float) -> AbstractAsyncContextManager[Any]:
    """A block that raises `TimeoutError` once ``seconds`` have passed, as
    ``anyio.fail_after`` does. On asyncio (Python 3.11 and later) it is the standard
    library's ``asyncio.timeout``, which costs a model call a third of what anyio's cancel
    scope does; anyio's outer scopes still cancel through it."""
    if _asyncio_timeout is not None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            return _asyncio_timeout(seconds)
    return _anyio_deadline(seconds)


@asynccontextmanager
async def _anyio_deadline(seconds: float) -> AsyncIterator[None]:
    """``anyio.fail_after`` as an async block: Python 3.10 and trio."""
    import anyio

    with anyio.fail_after(seconds):
        yield
