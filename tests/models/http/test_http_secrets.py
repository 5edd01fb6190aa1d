"""A key given to a model never shows: not in reprs, dicts, errors, tracebacks or logs."""

from __future__ import annotations

import copy
import json
import logging
import socket
import traceback

import anyio
import pytest

from lion_nb.models.endpoints.base import ChatRequest
from lion_nb.models.imodel import iModel
from tests.fakes.http_server import sse_events

KEY = "sk-test-SECRET-123456"
ECHO = f"Incorrect API key provided: {KEY}. Authorization: Bearer {KEY}"


def _models(fake) -> list[iModel]:
    return [
        iModel(
            provider="openai", model="gpt-4o", base_url=fake.openai_url, api_key=KEY, max_retries=1
        ),
        iModel(
            provider="anthropic", model="c", base_url=fake.anthropic_url, api_key=KEY, max_retries=1
        ),
    ]


def _texts_of(model: iModel, calls) -> list[str]:
    texts = [
        repr(model),
        repr(model.endpoint),
        json.dumps(model.to_dict(include_request_options=True, include_processor_config=True)),
        str(model.to_dict(include_live=True)),
    ]
    for call in calls:
        texts.append(repr(call))
        error = call.error
        if error is not None:
            texts += [str(error), repr(error), json.dumps(error.body, default=str)]
            texts.append("".join(traceback.format_exception(error)))
    return texts


def test_key_never_appears(http_fake, invoke, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.DEBUG)
    stream = ChatRequest(messages=[{"role": "user", "content": "Hi"}], stream=True)
    plain = ChatRequest(messages=[{"role": "user", "content": "Hi"}])
    texts: list[str] = []
    for model in _models(http_fake):
        calls = []
        http_fake.push_error(401, {"error": {"message": ECHO, "type": "authentication_error"}})
        calls.append(invoke(model, plain))
        for _ in range(2):  # retried, then failed
            http_fake.push_error(500, {"object": "error", "message": ECHO, "code": 500})
        calls.append(invoke(model, plain))
        if model.provider == "openai":
            started = sse_events("openai_stream_text.sse")[1:2]
        else:
            started = sse_events("anthropic_stream_tool.sse")[5:8]  # text block and its delta
        echo_event = json.dumps({"type": "error", "error": {"type": "api_error", "message": ECHO}})
        http_fake.push_sse([*started, f"event: error\ndata: {echo_event}"])
        calls.append(invoke(model, stream))
        assert all(call.status == "failed" for call in calls)
        assert calls[-1].error.partial_text  # the stream had started: a mid-stream error
        texts += _texts_of(model, calls)
        texts.append(repr(model.copy()))
    records = [r.getMessage() for r in caplog.records]
    records += [
        "".join(traceback.format_exception(*r.exc_info)) for r in caplog.records if r.exc_info
    ]
    texts += [*records, caplog.text]

    # the key did travel -- to the server, and only there
    assert any(KEY in r.headers.get("authorization", "") for r in http_fake.requests)
    assert any(r.headers.get("x-api-key") == KEY for r in http_fake.requests)
    assert any("retrying" in r for r in records)  # the retry was logged, and redacted
    for text in texts:
        assert KEY not in text
        assert "Bearer sk-" not in text
    assert any("Incorrect API key provided: ****" in t for t in texts)


def test_secret_values_in_settings_are_masked(http_fake):
    model = iModel(
        provider="openai",
        model="m",
        base_url=http_fake.openai_url,
        api_key=KEY,
        headers={"X-Trace": "on", "api-key": KEY},
    )
    saved = model.to_dict()
    assert saved["endpoint"]["headers"] == {"X-Trace": "on"}
    assert KEY not in json.dumps(saved)
    assert "api_key" not in saved["endpoint"]


def _frame_values(error: BaseException) -> list[str]:
    """The repr of every local of every frame of ``error``'s traceback and of its causes."""
    seen: list[str] = []
    chain: list[BaseException] = []
    while error is not None and error not in chain:
        chain.append(error)
        tb = error.__traceback__
        while tb is not None:
            seen += [f"{name}={value!r}" for name, value in tb.tb_frame.f_locals.items()]
            tb = tb.tb_next
        error = error.__cause__ or error.__context__
    return seen


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("failure", ["status", "unreachable"])
def test_no_frame_of_a_failed_call_holds_the_key(http_fake, provider, stream, failure):
    url = http_fake.openai_url if provider == "openai" else http_fake.anthropic_url
    if failure == "unreachable":  # the error then chains httpx's own frames too
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    model = iModel(provider=provider, model="m", base_url=url, api_key=KEY, max_retries=0)
    http_fake.push_error(
        400, {"error": {"message": "bad request", "type": "invalid_request_error"}}
    )
    request = ChatRequest(messages=[{"role": "user", "content": "Hi"}], stream=stream)

    async def main() -> BaseException:
        try:
            await model.endpoint.complete(request)
        except Exception as exc:
            return exc
        finally:
            await model.aclose()
        raise AssertionError("the call should have failed")

    error = anyio.run(main)
    if failure == "status":
        header = "authorization" if provider == "openai" else "x-api-key"
        assert KEY in http_fake.requests[0].headers[header]  # the key did reach the server
    values = _frame_values(error)
    assert any("complete" in v or "request=" in v for v in values)  # our frames were walked
    leaks = [v[:120] for v in values if KEY in v]
    assert leaks == []


def test_a_secret_looking_custom_header_is_sent_but_held_as_a_secret(http_fake, invoke):
    http_fake.push_json(
        {"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}
    )
    model = iModel(
        provider="openai", model="m", base_url=http_fake.openai_url, headers={"api-key": KEY}
    )
    assert invoke(model).status == "completed"
    assert http_fake.requests[0].headers["api-key"] == KEY
    assert KEY not in str(model.to_dict(include_live=True))
    assert KEY not in str(vars(model.endpoint))


def test_deepcopy_of_a_model_with_a_key_works_and_the_copy_calls(http_fake, invoke):
    model = iModel(
        provider="anthropic",
        model="c",
        base_url=http_fake.anthropic_url,
        api_key=KEY,
        concurrency_limit=2,
    )
    http_fake.push_json({"content": [{"type": "text", "text": "first"}], "role": "assistant"})

    async def first_then_copy() -> tuple:
        call = await model.invoke(ChatRequest(messages=[{"role": "user", "content": "Hi"}]))
        return call, copy.deepcopy(model)  # after a call: a live pool and limiter to copy

    call, clone = anyio.run(first_then_copy)
    assert call.response.text == "first"
    assert clone is not model and clone.endpoint is not model.endpoint
    assert clone.to_dict(include_processor_config=True) == model.to_dict(
        include_processor_config=True
    )
    http_fake.push_json({"content": [{"type": "text", "text": "second"}], "role": "assistant"})
    assert invoke(clone).response.text == "second"
    assert http_fake.requests[-1].headers["x-api-key"] == KEY
    assert KEY not in repr(clone) and KEY not in str(clone.to_dict())
