"""The Responses API wire form of the OpenAI-compatible provider, one call at a time, against
the loopback server playing the fixtures byte for byte: which form a model speaks, the
request it sends, streamed and non-streamed answers, thinking, usage, the early ends."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest

from lion_nb import iModel
from lion_nb.errors import ConfigurationError, StreamInterruptedError
from lion_nb.models.endpoints.base import ChatRequest, streaming_to, thinking_to
from lion_nb.models.stream import StreamChunk
from tests.fakes.http_server import FIXTURES, openai_completion
from tests.fakes.responses_api import ResponsesAPI, compact

KEY = "sk-test-responses-0123456789"
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def model(fake, **kw) -> iModel:
    kw.setdefault("api", "responses")
    return iModel(provider="openai", model="gpt-5.2", base_url=fake.openai_url, api_key=KEY, **kw)


def call(m: iModel, request: ChatRequest, text=None, thinking=None):
    async def main():
        try:
            with streaming_to(text), thinking_to(thinking):
                return await m.invoke(request)
        finally:
            await m.aclose()

    return anyio.run(main)


def ask(text: str = "How many r's in strawberry?", **kw) -> ChatRequest:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}]
    return ChatRequest(messages=messages, **kw)


def done_item(name: str, index: int) -> dict:
    for line in (FIXTURES / name).read_text().splitlines():
        if line.startswith("data: "):
            data = json.loads(line[6:])
            if data["type"] == "response.output_item.done" and data["output_index"] == index:
                return data["item"]
    raise AssertionError("no such item")


# -- which wire --------------------------------------------------------------------------------
def test_openais_own_host_defaults_to_responses_and_every_other_server_to_chat(http_fake):
    assert iModel(provider="openai", model="gpt-5.2").endpoint.api == "responses"
    other = iModel(provider="openai", model="m", base_url=http_fake.openai_url)
    assert other.endpoint.api == "chat"
    assert iModel(provider="ollama", model="llama3").endpoint.api == "chat"
    chosen = model(http_fake)
    assert chosen.endpoint.api == "responses"
    again = iModel.from_dict(chosen.to_dict())
    assert again.endpoint.api == "responses"
    assert "api" not in iModel(provider="openai", model="gpt-5.2").to_dict().get("endpoint", {})


def test_a_default_base_url_pointed_at_another_server_speaks_chat(http_fake, monkeypatch):
    """As the tutorials' recorder points it at the loopback server."""
    from lion_nb.models.endpoints.openai import OpenAIEndpoint

    monkeypatch.setattr(OpenAIEndpoint, "default_base_url", http_fake.openai_url)
    assert iModel(provider="openai", model="gpt-5.2").endpoint.api == "chat"


def test_an_unknown_api_is_a_one_line_configuration_error():
    with pytest.raises(ConfigurationError) as info:
        iModel(provider="openai", model="gpt-5.2", api="completions")
    message = str(info.value)
    assert "\n" not in message and "`chat`" in message and "`responses`" in message


def test_the_responses_api_is_posted_to_its_own_path_with_a_stateless_body(http_fake):
    ResponsesAPI(http_fake, ["openai_responses_nonstream.json"])
    request = ask(
        tools=[WEATHER_TOOL],
        options={
            "max_tokens": 300,
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        },
        cache_key="branch-1",
    )
    result = call(model(http_fake), request)
    assert result.status == "completed", result.error
    sent = http_fake.requests[-1]
    assert sent.path == "/v1/responses"
    body = sent.body
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert "previous_response_id" not in body and "messages" not in body
    assert body["instructions"] == "Be brief."
    assert body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "How many r's in strawberry?"}],
        }
    ]
    assert body["max_output_tokens"] == 300 and "max_tokens" not in body
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Get the current weather for a city.",
            "parameters": WEATHER_TOOL["function"]["parameters"],
        }
    ]
    assert body["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert body["prompt_cache_key"] == "branch-1"
    assert "stream" not in body


def test_history_becomes_input_items_images_calls_and_results_included(http_fake):
    ResponsesAPI(http_fake, ["openai_responses_nonstream.json"])
    messages = [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "14 C"},
        {"role": "assistant", "content": "It is 14 C."},
        {"role": "user", "content": "Thanks"},
    ]
    assert call(model(http_fake), ChatRequest(messages=messages)).status == "completed"
    assert http_fake.requests[-1].body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                {
                    "type": "input_image",
                    "image_url": "data:image/png;base64,AAAA",
                    "detail": "auto",
                },
            ],
        },
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "14 C"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "It is 14 C."}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks"}]},
    ]


