"""End to end through `Branch` against the loopback server: communicate, operate with tools,
structured output and streaming for both HTTP providers, and what the branch holds after a
fault (the issue's acceptance: the branch stays consistent and says what happened)."""

from __future__ import annotations

import json
import time

import anyio
import pytest
from pydantic import BaseModel

from lion_nb import Branch, iModel
from lion_nb.errors import ExecutionError, OverloadedError, ServerError, StreamInterruptedError
from lion_nb.models.endpoints.base import streaming_to
from tests.fakes.http_server import anthropic_message, openai_completion

KEY = "sk-test-branch-0123456789"


def openai_branch(fake, **kw) -> Branch:
    model = iModel(
        provider="openai", model="gpt-4o-mini", base_url=fake.openai_url, api_key=KEY, **kw
    )
    return Branch(system="Be brief.", chat_model=model)


def anthropic_branch(fake, **kw) -> Branch:
    model = iModel(
        provider="anthropic",
        model="claude-sonnet-4-5",
        base_url=fake.anthropic_url,
        api_key=KEY,
        **kw,
    )
    return Branch(system="Be brief.", chat_model=model)


def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"18 °C and clear in {city}"


class Forecast(BaseModel):
    city: str
    celsius: int


# -- OpenAI-compatible -------------------------------------------------------------------------
def test_openai_communicate_records_the_exchange_with_usage(http_fake):
    http_fake.push_json(openai_completion("Hello there."))
    branch = openai_branch(http_fake)
    assert anyio.run(branch.communicate, "Hi") == "Hello there."
    assert [m.kind for m in branch.messages] == ["system", "instruction", "assistant_response"]
    assert branch.messages[-1].metadata["usage"]["input_tokens"] == 11
    sent = http_fake.requests[-1].body
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]


def test_openai_streaming_reaches_the_sink_and_the_branch(http_fake):
    http_fake.push_fixture("openai_stream_text.sse")
    branch = openai_branch(http_fake)
    fragments: list[str] = []

    async def main():
        with streaming_to(fragments.append):
            return await branch.communicate("Greet me")

    text = anyio.run(main)
    assert len(fragments) > 1 and "".join(fragments) == text
    assert branch.messages[-1].response == text and http_fake.requests[-1].body["stream"] is True


def test_openai_operate_runs_the_native_tool_call(http_fake):
    http_fake.push_fixture("openai_nonstream_tool.json")  # get_weather(city="Paris")
    branch = openai_branch(http_fake)
    anyio.run(lambda: branch.operate(instruction="Weather in Paris?", tools=[get_weather]))
    kinds = [m.kind for m in branch.messages]
    assert kinds == [
        "system",
        "instruction",
        "assistant_response",
        "action_request",
        "action_response",
    ]
    response = branch.messages[-1]
    assert response.output == "18 °C and clear in Paris" and not response.is_error
    offered = http_fake.requests[-1].body["tools"]
    assert offered[0]["function"]["name"] == "get_weather"


def test_openai_structured_output_through_communicate_and_operate(http_fake):
    http_fake.push_json(openai_completion(json.dumps({"city": "Oslo", "celsius": 4})))
    http_fake.push_json(openai_completion(json.dumps({"city": "Rome", "celsius": 21})))
    branch = openai_branch(http_fake)
    first = anyio.run(lambda: branch.communicate("Oslo?", response_format=Forecast))
    second = anyio.run(lambda: branch.operate(instruction="Rome?", response_format=Forecast))
    assert first == Forecast(city="Oslo", celsius=4)
    assert isinstance(second, Forecast) and second.celsius == 21
    fmt = http_fake.requests[0].body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Forecast"


def test_openai_429_retry_after_then_success(http_fake):
    http_fake.push_error(429, headers={"Retry-After": "1"})
    http_fake.push_json(openai_completion("made it"))
    branch = openai_branch(http_fake)
    start = time.monotonic()
    assert anyio.run(branch.communicate, "Hi") == "made it"
    times = [r.time for r in http_fake.requests]
    assert len(times) == 2 and times[1] - times[0] >= 1.0 and time.monotonic() - start >= 1.0
    assert [m.kind for m in branch.messages] == ["system", "instruction", "assistant_response"]


