"""`RateLimiter` on its own, and bounding an iModel's calls to a real server."""

from __future__ import annotations

import anyio
import pytest

from lion_nb.errors import ConfigurationError
from lion_nb.models.endpoints.base import ChatRequest
from lion_nb.models.imodel import iModel
from lion_nb.models.ratelimit import RateLimiter

OK = {"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}


def hello() -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": "Hi"}])


def _run_many(model: iModel, n: int) -> list:
    calls: list = []

    async def one() -> None:
        calls.append(await model.invoke(hello()))

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(n):
                tg.start_soon(one)
        await model.aclose()

    anyio.run(main)
    return calls


def test_concurrency_limit_bounds_requests_in_flight(http_fake):
    for _ in range(6):
        http_fake.push(body=OK, first_byte_delay=0.15)
    model = iModel(provider="ollama", model="m", base_url=http_fake.openai_url, concurrency_limit=2)
    calls = _run_many(model, 6)
    assert [c.status for c in calls] == ["completed"] * 6
    assert len(http_fake.requests) == 6
    assert http_fake.max_in_flight == 2


def test_without_a_limit_requests_overlap(http_fake):
    for _ in range(4):
        http_fake.push(body=OK, first_byte_delay=0.15)
    _run_many(iModel(provider="ollama", model="m", base_url=http_fake.openai_url), 4)
    assert http_fake.max_in_flight >= 3


def test_concurrency_is_counted_inside_the_slot():
    limiter = RateLimiter(max_concurrency=3)
    active = peak = 0

    async def work() -> None:
        nonlocal active, peak
        async with limiter.slot():
            active += 1
            peak = max(peak, active)
            assert limiter.in_flight <= 3
            await anyio.sleep(0.02)
            active -= 1

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(work)

    anyio.run(main)
    assert peak == 3


def _admission_times(limiter: RateLimiter, tokens: list[int]) -> list[float]:
    async def main() -> list[float]:
        start = anyio.current_time()
        times = []
        for n in tokens:
            async with limiter.slot(n):
                times.append(anyio.current_time() - start)
        return times

    return anyio.run(main)


def test_requests_per_minute_waits_for_the_window():
    times = _admission_times(RateLimiter(requests_per_minute=2, period=0.4), [0, 0, 0, 0])
    assert times[1] < 0.1
    assert 0.4 - 0.01 <= times[2] < 0.6
    assert times[3] < 0.6  # admitted with the third, when the first two left the window


def test_tokens_per_minute_waits_for_room():
    times = _admission_times(RateLimiter(tokens_per_minute=100, period=0.3), [60, 30, 60])
    assert times[1] < 0.1  # 90 <= 100
    assert times[2] >= 0.3 - 0.01


def test_a_call_larger_than_the_token_limit_still_runs_alone():
    times = _admission_times(RateLimiter(tokens_per_minute=100, period=0.2), [500, 10])
    assert times[0] < 0.05
    assert times[1] >= 0.2 - 0.01


def test_limits_through_imodel(http_fake):
    model = iModel(
        provider="ollama",
        model="m",
        base_url=http_fake.openai_url,
        limit_requests=100,
        limit_tokens=100_000,
    )
    calls = _run_many(model, 3)
    assert [c.status for c in calls] == ["completed"] * 3
    assert model.to_dict(include_processor_config=True)["processor"] == {
        "limit_requests": 100,
        "limit_tokens": 100_000,
    }


@pytest.mark.parametrize(
    "kw", [{"requests_per_minute": 0}, {"tokens_per_minute": -5}, {"max_concurrency": True}]
)
def test_bad_limits_are_configuration_errors(kw):
    with pytest.raises(ConfigurationError, match=f"`{next(iter(kw))}="):
        RateLimiter(**kw)