# -- answers -------------------------------------------------------------------------------------
def test_a_streamed_answer_with_thinking_usage_and_its_reasoning_items(http_fake):
    name = "openai_responses_stream_reasoning_text.sse"
    ResponsesAPI(http_fake, [name])
    text: list[str] = []
    thinking: list[StreamChunk] = []
    result = call(model(http_fake), ask(stream=True), text.append, thinking.append)
    assert result.status == "completed", result.error
    assert http_fake.requests[-1].body["stream"] is True
    response = result.response
    assert response.text == "".join(text) == 'There are 3 r\'s in "strawberry".'
    assert all(c.type == "thinking" and c.is_delta for c in thinking)
    summary = "".join(c.content for c in thinking)
    assert summary.startswith("**Counting letters**") and summary.endswith("are r: three.")
    assert response.metadata["thinking"] == (
        "**Counting letters**\n\nSpelling out s-t-r-a-w-b-e-r-r-y.\n\n"
        "**Checking**\n\nPositions 3, 8 and 9 are r: three."
    )
    record = response.metadata["reasoning_record"]
    assert record["api"] == "openai.responses"
    # the `.done` copy (the `.added` one carries a shorter, different encrypted_content)
    assert compact(record["items"][0]) == compact(done_item(name, 0))
    assert record["items"][1] == {"type": "message"}
    assert response.finish_reason == "stop"
    usage = response.usage
    assert (usage["input_tokens"], usage["output_tokens"]) == (1432, 215)
    assert (usage["cache_read_tokens"], usage["reasoning_tokens"]) == (1280, 192)
    assert usage["total_tokens"] == 1647


def test_a_non_streamed_answer_reads_the_same(http_fake):
    ResponsesAPI(http_fake, ["openai_responses_nonstream.json"])
    response = call(model(http_fake), ask("100 km/h in m/s?")).response
    assert response.text == "100 km/h is about 27.8 m/s (100 / 3.6)."
    assert response.metadata["thinking"].startswith("**Converting units**")
    item = json.loads((FIXTURES / "openai_responses_nonstream.json").read_text())["output"][0]
    assert compact(response.metadata["reasoning_record"]["items"][0]) == compact(item)
    assert response.usage["cache_read_tokens"] == 1024 and response.usage["reasoning_tokens"] == 118


def test_a_streamed_function_call_is_a_tool_call_with_its_reasoning_before_it(http_fake):
    name = "openai_responses_stream_function_call.sse"
    ResponsesAPI(http_fake, [name])
    response = call(model(http_fake), ask("Weather in Paris?", stream=True)).response
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_74elMxepQHU0BlyQXMAjgr0Q", "get_weather", {"city": "Paris"})
    ]
    assert response.finish_reason == "tool_calls" and response.text == ""
    items = response.metadata["reasoning_record"]["items"]
    assert [compact(i) for i in items] == [compact(done_item(name, 0)), compact(done_item(name, 1))]
    assert "thinking" not in response.metadata  # no summary in this answer


def test_incomplete_keeps_the_partial_text_with_finish_reason_length(http_fake):
    ResponsesAPI(http_fake, ["openai_responses_incomplete.sse"])
    result = call(model(http_fake), ask("A haiku", stream=True, options={"max_tokens": 96}))
    assert result.status == "completed", result.error
    response = result.response
    assert response.text == "Here is a haiku about autumn rain:\n\nCold drops on the tin roof"
    assert response.finish_reason == "length"
    assert http_fake.requests[-1].body["max_output_tokens"] == 96
    assert response.usage["reasoning_tokens"] == 80


