"""Batches against the loopback HTTP server: 500 items with injected failures, and 1,000
concurrent operations under a requests-per-minute and a concurrency limit.

The rate test scales time, and says so: 600 requests a minute would hold 1,000 requests for
over a minute, so its limiter counts 600 requests per 3-second window (20x faster) -- the
same sliding-window code, the same bound, a shorter window. The bounds are read where
lion_nb keeps them: the times the limiter admitted each request and the calls holding a slot
(a loaded machine delays arrivals at the server unevenly, and a server thread may still count
a request it has answered, so the server's clock and count would measure the machine). The
server checks that every request arrived. Lag figures are printed, not asserted: timing
belongs to the benchmarks.
"""

from __future__ import annotations

import re
import statistics
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from lion_nb import Session, iModel
from lion_nb.errors import BadRequestError
from lion_nb.models.ratelimit import RateLimiter
from tests.fakes.http_server import FakeProvider, Recorded, Script

_ITEM = re.compile(r"item (\d+)")


class EchoRoute:
    """Answers every chat completion with ``answer: <prompt>``; the items for which
    ``fails(n)`` is true get a 400 the first time they are asked."""

    def __init__(self, fails=lambda n: False, delay: float = 0.0):
        self.fails = fails
        self.delay = delay
        self.failed: set[int] = set()
        self.lock = threading.Lock()

    def __call__(self, rec: Recorded) -> Script | None:
        if not rec.path.endswith("/chat/completions"):
            return None
        prompt = rec.body["messages"][-1]["content"]
        number = int(_ITEM.search(prompt).group(1))
        with self.lock:
            first = number not in self.failed
            if first and self.fails(number):
                self.failed.add(number)
                error = {"message": f"injected failure {number}", "type": "invalid_request_error"}
                return Script(status=400, body={"error": error}, first_byte_delay=self.delay)
        body = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "model": rec.body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": f"answer: {prompt}"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
        }
        return Script(body=body, first_byte_delay=self.delay)


@pytest.fixture
def server():
    with FakeProvider() as fake:
        yield fake


def http_session(fake: FakeProvider, **limits) -> Session:
    session = Session()
    session.default_branch.chat_model = iModel(
        provider="openai", model="m", base_url=fake.openai_url, max_retries=0, **limits
    )
    return session


def test_500_items_with_5_percent_failures_then_a_retry(server):
    route = EchoRoute(fails=lambda n: n % 20 == 7, delay=0.002)
    server.routes.append(route)
    session = http_session(server, concurrency_limit=20)
    items = [f"item {i}" for i in range(500)]

    async def main():
        run = session.map(items, "Say {item}", concurrency=20)
        first = await run
        failed = [r.index for r in run.failures]
        errors = [type(r.error.__cause__) for r in run.failures]
        second = await run.retry()
        await session.default_branch.chat_model.aclose()
        return run, first, failed, errors, second

    run, first, failed, errors, second = anyio.run(main)
    expected_failures = [n for n in range(500) if n % 20 == 7]
    assert len(expected_failures) == 25  # 5 %
    assert failed == expected_failures
    assert set(errors) == {BadRequestError}  # the provider's typed error, per item
    assert [first[i] for i in range(500) if i not in failed] == [
        f"answer: Say item {i}" for i in range(500) if i not in failed
    ]
    assert all(first[i] is None for i in failed)
    assert second == [f"answer: Say item {i}" for i in range(500)]  # input order
    retried = [r for r in server.requests[500:] if r.path.endswith("/chat/completions")]
    assert sorted(
        int(_ITEM.search(r.body["messages"][-1]["content"]).group(1)) for r in retried
    ) == (expected_failures)
    assert run.progress().tokens == 500 * 12
    assert max(r.in_flight for r in server.requests) <= 20


def _windows_exceeded(times: list[float], limit: int, window: float) -> int:
    """How many requests arrived when ``limit`` others had arrived in the last ``window``."""
    times = sorted(times)
    return sum(1 for i in range(limit, len(times)) if times[i] - times[i - limit] < window)


class RecordingLimiter(RateLimiter):
    """The limiter, noting when it admits a call and how many calls hold a slot then."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.admitted: list[float] = []
        self.most_in_flight = 0

    @asynccontextmanager
    async def slot(self, estimated_tokens: int = 0) -> AsyncIterator[None]:
        async with super().slot(estimated_tokens):
            # the time the limiter admitted this call at (nothing else ran since): a clock
            # read here could come late on a busy machine, and make a window look too short
            self.admitted.append(self._window[-1][0])
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            yield


def test_1000_concurrent_operations_respect_the_limits_and_the_loop_stays_responsive(server):
    server.routes.append(EchoRoute(delay=0.005))
    session = http_session(server)
    model = session.default_branch.chat_model
    period = 3.0  # 600 per minute, scaled 20x: 600 per 3 s
    limiter = RecordingLimiter(requests_per_minute=600, max_concurrency=20, period=period)
    model._limiter = limiter
    lags: list[float] = []

    async def heartbeat(stop: anyio.Event) -> None:
        while not stop.is_set():
            before = time.perf_counter()
            await anyio.sleep(0.005)
            lags.append(time.perf_counter() - before - 0.005)

    async def main():
        stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(heartbeat, stop)
            run = session.map([f"item {i}" for i in range(1000)], "{item}", concurrency=1000)
            results = await run
            stop.set()
        await model.aclose()
        return run, results

    started = time.perf_counter()
    _run, results = anyio.run(main)
    elapsed = time.perf_counter() - started
    assert results == [f"answer: item {i}" for i in range(1000)]
    arrivals = [r.time for r in server.requests if r.path.endswith("/chat/completions")]
    assert len(arrivals) == 1000
    assert len(limiter.admitted) == 1000 and limiter.most_in_flight <= 20
    # 600 per window on the limiter's clock (1 ns: the rounding of adding the period)
    assert _windows_exceeded(limiter.admitted, 600, period - 1e-9) == 0
    assert limiter.admitted[600] - limiter.admitted[0] >= period - 1e-9  # the 601st waited
    assert elapsed >= period
    median = statistics.median(lags) * 1e3
    worst = max(lags) * 1e3
    print(
        f"\n1,000 operations, 20 in flight at most, 600 per {period:g} s: {elapsed:.1f} s; "
        f"heartbeat lag median {median:.2f} ms (target < 10 ms), max {worst:.1f} ms, "
        f"{len(lags)} beats"
    )


def test_a_request_makes_no_failed_imports(server, monkeypatch):
    """httpcore looks ``sniffio`` up for every lock it makes (several per request); when the
    package is missing, each look-up is a failed import that scans ``sys.path`` -- a fifth of
    the client's time under load. It is a dependency, so the look-up is a dictionary hit."""
    import sys

    looked_up: list[str] = []

    class Counter:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] == "sniffio":
                looked_up.append(name)
            return None

    monkeypatch.setattr(sys, "meta_path", [Counter(), *sys.meta_path])
    server.routes.append(EchoRoute())
    session = http_session(server)

    async def main():
        results = await session.map([f"item {i}" for i in range(3)], "{item}")
        await session.default_branch.chat_model.aclose()
        return results

    assert anyio.run(main) == [f"answer: item {i}" for i in range(3)]
    assert looked_up == []
