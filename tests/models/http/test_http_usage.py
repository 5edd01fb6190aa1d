"""Usage in one shape from every HTTP provider, and an estimate when a stream reports none."""

from __future__ import annotations

import json

from lion_nb.models.endpoints.base import ChatRequest
from lion_nb.models.imodel import iModel
from tests.fakes.http_server import anthropic_message, openai_completion

KEY = "sk-test-usage-abcdef"


def ask(text="Tell me about Paris.", **kw) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], **kw)


def _stream_without_usage(text: str) -> list[str]:
    head = {"id": "c1", "object": "chat.completion.chunk", "model": "llama"}
    events = [
        {**head, "choices": [{"index": 0, "delta": {"content": part}, "finish_reason": None}]}
        for part in text.split(" ")
    ]
    events.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return [f"data: {json.dumps(e)}" for e in events] + ["data: [DONE]"]


def test_a_stream_without_usage_gets_an_estimate_marked_estimated(http_fake, invoke):
    http_fake.push_sse(_stream_without_usage("Paris is the capital of France ."))
    model = iModel(provider="llamacpp", model="qwen", base_url=http_fake.openai_url)
    call = invoke(model, ask(stream=True))
    assert call.status == "completed", call.error
    usage = call.response.usage
    assert usage["estimated"] is True
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert usage["cache_read_tokens"] == 0 and usage["reasoning_tokens"] == 0


def test_a_stream_with_usage_is_not_estimated(http_fake, invoke):
    events = _stream_without_usage("Hi there")
    usage = {"prompt_tokens": 30, "completion_tokens": 2, "total_tokens": 32}
    events.insert(-1, "data: " + json.dumps({"id": "c1", "choices": [], "usage": usage}))
    http_fake.push_sse(events)
    model = iModel(provider="llamacpp", model="qwen", base_url=http_fake.openai_url)
    call = invoke(model, ask(stream=True))
    assert "estimated" not in call.response.usage
    assert call.response.usage["input_tokens"] == 30


def test_openai_cached_and_reasoning_tokens_are_read(http_fake, invoke):
    body = openai_completion("ok", prompt_tokens=2000, completion_tokens=300)
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": 1536}
    body["usage"]["completion_tokens_details"] = {"reasoning_tokens": 256}
    http_fake.push_json(body)
    model = iModel(provider="openai", model="gpt-4o", base_url=http_fake.openai_url, api_key=KEY)
    usage = invoke(model, ask()).response.usage
    assert {k: usage[k] for k in usage if k.endswith("_tokens")} == {
        "input_tokens": 2000,
        "output_tokens": 300,
        "total_tokens": 2300,
        "cache_read_tokens": 1536,
        "cache_write_tokens": 0,
        "reasoning_tokens": 256,
    }


def test_anthropic_input_counts_cached_parts_too(http_fake, invoke):
    body = anthropic_message("ok", input_tokens=50, output_tokens=7)
    body["usage"].update(cache_read_input_tokens=4000, cache_creation_input_tokens=900)
    http_fake.push_json(body)
    model = iModel(
        provider="anthropic", model="claude-sonnet-4-5", base_url=http_fake.url, api_key=KEY
    )
    usage = invoke(model, ask()).response.usage
    assert usage["input_tokens"] == 4950
    assert usage["cache_read_tokens"] == 4000
    assert usage["cache_write_tokens"] == 900
    assert usage["output_tokens"] == 7
    assert usage["raw"]["input_tokens"] == 50
