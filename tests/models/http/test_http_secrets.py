"""A key given to a model never shows: not in reprs, dicts, errors, tracebacks or logs."""

from __future__ import annotations

import json
import logging
import traceback

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
