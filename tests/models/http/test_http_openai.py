"""The OpenAI-compatible endpoint against a real loopback server playing the wire fixtures."""

from __future__ import annotations

import gc
import json
import time

import anyio
import pytest

from lion_nb.errors import AuthenticationError, ConfigurationError
from lion_nb.models.endpoints.base import ChatRequest, ToolCall
from lion_nb.models.endpoints.openai import OpenAIEndpoint
from lion_nb.models.imodel import iModel

KEY = "sk-test-openai-abcdef"
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def openai(fake, **kw) -> iModel:
    return iModel(provider="openai", model="gpt-4o", base_url=fake.openai_url, api_key=KEY, **kw)


def ask(text="What is the weather in Paris?", **kw) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], **kw)


def test_non_stream_tool_call(http_fake, invoke):
    call = invoke(openai(http_fake, temperature=0.2), ask(tools=[WEATHER_TOOL]))
    assert call.status == "completed", call.error
    response = call.response
    assert response.tool_calls == [ToolCall("call_abc123", "get_weather", {"city": "Paris"})]
    assert response.finish_reason == "tool_calls"
    assert response.text == ""
    assert response.model == "gpt-4o-2024-08-06"
    assert response.request_id == "req_fake_1"
    assert {k: response.usage[k] for k in ("input_tokens", "output_tokens", "total_tokens")} == {
        "input_tokens": 82,
        "output_tokens": 17,
        "total_tokens": 99,
    }
    assert response.usage["raw"]["prompt_tokens_details"] == {"cached_tokens": 0, "audio_tokens": 0}
    assert response.raw["id"] == "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG"
    [sent] = http_fake.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["model"] == "gpt-4o"
    assert sent.body["tools"] == [WEATHER_TOOL]
    assert sent.body["temperature"] == 0.2
    assert "stream" not in sent.body


def test_streaming_text_reaches_the_sink_as_it_arrives(http_fake, invoke):
    http_fake.push_fixture("openai_stream_text.sse", event_delay=0.15)
    seen: list[tuple[float, str]] = []
    call = invoke(
        openai(http_fake), ask("Hi"), sink=lambda text: seen.append((time.monotonic(), text))
    )
    done = time.monotonic()
    assert call.status == "completed", call.error
    assert [text for _, text in seen] == ["Hel", "lo!"]
    # the first fragment was shown while the server was still sending the rest
    assert done - seen[0][0] >= 0.3
    assert call.response.text == "Hello!"
    assert call.response.finish_reason == "stop"
    assert call.response.raw["choices"][0]["message"] == {"role": "assistant", "content": "Hello!"}
    [sent] = http_fake.requests
    assert sent.body["stream"] is True
    assert sent.body["stream_options"] == {"include_usage": True}


def test_request_stream_flag_streams_without_a_sink(http_fake, invoke):
    call = invoke(openai(http_fake), ask("Hi", stream=True))
    assert call.response.text == "Hello!"
    assert http_fake.requests[0].body["stream"] is True


def test_streamed_tool_call_fragments_are_merged(http_fake, invoke):
    http_fake.push_fixture("openai_stream_tool.sse")
    call = invoke(openai(http_fake), ask(tools=[WEATHER_TOOL], stream=True))
    assert call.status == "completed", call.error
    assert call.response.tool_calls == [ToolCall("call_abc123", "get_weather", {"city": "Paris"})]
    assert call.response.finish_reason == "tool_calls"
    assert call.response.usage["total_tokens"] == 99
    assert call.response.raw["object"] == "chat.completion"
    assert call.response.raw["model"] == "gpt-4o-2024-08-06"


def _chunk(delta, finish=None):
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return "data: " + json.dumps({"id": "c", "model": "m", "choices": [choice]})


def test_parallel_streamed_tool_calls_interleaved_by_index(http_fake, invoke):
    def frag(index, args, **first):
        return {"tool_calls": [{"index": index, "function": {"arguments": args, **first}}]}

    events = [
        _chunk({"role": "assistant", **frag(0, "", name="get_weather")}),
        _chunk({"tool_calls": [{"index": 1, "id": "call_2", "function": {"name": "get_time"}}]}),
        _chunk(frag(0, '{"city": ')),
        _chunk(frag(1, '{"zone": "CET"}')),
        _chunk(frag(0, '"Oslo"}')),
        _chunk({}, "tool_calls"),
        "data: [DONE]",
    ]
    events[0] = events[0].replace(
        '"index": 0, "function"', '"index": 0, "id": "call_1", "function"'
    )
    http_fake.push_sse(events)
    call = invoke(openai(http_fake), ask(stream=True))
    assert call.response.tool_calls == [
        ToolCall("call_1", "get_weather", {"city": "Oslo"}),
        ToolCall("call_2", "get_time", {"zone": "CET"}),
    ]


