"""Background runs: ``%%lion --bg`` returns at once with a handle; the kernel stays free.

The run is a task on the kernel's own event loop, so it makes progress whenever the kernel is
idle or awaiting, and its live view keeps updating in the cell that started it. It has to be
a plain loop task (not an anyio task group): it must outlive the cell that started it, and
no scope in that cell may wait for it.

A `RunHandle` is awaitable (``result = await handle``), cancellable (``handle.cancel()``)
and shows its status as its repr. Awaiting only observes: interrupting a cell that awaits a
handle stops the waiting, not the run -- cancel the handle to stop the run. A failed run
keeps its error for whoever awaits it, and never logs "exception was never retrieved".
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["RunHandle", "start_background"]

_ids = itertools.count(1)


class RunHandle:
    """A background turn: await it for its result, ``cancel()`` it to stop it."""

    def __init__(self, task: asyncio.Task, *, branch: Any, label: str, view: Any = None):
        self.id = next(_ids)
        self.task = task
        self.branch = branch
        self.label = label
        self.view = view
        self.started = time.time()
        self.finished: float | None = None
        task.add_done_callback(self._settled)

    def _settled(self, task: asyncio.Task) -> None:
        self.finished = time.time()
        if not task.cancelled():
            task.exception()  # mark as retrieved; the awaiting cell re-raises it

    # -- awaiting ----------------------------------------------------------------------------
    def __await__(self):
        return asyncio.shield(self.task).__await__()

    async def wait(self) -> Any:
        """The run's result (its error re-raised); the same as ``await handle``."""
        return await self

    # -- control and state ------------------------------------------------------------------
    def cancel(self) -> bool:
        """Stop the run (a CLI agent's process is killed); ``False`` if it already ended."""
        return self.task.cancel()

    def done(self) -> bool:
        return self.task.done()

    def result(self) -> Any:
        """The result of a finished run (its error re-raised); an error if still running."""
        if not self.task.done():
            raise RuntimeError(
                f"Background run {self.id} is still running: `await` the handle to wait for it."
            )
        return self.task.result()

    @property
    def status(self) -> str:
        if not self.task.done():
            return "running"
        if self.task.cancelled():
            return "cancelled"
        return "failed" if self.task.exception() is not None else "done"

    @property
    def elapsed(self) -> float:
        return (self.finished or time.time()) - self.started

    def __repr__(self) -> str:
        branch = getattr(self.branch, "name", None) or "?"
        return (
            f"<lion run {self.id} on `{branch}`: {self.label} · {self.status} · "
            f"{self.elapsed:.1f}s>"
        )


def start_background(
    make: Callable[[], Coroutine[Any, Any, Any]],
    *,
    branch: Any,
    label: str,
    view: Any = None,
    on_done: Callable[[RunHandle], None] | None = None,
) -> RunHandle:
    """Start ``make()`` as a task on the kernel's loop and return its handle at once."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # called synchronously in a shell whose loop is idle
        from IPython.core.async_helpers import get_asyncio_loop

        loop = get_asyncio_loop()
    from ..agent.tools import cell_ended

    with cell_ended():  # the task keeps this context: its cell ends before it does
        task = loop.create_task(make())
    handle = RunHandle(task, branch=branch, label=label, view=view)
    if on_done is not None:
        handle.task.add_done_callback(lambda _t: on_done(handle))
    return handle
