"""`TurnStop`: stops one turn, from any thread, at most once.

Every turn has one (the view's ``info.stop``, a Stop button's target), made before its view
exists. A foreground turn's Stop cancels the task running the cell -- exactly what the
kernel's interrupt does, so both end the turn the same way (partial messages kept, one
terminal signal) -- but a Stop stops that turn only: its cell ends quietly and the next one
runs, where the interrupt raises `RunInterrupted`. A background run's Stop is its handle's
``cancel()``. A Stop may come from any thread (a comm handler, a worker loop's host) and is
always carried out on the turn's own loop; once the turn has ended it does nothing, so a
late click can never cancel whatever the cell runs next.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["TurnStop"]


class TurnStop:
    """Stops one turn from any thread; ``True`` if the turn was still running.

    Bound to the turn's loop and a cancel function once the turn's task exists (a request
    that came earlier is carried out then); the cancel always runs on that loop, at most
    once. After `release` (the turn ended) a call returns ``False`` and does nothing.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cancel: Callable[[], Any] | None = None
        self._requested = False
        self._ended = False
        self.fired = False  #: the cancel was carried out: the turn ends because of this Stop

    def __call__(self) -> bool:
        with self._lock:
            if self._ended:
                return False
            if self._requested:
                return True  # already stopping
            self._requested = True
            loop = self._loop
        if loop is None:
            return True  # carried out by `bind`
        return self._schedule(loop)

    def bind(self, loop: asyncio.AbstractEventLoop, cancel: Callable[[], Any]) -> None:
        """The turn runs on ``loop``; ``cancel()`` (called there) stops it."""
        with self._lock:
            self._loop, self._cancel = loop, cancel
            pending = self._requested and not self._ended
        if pending:
            self._schedule(loop)

    def release(self) -> None:
        """The turn ended: from now on a call does nothing."""
        with self._lock:
            self._ended = True

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> bool:
        # always through the loop: safe from a comm handler, another thread, or the turn's own
        # loop before the turn's task has taken its first step
        try:
            loop.call_soon_threadsafe(self._cancel_now)
        except RuntimeError:  # the loop is closed: the turn is over
            return False
        return True

    def _cancel_now(self) -> None:
        with self._lock:
            cancel = None if self._ended else self._cancel
        if cancel is not None:
            self.fired = True
            cancel()