def test_response_format_becomes_a_json_schema(http_fake, invoke):
    http_fake.push_json(
        {
            "choices": [
                {"message": {"role": "assistant", "content": '{"a": 1}'}, "finish_reason": "stop"}
            ]
        }
    )
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    call = invoke(openai(http_fake), ask(response_format={"name": "My Answer", "schema": schema}))
    assert call.response.text == '{"a": 1}'
    assert call.response.usage["estimated"] is True  # the server reported none
    assert http_fake.requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "My_Answer", "schema": schema, "strict": False},
    }


def test_tool_history_goes_out_in_wire_form(http_fake, invoke):
    messages = [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Oslo"}}],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": {"temp": 3}},
    ]
    invoke(openai(http_fake), ChatRequest(messages=messages))
    sent = http_fake.requests[0].body["messages"]
    assert sent[1]["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
        }
    ]
    assert sent[2]["content"] == '{"temp": 3}'
    assert messages[1]["tool_calls"][0]["arguments"] == {"city": "Oslo"}  # input untouched


def test_ollama_preset_on_loopback_needs_no_key(http_fake, invoke):
    model = iModel(provider="ollama", model="x", base_url=http_fake.openai_url)
    call = invoke(model, ask("Hi", stream=True))
    assert call.status == "completed", call.error
    assert call.response.text == "Hello!"
    assert "authorization" not in http_fake.requests[0].headers
    assert model.to_dict()["endpoint"]["api_key_env"] is None


def test_openai_on_loopback_without_a_key_sends_no_authorization(http_fake, invoke):
    call = invoke(iModel(provider="openai", model="m", base_url=http_fake.openai_url))
    assert call.status == "completed", call.error
    assert "authorization" not in http_fake.requests[0].headers


def test_key_is_read_from_the_environment_at_call_time(http_fake, invoke, monkeypatch):
    model = iModel(provider="vllm", model="m", base_url=http_fake.openai_url)
    monkeypatch.setenv("VLLM_API_KEY", "vllm-secret-key-42")
    invoke(model)
    assert http_fake.requests[0].headers["authorization"] == "Bearer vllm-secret-key-42"


@pytest.mark.parametrize(
    ("provider", "variable"), [("openai", "OPENAI_API_KEY"), ("groq", "GROQ_API_KEY")]
)
def test_missing_key_names_the_variable(invoke, provider, variable):
    model = iModel(provider=provider, model="m")  # a remote base URL: a key is needed
    call = invoke(model)
    assert isinstance(call.error, AuthenticationError)
    text = str(call.error)
    assert f"`{variable}`" in text
    assert "api_key=" in text
    assert "%env" not in text


def test_config_repr_and_round_trip(http_fake):
    model = openai(http_fake, timeout=30, connect_timeout=2, max_retries=4, temperature=0)
    config = model.to_dict()["endpoint"]
    assert config == {
        "base_url": http_fake.openai_url,
        "preset": None,
        "api_key_env": "OPENAI_API_KEY",
        "timeout": 30.0,
        "connect_timeout": 2.0,
        "max_retries": 4,
    }
    json.dumps(model.to_dict(include_request_options=True, include_processor_config=True))
    assert repr(model.endpoint) == (
        f"OpenAIEndpoint(provider='openai', model='gpt-4o', base_url='{http_fake.openai_url}')"
    )
    clone = iModel.from_dict(model.to_dict(include_request_options=True))
    assert clone.endpoint.config() == config
    assert clone.options == {"temperature": 0}


def test_copy_keeps_an_explicit_key(http_fake, invoke):
    invoke(openai(http_fake).copy())
    assert http_fake.requests[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    "settings",
    [{"timeout": 0}, {"connect_timeout": -1}, {"max_retries": -1}, {"base_url": "localhost:80"}],
)
def test_bad_settings_are_configuration_errors(settings):
    with pytest.raises(ConfigurationError, match=f"`{next(iter(settings))}="):
        OpenAIEndpoint("m", **settings)


def test_aclose_closes_the_client(http_fake):
    endpoint = OpenAIEndpoint("m", base_url=http_fake.openai_url)

    async def main():
        await endpoint.complete(ask())
        client = endpoint._http.client
        await endpoint.aclose()
        return client

    assert anyio.run(main).is_closed


# The first loop's pooled connection cannot be closed once that loop is gone.
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_one_endpoint_works_across_event_loops(http_fake):
    endpoint = OpenAIEndpoint("m", base_url=http_fake.openai_url)
    first = anyio.run(endpoint.complete, ask())
    second = anyio.run(endpoint.complete, ask())
    anyio.run(endpoint.aclose)
    gc.collect()  # the first loop's connection goes here, under this test's filter
    assert first.tool_calls == second.tool_calls
    assert len(http_fake.requests) == 2
