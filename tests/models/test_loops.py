"""`lion_nb.models._loops.deadline`: the whole-call deadline of every HTTP request."""

from __future__ import annotations

import time

import anyio
import pytest

from lion_nb.models import _loops
from lion_nb.models._loops import deadline


async def _sleep_within(seconds: float, limit: float) -> str:
    async with deadline(limit):
        await anyio.sleep(seconds)
    return "done"


@pytest.fixture(params=["asyncio.timeout", "anyio.fail_after"])
def kind(request, monkeypatch):
    """Both ways a deadline is kept: the standard library's (Python 3.11 and later) and
    anyio's cancel scope (Python 3.10, trio)."""
    if request.param == "anyio.fail_after":
        monkeypatch.setattr(_loops, "_asyncio_timeout", None)
    elif _loops._asyncio_timeout is None:
        pytest.skip("asyncio.timeout is Python 3.11 and later")
    return request.param


def test_a_block_past_its_deadline_raises_timeout_error(kind):
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        anyio.run(_sleep_within, 30, 0.2)
    assert time.monotonic() - started < 20  # the 30 s sleep was cut short


def test_a_block_within_its_deadline_returns_its_result(kind):
    assert anyio.run(_sleep_within, 0, 30) == "done"


def test_an_outer_cancel_scope_still_cancels_through_the_deadline(kind):
    async def main() -> tuple[bool, bool]:
        with anyio.move_on_after(0.2) as scope:
            await _sleep_within(30, 60)
        return scope.cancelled_caught, scope.cancel_called

    assert anyio.run(main) == (True, True)  # cancelled by the scope, not a TimeoutError
