"""Waiting for a condition instead of for a fixed time.

A fixed sleep is a guess at how long something takes; on a loaded machine the guess is wrong
and the test either fails for nothing or passes without checking anything. These poll a
predicate until it holds, with a deadline generous enough for a busy machine, and fail with
what was awaited when it never does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

DEADLINE = 30.0  # seconds; only reached when the awaited thing never happens
_POLL = 0.01


def _timed_out(predicate: Callable[[], Any], timeout: float, what: str | None) -> AssertionError:
    name = what or getattr(predicate, "__name__", repr(predicate))
    return AssertionError(f"still waiting after {timeout:g} s for: {name}")


def wait_until(
    predicate: Callable[[], Any], *, timeout: float = DEADLINE, what: str | None = None
) -> Any:
    """Block until ``predicate()`` is truthy and return its value (threads, processes)."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise _timed_out(predicate, timeout, what)
        time.sleep(_POLL)
    return value


async def until(
    predicate: Callable[[], Any], *, timeout: float = DEADLINE, what: str | None = None
) -> Any:
    """Await until ``predicate()`` is truthy and return its value; the loop runs meanwhile."""
    import anyio

    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise _timed_out(predicate, timeout, what)
        await anyio.sleep(_POLL)
    return value
