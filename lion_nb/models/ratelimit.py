"""`RateLimiter`: how fast and how many at once one model may be called.

Three independent bounds, each optional:

- ``max_concurrency``: calls in flight at once (an anyio ``CapacityLimiter``);
- ``requests_per_minute`` and ``tokens_per_minute``: a sliding window over the last
  ``period`` seconds (60). A call waits, with ``anyio.sleep``, until both the request count
  and the estimated tokens of the window leave room for it.

Why a sliding window rather than a refilling bucket: providers count per rolling minute, and
a window never lets a burst exceed the stated figure. A single call estimated above
``tokens_per_minute`` is let through once the window is empty, rather than waiting forever.

Waiting callers queue on one lock, so they are admitted in arrival order. The concurrency
slot is taken first, so a call is sent as soon as the window admits it. The anyio
primitives are made on first use in each event loop, so one limiter can be built at import
time and used from any later loop.

A slot is borrowed on behalf of the slot itself, not of the task that took it: a CLI run
holds its slot for the life of its stream, and a stream may be closed from another task
than the one that started it (an abandoned generator is closed by the event loop). A deep
copy is a new limiter with the same bounds and nothing in flight.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TypeVar

import anyio

from ..errors import ConfigurationError
from ._loops import current_loop_token

__all__ = ["RateLimiter"]


_N = TypeVar("_N", bound=float)  # an int stays an int


def _check(name: str, value: _N | None) -> _N | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigurationError(
            f"`{name}={value!r}`: give a number above 0, or None for no limit."
        )
    return value


class RateLimiter:
    """Bounds on calls per minute, tokens per minute and calls in flight."""

    def __init__(
        self,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
        max_concurrency: int | None = None,
        *,
        period: float = 60.0,
    ):
        self.requests_per_minute = _check("requests_per_minute", requests_per_minute)
        self.tokens_per_minute = _check("tokens_per_minute", tokens_per_minute)
        self.max_concurrency = _check("max_concurrency", max_concurrency)
        self.period = _check("period", period) or 60.0
        self._window: deque[tuple[float, int]] = deque()  # (admitted at, estimated tokens)
        self._window_tokens = 0
        self._loop: object = None
        self._lock: anyio.Lock | None = None
        self._capacity: anyio.CapacityLimiter | None = None

    def __deepcopy__(self, memo: dict[int, object]) -> RateLimiter:
        return RateLimiter(
            self.requests_per_minute,
            self.tokens_per_minute,
            self.max_concurrency,
            period=self.period,
        )

    def __repr__(self) -> str:
        return (
            f"RateLimiter(requests_per_minute={self.requests_per_minute}, "
            f"tokens_per_minute={self.tokens_per_minute}, max_concurrency={self.max_concurrency})"
        )

    @property
    def in_flight(self) -> int:
        """Calls holding a concurrency slot now (0 without a concurrency bound)."""
        return int(self._capacity.borrowed_tokens) if self._capacity is not None else 0

    def _primitives(self) -> tuple[anyio.Lock, anyio.CapacityLimiter | None]:
        loop = current_loop_token()
        if self._lock is None or self._loop is not loop:
            self._loop = loop
            self._lock = anyio.Lock()
            self._capacity = (
                anyio.CapacityLimiter(self.max_concurrency) if self.max_concurrency else None
            )
        return self._lock, self._capacity

    @asynccontextmanager
    async def slot(self, estimated_tokens: int = 0) -> AsyncIterator[None]:
        """Hold one call's place: waits for a concurrency slot, then for room in the window."""
        lock, capacity = self._primitives()
        borrower = object()
        if capacity is not None:
            await capacity.acquire_on_behalf_of(borrower)
        try:
            if self.requests_per_minute or self.tokens_per_minute:
                async with lock:
                    await self._admit(max(0, int(estimated_tokens)))
            yield
        finally:
            if capacity is not None:
                capacity.release_on_behalf_of(borrower)

    async def _admit(self, tokens: int) -> None:
        while True:
            now = anyio.current_time()
            while self._window and self._window[0][0] <= now - self.period:
                self._window_tokens -= self._window.popleft()[1]
            wait = self._wait_needed(now, tokens)
            if wait <= 0:
                self._window.append((now, tokens))
                self._window_tokens += tokens
                return
            await anyio.sleep(wait)

    def _wait_needed(self, now: float, tokens: int) -> float:
        """Seconds until the oldest entry that blocks this call leaves the window (0: go)."""
        if not self._window:
            return 0.0
        blocked_until = now
        if self.requests_per_minute and len(self._window) >= self.requests_per_minute:
            index = len(self._window) - int(self.requests_per_minute)
            blocked_until = max(blocked_until, self._window[index][0] + self.period)
        if self.tokens_per_minute and self._window_tokens + tokens > self.tokens_per_minute:
            excess = self._window_tokens + tokens - self.tokens_per_minute
            freed = 0
            for at, used in self._window:
                freed += used
                if freed >= excess:
                    blocked_until = max(blocked_until, at + self.period)
                    break
            else:
                blocked_until = max(blocked_until, self._window[-1][0] + self.period)
        return blocked_until - now