def test_response_failed_mid_stream_is_a_stream_error_with_the_text_received(http_fake):
    ResponsesAPI(http_fake, ["openai_responses_stream_error.sse"])
    text: list[str] = []
    result = call(model(http_fake), ask(stream=True), text.append)
    assert result.status == "failed"
    error = result.error
    assert isinstance(error, StreamInterruptedError)
    assert error.partial_text == "".join(text) == "The capital of France"
    assert "server_error" in str(error) and "error in the middle of the stream" in str(error)
    assert len(http_fake.requests) == 1  # never retried


@pytest.mark.parametrize("flat", [False, True])
def test_an_error_event_mid_stream_is_a_stream_error_in_either_shape(http_fake, flat):
    events = (FIXTURES / "openai_responses_stream_error_event.sse").read_text()
    if flat:  # the shape the API reference documents: the fields at the top level
        nested = '"error":{"type":"too_many_requests","code":"too_many_requests",'
        events = events.replace(nested, '"code":"too_many_requests",').replace("null}}", "null}")
    ResponsesAPI(http_fake, [events])
    result = call(model(http_fake), ask(stream=True))
    assert isinstance(result.error, StreamInterruptedError)
    assert "Too Many Requests" in str(result.error)
    assert len(http_fake.requests) == 1


def test_a_stream_cut_before_its_terminal_event_is_interrupted(http_fake):
    from tests.fakes.http_server import sse_events

    http_fake.push_sse(sse_events("openai_responses_stream_reasoning_text.sse")[:18])
    text: list[str] = []
    result = call(model(http_fake), ask(stream=True), text.append)
    assert isinstance(result.error, StreamInterruptedError)
    assert result.error.partial_text == "".join(text) == "There are 3 r's in"


# -- reasoning effort ------------------------------------------------------------------------------
def test_reasoning_effort_on_the_responses_api_from_the_model_and_per_call(http_fake):
    ResponsesAPI(http_fake, ["openai_responses_nonstream.json"] * 2)
    m = model(http_fake, reasoning="low")
    call(m, ask())
    call(m, ask(options={"reasoning": "high"}))
    first, second = (r.body for r in http_fake.requests)
    assert first["reasoning"] == {"effort": "low", "summary": "auto"}
    assert second["reasoning"] == {"effort": "high", "summary": "auto"}
    assert "reasoning_effort" not in first


def test_reasoning_effort_on_chat_completions(http_fake):
    http_fake.push_json(openai_completion("ok"))
    m = model(http_fake, api="chat", reasoning="minimal")
    assert call(m, ask()).status == "completed"
    body = http_fake.requests[-1].body
    assert body["reasoning_effort"] == "minimal" and "reasoning" not in body


def test_a_bad_reasoning_level_is_refused_before_any_request(http_fake):
    with pytest.raises(ConfigurationError) as info:
        model(http_fake, reasoning="extreme")
    assert "\n" not in str(info.value) and "'minimal'" in str(info.value)
    m = model(http_fake)
    with pytest.raises(ConfigurationError):
        call(m, ask(options={"reasoning": 3}))
    assert http_fake.requests == []


def test_a_provider_that_does_not_map_reasoning_yet_leaves_it_out_and_says_so():
    seen: list[dict] = []

    def play(messages, **request):
        seen.append(request["options"])
        return "ok"

    m = iModel(provider="offline", model="function", function=play, reasoning="high")
    result = call(m, ask())
    assert result.status == "completed", result.error
    assert result.response.text == "ok"
    assert seen and all("reasoning" not in options for options in seen)
    assert any("`reasoning=`" in note for note in result.response.notes)


