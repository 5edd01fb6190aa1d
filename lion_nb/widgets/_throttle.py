"""`Throttle`: run a flush at most ``max_rate`` times a second, the last change never lost.

Live widgets change on every streamed fragment and every recorded message; sending each
change to the front end would flood the comm channel (a 1,000-chunk stream would be 1,000
messages). A poke flushes at once when the last flush is old enough, otherwise it arms one
timer on the running loop for the trailing flush. With no loop running (a plain script), it
flushes at once: nothing else could flush later.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Throttle"]

logger = logging.getLogger("lion_nb.widgets")


class Throttle:
    """Coalesce pokes into flushes, at most ``max_rate`` a second."""

    def __init__(self, flush: Callable[[], None], max_rate: float = 20.0):
        self._flush = flush
        self.interval = 1.0 / max(max_rate, 0.1)
        self._last = 0.0
        self._timer: Any = None
        self.flushes = 0

    @property
    def pending(self) -> bool:
        """Whether a trailing flush is armed."""
        return self._timer is not None

    def poke(self) -> None:
        """Something changed: flush now, or arm the trailing flush."""
        wait = self._last + self.interval - time.monotonic()
        if wait <= 0:
            self.flush()
            return
        if self._timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        self._timer = loop.call_later(wait, self.flush)

    def flush(self) -> None:
        """Flush now (and drop an armed trailing flush)."""
        self.cancel()
        self._last = time.monotonic()
        self.flushes += 1
        try:
            self._flush()
        except Exception:  # a display must never break the run that feeds it
            logger.warning("a widget update failed", exc_info=True)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