def test_openai_500_three_times_is_a_typed_error_and_the_branch_is_unchanged(http_fake):
    for _ in range(3):
        http_fake.push_error(500)
    branch = openai_branch(http_fake)
    before = branch.to_dict()["messages"]
    with pytest.raises(ExecutionError) as info:
        anyio.run(branch.communicate, "Hi")
    assert isinstance(info.value.__cause__, ServerError) and info.value.__cause__.status == 500
    assert len(http_fake.requests) == 3
    assert branch.to_dict()["messages"] == before
    assert branch.logs[-1].content["status"] == "failed"


def test_openai_mid_stream_error_raises_and_keeps_the_partial_answer_marked(http_fake):
    http_fake.push_fixture("openai_stream_midstream_error.sse")
    branch = openai_branch(http_fake)
    seen: list[str] = []

    async def main():
        with streaming_to(seen.append):
            await branch.communicate("Capital of France?")

    with pytest.raises(StreamInterruptedError) as info:
        anyio.run(main)
    assert info.value.partial_text == "".join(seen) != ""
    assert len(http_fake.requests) == 1  # never retried
    # what arrived is kept, marked incomplete (ADR-0106)
    assert [m.kind for m in branch.messages] == ["system", "instruction", "assistant_response"]
    answer = branch.messages[-1]
    assert answer.response == "".join(seen)
    assert answer.metadata["incomplete"] is True
    assert "error in the middle of the stream" in answer.metadata["incomplete_reason"]


# -- Anthropic -----------------------------------------------------------------------------------
def test_anthropic_communicate_records_the_exchange(http_fake):
    http_fake.push_json(anthropic_message("Bonjour."))
    branch = anthropic_branch(http_fake)
    assert anyio.run(branch.communicate, "Hi") == "Bonjour."
    sent = http_fake.requests[-1]
    assert sent.path == "/v1/messages"
    assert sent.body["system"] == [
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
    ]
    assert (
        sent.headers["x-api-key"] == KEY
        and branch.messages[-1].metadata["usage"]["output_tokens"] == 2
    )


def test_anthropic_streamed_tool_use_through_operate(http_fake):
    http_fake.push_fixture("anthropic_stream_tool.sse")  # text, then get_weather(city="Paris")
    branch = anthropic_branch(http_fake)
    fragments: list[str] = []

    async def main():
        with streaming_to(fragments.append):
            return await branch.operate(instruction="Weather in Paris?", tools=[get_weather])

    anyio.run(main)
    assert "".join(fragments).startswith("Let me check.")
    request, response = branch.messages[-2], branch.messages[-1]
    assert request.function == "get_weather" and request.arguments == {"city": "Paris"}
    assert response.output == "18 °C and clear in Paris"
    assert http_fake.requests[-1].body["tools"][0]["name"] == "get_weather"


def test_anthropic_structured_output(http_fake):
    body = {
        **anthropic_message(""),
        "content": [
            {
                "type": "tool_use",
                "id": "t1",
                "name": "Forecast",
                "input": {"city": "Kyiv", "celsius": 3},
            }
        ],
        "stop_reason": "tool_use",
    }
    http_fake.push_json(body)
    branch = anthropic_branch(http_fake)
    result = anyio.run(lambda: branch.communicate("Kyiv?", response_format=Forecast))
    assert result == Forecast(city="Kyiv", celsius=3)


def test_anthropic_overloaded_in_stream_is_typed_and_leaves_the_branch(http_fake):
    http_fake.push_fixture("anthropic_stream_overloaded.sse")
    branch = anthropic_branch(http_fake)

    async def main():
        with streaming_to(lambda text: None):
            await branch.communicate("Hi")

    with pytest.raises(ExecutionError) as info:
        anyio.run(main)
    assert isinstance(info.value.__cause__, (OverloadedError, StreamInterruptedError))
    assert "verloaded" in str(info.value)
    assert len(http_fake.requests) == 1 and [m.kind for m in branch.messages] == ["system"]