def test_a_chat_completions_reasoning_content_is_thinking_too(http_fake):
    def chunk(delta: dict, finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return "data: " + json.dumps(
            {"id": "c1", "object": "chat.completion.chunk", "choices": [choice]}
        )

    http_fake.push_sse(
        [
            chunk({"reasoning_content": "Three r's"}),
            chunk({"reasoning_content": ", counted."}),
            chunk({"content": "3"}, "stop"),
            "data: [DONE]",
        ]
    )
    thinking: list[StreamChunk] = []
    result = call(model(http_fake, api="chat"), ask(stream=True), None, thinking.append)
    assert result.response.text == "3"
    assert [c.content for c in thinking] == ["Three r's", ", counted."]
    assert result.response.metadata == {"thinking": "Three r's, counted."}


@pytest.mark.parametrize("name", ["o3", "o4-mini", "gpt-5.2", "gpt-5-mini-2025-08-07"])
def test_a_reasoning_model_on_chat_completions_gets_its_limit_as_max_completion_tokens(
    http_fake, name
):
    http_fake.push_json(openai_completion("ok"))
    m = iModel(provider="openai", model=name, base_url=http_fake.openai_url, api_key=KEY)
    assert m.endpoint.api == "chat"  # a loopback URL: Chat Completions
    assert call(m, ask(options={"max_tokens": 300})).status == "completed"
    body = http_fake.requests[-1].body
    assert body["max_completion_tokens"] == 300 and "max_tokens" not in body


def test_other_chat_models_keep_max_tokens_and_the_fake_refuses_it_where_openai_does(http_fake):
    http_fake.push_json(openai_completion("ok"))
    m = iModel(provider="openai", model="gpt-4o-mini", base_url=http_fake.openai_url, api_key=KEY)
    assert call(m, ask(options={"max_tokens": 300})).status == "completed"
    assert http_fake.requests[-1].body["max_tokens"] == 300
    # the loopback server answers as OpenAI does when a reasoning model gets `max_tokens`
    raw = httpx.post(
        http_fake.openai_url + "/chat/completions",
        json={"model": "o3", "messages": [], "max_tokens": 5},
    )
    assert raw.status_code == 400 and raw.json()["error"]["param"] == "max_tokens"


@pytest.mark.parametrize("api", ["responses", "chat"])
@pytest.mark.parametrize("name", ["gpt-4o-mini", "gpt-4.1", "gpt-5-chat-latest"])
def test_an_openai_model_that_does_not_reason_refuses_an_effort_before_any_request(
    http_fake, api, name
):
    m = iModel(provider="openai", model=name, base_url=http_fake.openai_url, api_key=KEY, api=api)
    call = anyio.run(m.invoke, ask(options={"reasoning": "high"}))
    assert isinstance(call.error, ConfigurationError)
    assert f"`{name}` does not reason" in str(call.error) and "\n" not in str(call.error)
    assert http_fake.requests == []


@pytest.mark.parametrize(
    ("provider", "name", "api", "field"),
    [
        ("openai", "gpt-5.2", "responses", ("reasoning", {"effort": "high", "summary": "auto"})),
        ("openai", "o4-mini", "chat", ("reasoning_effort", "high")),
        ("ollama", "qwen3:8b", None, ("reasoning_effort", "high")),
        ("vllm", "openai/gpt-oss-20b", None, ("reasoning_effort", "high")),
    ],
)
def test_reasoning_high_is_the_field_each_openai_compatible_wire_takes(
    http_fake, provider, name, api, field
):
    reply = "openai_responses_nonstream.json" if api == "responses" else openai_completion("ok")
    if api == "responses":
        ResponsesAPI(http_fake, [reply])
    else:
        http_fake.push_json(reply)
    kw = {"api": api} if api else {}
    m = iModel(provider=provider, model=name, base_url=http_fake.openai_url, api_key=KEY, **kw)
    assert call(m, ask(options={"reasoning": "high"})).status == "completed"
    body = http_fake.requests[-1].body
    key, value = field
    assert body[key] == value
    assert ({"reasoning", "reasoning_effort"} - {key}).isdisjoint(body)
