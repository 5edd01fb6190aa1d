"""The Anthropic Messages endpoint against a real loopback server playing the wire fixtures."""

from __future__ import annotations

import json

from lion_nb.errors import AuthenticationError, OverloadedError, StreamInterruptedError
from lion_nb.models.endpoints.base import ChatRequest, ToolCall
from lion_nb.models.imodel import iModel
from tests.fakes.http_server import sse_events

KEY = "sk-ant-test-0123456789"
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def claude(fake, **kw) -> iModel:
    return iModel(
        provider="anthropic",
        model="claude-sonnet-4-5",
        base_url=fake.anthropic_url,
        api_key=KEY,
        **kw,
    )


def test_streaming_tool_use(http_fake, invoke):
    seen: list[str] = []
    request = ChatRequest(
        messages=[{"role": "user", "content": "Weather in Paris?"}], tools=[WEATHER_TOOL]
    )
    call = invoke(claude(http_fake, cache=False), request, sink=seen.append)
    assert call.status == "completed", call.error
    response = call.response
    assert seen == ["Let me check."]
    assert response.text == "Let me check."
    assert response.tool_calls == [
        ToolCall("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather", {"city": "Paris"})
    ]
    assert response.finish_reason == "tool_calls"
    assert response.request_id == "req_fake_1"
    assert {k: response.usage[k] for k in ("input_tokens", "output_tokens", "total_tokens")} == {
        "input_tokens": 472,
        "output_tokens": 89,
        "total_tokens": 561,
    }
    assert response.raw["content"][0]["thinking"] == "Need the weather tool."
    assert response.raw["content"][2]["input"] == {"city": "Paris"}
    [sent] = http_fake.requests
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    assert sent.body["stream"] is True
    assert sent.body["max_tokens"] == 4096
    assert sent.body["tools"] == [
        {
            "name": "get_weather",
            "description": "Weather of a city",
            "input_schema": WEATHER_TOOL["function"]["parameters"],
        }
    ]


def test_non_streamed_text(http_fake, invoke):
    call = invoke(claude(http_fake, max_tokens=100, stop="END"))
    assert call.response.text == "Hello from Claude."
    assert call.response.finish_reason == "stop"
    assert call.response.usage["total_tokens"] == 17
    sent = http_fake.requests[0].body
    assert sent["max_tokens"] == 100
    assert sent["stop_sequences"] == ["END"]
    assert "stop" not in sent and "stream" not in sent


def test_openai_messages_are_translated(http_fake, invoke):
    png = "data:image/png;base64,iVBORw0KGgo="
    messages = [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Compare"},
                {"type": "image_url", "image_url": {"url": png}},
                {"type": "image_url", "image_url": {"url": "https://example.org/cat.jpg"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "a", "arguments": '{"x": 1}'},
                },
                {"id": "t2", "type": "function", "function": {"name": "b", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "one"},
        {"role": "tool", "tool_call_id": "t2", "content": {"ok": True}},
        {"role": "user", "content": "And now?"},
    ]
    invoke(claude(http_fake, cache=False), ChatRequest(messages=messages))
    sent = http_fake.requests[0].body
    assert sent["system"] == "Be brief."
    assert sent["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Compare"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                },
                {"type": "image", "source": {"type": "url", "url": "https://example.org/cat.jpg"}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "t1", "name": "a", "input": {"x": 1}},
                {"type": "tool_use", "id": "t2", "name": "b", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "one"},
                {"type": "tool_result", "tool_use_id": "t2", "content": '{"ok": true}'},
                {"type": "text", "text": "And now?"},
            ],
        },
    ]


def _forced_tool_reply(name, value):
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": name, "input": value}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 4},
    }


def test_structured_output_is_a_forced_tool(http_fake, invoke):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    http_fake.push_json(_forced_tool_reply("Place", {"city": "Paris"}))
    call = invoke(
        claude(http_fake),
        ChatRequest(
            messages=[{"role": "user", "content": "Where?"}],
            response_format={"name": "Place", "schema": schema},
        ),
    )
    assert json.loads(call.response.text) == {"city": "Paris"}
    assert call.response.tool_calls == []
    assert call.response.finish_reason == "stop"
    sent = http_fake.requests[0].body
    assert sent["tool_choice"] == {"type": "tool", "name": "Place"}
    assert sent["tools"][-1]["name"] == "Place"
    assert sent["tools"][-1]["input_schema"] == schema


def test_structured_output_with_other_tools_lets_the_model_choose(http_fake, invoke):
    http_fake.push_json(_forced_tool_reply("answer", {"value": [1, 2]}))
    call = invoke(
        claude(http_fake),
        ChatRequest(
            messages=[{"role": "user", "content": "Numbers?"}],
            tools=[WEATHER_TOOL],
            response_format={
                "name": "answer",
                "schema": {"type": "array", "items": {"type": "integer"}},
            },
        ),
    )
    assert json.loads(call.response.text) == [1, 2]  # a non-object schema is wrapped and unwrapped
    sent = http_fake.requests[0].body
    assert sent["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in sent["tools"]] == ["get_weather", "answer"]
    assert sent["tools"][1]["input_schema"]["properties"]["value"]["type"] == "array"


def test_overloaded_before_content_is_an_overloaded_error_not_retried(http_fake, invoke):
    http_fake.push_fixture("anthropic_stream_overloaded.sse")
    call = invoke(
        claude(http_fake), ChatRequest(messages=[{"role": "user", "content": "Hi"}], stream=True)
    )
    assert isinstance(call.error, OverloadedError)
    assert "Overloaded" in str(call.error)
    assert call.error.partial_text == ""
    assert len(http_fake.requests) == 1


def test_error_after_text_is_interrupted_with_partial_text(http_fake, invoke):
    events = [
        e
        for e in sse_events("anthropic_stream_tool.sse")
        if 'index":2' not in e and "message_delta" not in e and "message_stop" not in e
    ]
    events.append(
        'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    )
    http_fake.push_sse(events)
    call = invoke(
        claude(http_fake), ChatRequest(messages=[{"role": "user", "content": "Hi"}], stream=True)
    )
    assert isinstance(call.error, StreamInterruptedError)
    assert not isinstance(call.error, OverloadedError)
    assert "overloaded_error: Overloaded" in str(call.error)
    assert call.error.partial_text == "Let me check."
    assert len(http_fake.requests) == 1


def test_missing_key_names_the_variable(invoke):
    call = invoke(iModel(provider="anthropic", model="claude-sonnet-4-5"))
    assert isinstance(call.error, AuthenticationError)
    assert "`ANTHROPIC_API_KEY`" in str(call.error)
    assert "api_key=" in str(call.error)


def test_key_from_environment(http_fake, invoke, monkeypatch):
    env_key = "sk-ant-env-key-99999"
    monkeypatch.setenv("ANTHROPIC_API_KEY", env_key)
    invoke(iModel(provider="anthropic", model="c", base_url=http_fake.anthropic_url))
    assert http_fake.requests[0].headers["x-api-key"] == env_key
