"""The retry policy, deadlines and broken streams, against a real loopback server."""

from __future__ import annotations

import itertools
import socket
import time
from email.utils import formatdate

import anyio
import httpx
import pytest

from lion_nb.errors import (
    BadRequestError,
    OverloadedError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    QuotaExceededError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
)
from lion_nb.models.endpoints._http import backoff, parse_retry_after
from lion_nb.models.endpoints.base import ChatRequest, streaming_to
from lion_nb.models.imodel import iModel
from tests.fakes.http_server import sse_events

OK = {"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}


def model(fake, **kw) -> iModel:
    return iModel(provider="ollama", model="m", base_url=fake.openai_url, **kw)


def gaps(fake) -> list[float]:
    times = [r.time for r in fake.requests]
    return [b - a for a, b in itertools.pairwise(times)]


def streamed() -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": "Hi"}], stream=True)


def test_429_with_retry_after_is_retried_once_after_the_wait(http_fake, invoke):
    http_fake.push_error(429, headers={"Retry-After": "1"})
    http_fake.push_json(OK)
    call = invoke(model(http_fake))
    assert call.status == "completed", call.error
    assert call.response.text == "ok"
    assert len(http_fake.requests) == 2
    assert gaps(http_fake)[0] >= 1.0


GROQ_TPM = (
    "Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_01` service "
    "tier `on_demand` on tokens per minute (TPM): Limit 6000, Used 5821, Requested 912. Please "
    "try again in 7.33s. Need more tokens? Upgrade to Dev Tier today at "
    "https://console.groq.com/settings/billing"
)


def test_rate_limit_whose_message_mentions_billing_is_retried(http_fake, invoke):
    body = {"error": {"message": GROQ_TPM, "type": "tokens", "code": "rate_limit_exceeded"}}
    http_fake.push_error(429, body, headers={"Retry-After": "1"})
    http_fake.push_json(OK)
    call = invoke(model(http_fake))
    assert call.status == "completed", call.error
    assert len(http_fake.requests) == 2
    assert gaps(http_fake)[0] >= 1.0


def test_insufficient_quota_is_retried_like_any_429_and_ends_as_quota_exceeded(http_fake, invoke):
    body = {
        "error": {
            "message": "You exceeded your current quota.",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    for _ in range(2):
        http_fake.push_error(429, body, headers={"retry-after-ms": "10"})
    call = invoke(model(http_fake, max_retries=1))
    assert type(call.error) is QuotaExceededError
    assert len(http_fake.requests) == 2
    assert "billing" in str(call.error)
    assert "`limit_requests=`" not in str(call.error)  # slowing down will not help


def test_500_three_times_is_a_server_error_after_two_retries(http_fake, invoke):
    for _ in range(3):
        http_fake.push_error(500)
    call = invoke(model(http_fake))
    assert isinstance(call.error, ServerError)
    assert call.error.status == 500
    assert "scripted failure" in str(call.error)
    assert len(http_fake.requests) == 3
    first, second = gaps(http_fake)
    assert 0.375 - 0.05 <= first <= 0.5 + 0.25  # 0.5 s minus up to 25 % jitter
    assert 0.75 - 0.05 <= second <= 1.0 + 0.25


def test_529_is_retried_and_ends_as_overloaded(http_fake, invoke):
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    for _ in range(2):
        http_fake.push_error(529, body, headers={"retry-after-ms": "10"})
    call = invoke(model(http_fake, max_retries=1))
    assert isinstance(call.error, OverloadedError)
    assert len(http_fake.requests) == 2


def test_400_is_not_retried(http_fake, invoke):
    http_fake.push_error(
        400, {"error": {"message": "bad field `foo`", "type": "invalid_request_error"}}
    )
    call = invoke(model(http_fake))
    assert isinstance(call.error, BadRequestError)
    assert "bad field `foo`" in str(call.error)
    assert len(http_fake.requests) == 1


def test_x_should_retry_false_wins_over_a_503(http_fake, invoke):
    http_fake.push_error(503, headers={"x-should-retry": "false"})
    call = invoke(model(http_fake))
    assert isinstance(call.error, ServerError)
    assert call.error.retryable is False
    assert len(http_fake.requests) == 1


def test_x_should_retry_true_retries_even_a_400(http_fake, invoke):
    http_fake.push_error(400, headers={"x-should-retry": "true", "retry-after-ms": "10"})
    http_fake.push_json(OK)
    call = invoke(model(http_fake))
    assert call.status == "completed", call.error
    assert len(http_fake.requests) == 2


def test_retry_after_ms_is_honoured(http_fake, invoke):
    http_fake.push_error(429, headers={"retry-after-ms": "20"})
    http_fake.push_json(OK)
    call = invoke(model(http_fake))
    assert call.status == "completed"
    assert gaps(http_fake)[0] < 0.3  # far below the 0.375 s minimum backoff


def test_retry_after_above_a_minute_is_ignored(http_fake, invoke):
    http_fake.push_error(429, headers={"retry-after": "120"})
    http_fake.push_json(OK)
    call = invoke(model(http_fake))
    assert call.status == "completed"
    assert gaps(http_fake)[0] < 1.0


def test_max_retries_zero_fails_at_once(http_fake, invoke):
    http_fake.push_error(429)
    call = invoke(model(http_fake, max_retries=0))
    assert isinstance(call.error, RateLimitError)
    assert len(http_fake.requests) == 1


def test_mid_stream_error_is_interrupted_not_retried(http_fake, invoke):
    http_fake.push_fixture("openai_stream_midstream_error.sse")
    seen: list[str] = []
    call = invoke(model(http_fake), streamed(), sink=seen.append)
    assert isinstance(call.error, StreamInterruptedError)
    assert call.error.partial_text == "Par"
    assert seen == ["Par"]
    assert "The server had an error while processing your request" in str(call.error)
    assert call.error.request_id == "req_fake_1"
    assert len(http_fake.requests) == 1


def test_stream_cut_mid_body_is_interrupted_not_retried(http_fake, invoke):
    http_fake.push_fixture("openai_stream_text.sse", cut_after=3)
    call = invoke(model(http_fake), streamed())
    assert isinstance(call.error, StreamInterruptedError)
    assert call.error.partial_text == "Hello!"
    assert "broke off" in str(call.error)
    assert len(http_fake.requests) == 1


def test_stream_that_ends_early_is_interrupted(http_fake, invoke):
    http_fake.push_sse(sse_events("openai_stream_text.sse")[:2])  # a clean end, but too soon
    call = invoke(model(http_fake), streamed())
    assert isinstance(call.error, StreamInterruptedError)
    assert call.error.partial_text == "Hel"


def test_slow_first_byte_times_out_and_is_retried(http_fake, invoke):
    # the server would answer after 60 s: an answer at all would mean no deadline was kept.
    # The deadline leaves a loaded machine time to deliver each request to the server.
    http_fake.push(body=OK, first_byte_delay=60)
    http_fake.push(body=OK, first_byte_delay=60)
    call = invoke(model(http_fake, timeout=1.0, max_retries=1))
    assert isinstance(call.error, ProviderTimeoutError)
    assert isinstance(call.error, TimeoutError)
    assert "`timeout=`" in str(call.error)
    deadline = time.monotonic() + 30  # the server records on its own thread: let it catch up
    while len(http_fake.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(http_fake.requests) == 2


def test_slow_first_byte_within_the_deadline_succeeds(http_fake, invoke):
    http_fake.push(body=OK, first_byte_delay=0.2)
    call = invoke(model(http_fake, timeout=2))
    assert call.response.text == "ok"


def test_unreachable_server_is_a_connection_error(invoke):
    with socket.socket() as sock:  # a port that was free a moment ago
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    m = iModel(provider="ollama", model="m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1)
    call = invoke(m)
    assert isinstance(call.error, ProviderConnectionError)
    assert f"`http://127.0.0.1:{port}/v1`" in str(call.error)
    assert "base_url" in str(call.error)


def test_malformed_json_is_not_retried(http_fake, invoke):
    http_fake.push_malformed()
    call = invoke(model(http_fake))
    assert type(call.error) is ProviderError
    assert "not JSON" in str(call.error)
    assert len(http_fake.requests) == 1


def test_malformed_stream_event_is_interrupted(http_fake, invoke):
    events = sse_events("openai_stream_text.sse")
    http_fake.push_sse([*events[:2], "data: {not json", *events[2:]])
    call = invoke(model(http_fake), streamed())
    assert isinstance(call.error, StreamInterruptedError)
    assert call.error.partial_text == "Hel"


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "0"}, None),
        ({"retry-after": "61"}, None),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers, expected):
    assert parse_retry_after(httpx.Headers(headers)) == expected


def test_parse_retry_after_http_date():
    value = parse_retry_after({"retry-after": formatdate(time.time() + 10, usegmt=True)})
    assert value is not None and 8 <= value <= 10


def test_backoff_bounds():
    for n, top in [(0, 0.5), (1, 1.0), (2, 2.0), (4, 8.0), (10, 8.0)]:
        waits = [backoff(n) for _ in range(200)]
        assert all(0.75 * top <= w <= top for w in waits)


def test_timeout_is_a_deadline_for_the_whole_stream(http_fake, invoke):
    # every event arrives well within the deadline, the whole stream does not; "Hel" (the
    # second event) comes 0.7 s before the deadline, so a loaded machine still sees it
    http_fake.push_fixture("openai_stream_text.sse", event_delay=0.5)
    call = invoke(model(http_fake, timeout=1.2), streamed())
    assert isinstance(call.error, ProviderTimeoutError)
    assert call.error.partial_text.startswith("Hel")
    assert len(http_fake.requests) == 1  # the stream had started: not retried


def test_a_cancelled_stream_leaves_the_endpoint_usable(http_fake):
    # the server sends the first event (no text yet), then waits 30 s: the call is cancelled
    # once the server has the request, a condition, so a loaded machine cannot reorder it
    http_fake.push_fixture("openai_stream_text.sse", event_delay=30)
    m = model(http_fake)
    seen: list[str] = []

    async def cancel_once_sent(scope: anyio.CancelScope) -> None:
        while not http_fake.requests:
            await anyio.sleep(0.01)
        scope.cancel()

    async def main():
        with streaming_to(seen.append):
            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_once_sent, tg.cancel_scope)
                await m.invoke(streamed())
        after = await m.invoke(streamed())
        await m.aclose()
        return tg.cancel_scope.cancel_called, after

    cancelled, after = anyio.run(main)
    assert cancelled
    assert seen == []  # "Hel" is the second event, 30 s away when cancelled
    assert after.response.text == "Hello!"
    assert len(http_fake.requests) == 2
