"""Which event loop is running: state tied to one loop (a connection pool, a limiter's
lock) is rebuilt when the loop changes, e.g. between two ``anyio.run`` calls."""

from __future__ import annotations

__all__ = ["current_loop_token"]


def current_loop_token() -> object:
    """An identity for the running loop: asyncio's loop object, or trio's token."""
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # not asyncio: the only other anyio backend is trio
        import trio

        return trio.lowlevel.current_trio_token()
