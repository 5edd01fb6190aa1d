"""A turn without tools after a turn with tool calls is a request every provider accepts.

The Messages API refuses a request whose messages hold ``tool_use`` or ``tool_result`` blocks
and that defines no ``tools`` (400 ``invalid_request_error``); the loopback server keeps that
rule. A plain follow-up (`communicate` after `operate`, a ``%%lion`` cell without ``-t``,
ReAct's final answer) used to hit it. Now the Anthropic request offers the tools the history
used, under ``tool_choice: none``. OpenAI-compatible requests keep the native history, except
for llama.cpp (``tool_history="text"``), whose servers without ``--jinja`` drop ``tool_calls``
from the prompt and refuse ``tools`` and ``tool_choice`` outright.
"""

from __future__ import annotations

import itertools
import json

import anyio
import httpx
import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import ConfigurationError
from lion_nb.models.endpoints.base import ChatRequest
from tests.fakes.http_server import anthropic_message

KEY = "sk-test-history-0123456789"
WEATHER_PARAMS = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"18 °C and clear in {city}"


def claude(fake) -> iModel:
    return iModel(
        provider="anthropic", model="claude-sonnet-4-5", base_url=fake.anthropic_url, api_key=KEY
    )


def claude_text(text: str) -> dict:
    return anthropic_message(text, input_tokens=20, output_tokens=4)


def claude_tool_use() -> dict:
    return {
        **claude_text(""),
        "id": "msg_tool",
        "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
        ],
        "stop_reason": "tool_use",
    }


def openai_text(text: str) -> dict:
    message = {"role": "assistant", "content": text}
    return {"id": "c2", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


def openai_tool_call() -> dict:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": "Oslo"})},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {
        "id": "c1",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }


def tool_turn_then_plain_turn(branch: Branch, follow_up_model: iModel | None = None) -> str:
    """A turn that offers a tool and runs its call, then a plain turn on the same branch."""

    async def main():
        try:
            await branch.operate(instruction="Weather in Oslo?", tools=[get_weather])
            kw = {} if follow_up_model is None else {"chat_model": follow_up_model}
            return await branch.communicate("Say it in one sentence.", **kw)
        finally:
            await branch.chat_model.aclose()
            if follow_up_model is not None:
                await follow_up_model.aclose()

    return anyio.run(main)


def block_types(messages: list[dict]) -> list[str]:
    return [b["type"] for m in messages if isinstance(m["content"], list) for b in m["content"]]


# -- the loopback server keeps the API's rule ---------------------------------------------------
def test_the_fake_refuses_tool_blocks_without_tools_as_the_messages_api_does(http_fake):
    http_fake.push_json(claude_text("scripted"))
    history = [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "w", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
    ]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": history}
    url = http_fake.anthropic_url + "/v1/messages"
    refused = httpx.post(url, json=body)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert "must define tools" in error["message"]
    assert http_fake.pending == 1  # the refusal used no scripted reply
    tools = [{"name": "w", "input_schema": {"type": "object"}}]
    accepted = httpx.post(url, json={**body, "tools": tools, "tool_choice": {"type": "none"}})
    assert accepted.status_code == 200 and accepted.json()["content"][0]["text"] == "scripted"


# -- Anthropic ----------------------------------------------------------------------------------
def test_a_plain_turn_after_tool_calls_offers_the_used_tools_with_tool_choice_none(http_fake):
    http_fake.push_json(claude_tool_use())
    http_fake.push_json(claude_text("It is 18 °C and clear in Oslo."))
    branch = Branch(system="Be brief.", chat_model=claude(http_fake))
    answer = tool_turn_then_plain_turn(branch)
    assert answer == "It is 18 °C and clear in Oslo."
    first, follow_up = (r.body for r in http_fake.requests)
    assert follow_up["tool_choice"] == {"type": "none"}
    assert follow_up["tools"] == first["tools"]  # the schema the tool was offered with
    assert follow_up["tools"][0]["input_schema"]["properties"] == WEATHER_PARAMS["properties"]
    # the history keeps its native blocks, so the model reads its own calls as it made them
    assert block_types(follow_up["messages"]).count("tool_use") == 1
    assert block_types(follow_up["messages"]).count("tool_result") == 1
    assert branch.messages[-1].response == answer


def test_a_model_that_never_offered_the_tool_offers_a_stand_in(http_fake):
    http_fake.push_json(claude_tool_use())
    http_fake.push_json(claude_text("Mild and clear."))
    branch = Branch(chat_model=claude(http_fake))
    answer = tool_turn_then_plain_turn(branch, follow_up_model=claude(http_fake))
    assert answer == "Mild and clear."
    follow_up = http_fake.requests[-1].body
    [tool] = follow_up["tools"]
    assert tool["name"] == "get_weather"
    assert tool["input_schema"]["type"] == "object"
    assert "not offered" in tool["description"]
    assert follow_up["tool_choice"] == {"type": "none"}


def test_react_answers_with_claude_after_its_tool_rounds(http_fake):
    from tests.fakes.http_server import Script

    def messages_api(rec):
        choice = rec.body.get("tool_choice") or {}
        if choice.get("type") == "tool":  # the structured answer of a round
            analysis = {"analysis": "Oslo is mild.", "extension_needed": False}
            block = {"type": "tool_use", "id": "toolu_a", "name": choice["name"], "input": analysis}
            return Script(body={**claude_text(""), "content": [block], "stop_reason": "tool_use"})
        if choice.get("type") == "any":  # the first round: call the tool
            return Script(body=claude_tool_use())
        return Script(body=claude_text("Oslo: 18 °C and clear."))

    http_fake.routes.append(messages_api)
    branch = Branch(chat_model=claude(http_fake))

    async def main():
        try:
            return await branch.ReAct({"instruction": "Weather in Oslo?"}, tools=[get_weather])
        finally:
            await branch.chat_model.aclose()

    assert anyio.run(main) == "Oslo: 18 °C and clear."
    statuses = [m.kind for m in branch.messages]
    assert "action_response" in statuses
    final = http_fake.requests[-1].body
    assert final["tool_choice"] == {"type": "none"}
    assert [t["name"] for t in final["tools"]] == ["get_weather"]


def test_the_anthropic_body_for_every_kind_of_follow_up(http_fake):
    endpoint = claude(http_fake).endpoint
    history = [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": "{}"},
                },
                {"id": "call_2", "type": "function", "function": {"name": "lookup"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "a"},
        {"role": "tool", "tool_call_id": "call_2", "content": "b"},
        {"role": "user", "content": "And now?"},
    ]
    # asked to call no tool, or for any choice with nothing offered: the history's tools, none
    for choice in (None, "none", "auto"):
        options = {} if choice is None else {"tool_choice": choice}
        body = endpoint._body(ChatRequest(messages=history, options=options))[0]
        assert [t["name"] for t in body["tools"]] == ["lookup"], choice
        assert body["tool_choice"] == {"type": "none"}, choice
    # a turn that offers tools of its own is sent as it is
    own = [{"type": "function", "function": {"name": "other", "parameters": WEATHER_PARAMS}}]
    body = endpoint._body(ChatRequest(messages=history, tools=own))[0]
    assert [t["name"] for t in body["tools"]] == ["other"] and "tool_choice" not in body
    # structured output defines its answer tool, which already satisfies the rule
    fmt = {"name": "Answer", "schema": {"type": "object", "properties": {}}}
    body = endpoint._body(ChatRequest(messages=history, response_format=fmt))[0]
    assert [t["name"] for t in body["tools"]] == ["Answer"]
    assert body["tool_choice"] == {"type": "tool", "name": "Answer"}
    # no tool blocks: nothing is added
    plain = [{"role": "user", "content": "Hi"}]
    body = endpoint._body(ChatRequest(messages=plain, options={"tool_choice": "none"}))[0]
    assert "tools" not in body and "tool_choice" not in body


def test_a_streamed_follow_up_is_accepted_too(http_fake):
    http_fake.push_fixture("anthropic_stream_tool.sse")  # text, then get_weather(city="Paris")
    http_fake.push_sse(
        [
            'event: message_start\ndata: {"type": "message_start", "message": {"id": "m", '
            '"role": "assistant", "model": "claude-sonnet-4-5", "content": [], '
            '"usage": {"input_tokens": 30, "output_tokens": 0}}}',
            'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, '
            '"content_block": {"type": "text", "text": ""}}',
            'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, '
            '"delta": {"type": "text_delta", "text": "Clear skies."}}',
            'event: content_block_stop\ndata: {"type": "content_block_stop", "index": 0}',
            'event: message_delta\ndata: {"type": "message_delta", "delta": '
            '{"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}',
            'event: message_stop\ndata: {"type": "message_stop"}',
        ]
    )
    model = iModel(
        provider="anthropic",
        model="claude-sonnet-4-5",
        base_url=http_fake.anthropic_url,
        api_key=KEY,
        stream=True,
    )
    assert tool_turn_then_plain_turn(Branch(chat_model=model)) == "Clear skies."
    follow_up = http_fake.requests[-1].body
    assert follow_up["stream"] is True and follow_up["tool_choice"] == {"type": "none"}


# -- OpenAI-compatible --------------------------------------------------------------------------
def openai_model(fake, **kw) -> iModel:
    return iModel(provider="openai", model="m", base_url=fake.openai_url, api_key=KEY, **kw)


def test_openai_keeps_the_native_history_in_a_request_without_tools(http_fake):
    http_fake.push_json(openai_tool_call())
    http_fake.push_json(openai_text("18 °C in Oslo."))
    branch = Branch(chat_model=openai_model(http_fake))
    assert tool_turn_then_plain_turn(branch) == "18 °C in Oslo."
    follow_up = http_fake.requests[-1].body
    assert "tools" not in follow_up and "tool_choice" not in follow_up  # OpenAI accepts this
    roles = [m["role"] for m in follow_up["messages"]]
    assert roles == ["user", "assistant", "tool", "user"]
    assert follow_up["messages"][1]["tool_calls"][0]["function"]["name"] == "get_weather"


def test_llamacpp_gets_the_tool_history_as_text_when_no_tools_are_offered(http_fake):
    http_fake.push_json(openai_tool_call())
    http_fake.push_json(openai_text("18 °C in Oslo."))
    model = iModel(provider="llamacpp", model="m", base_url=http_fake.openai_url)
    assert model.endpoint.tool_history == "text"
    assert tool_turn_then_plain_turn(Branch(chat_model=model)) == "18 °C in Oslo."
    first, follow_up = (r.body for r in http_fake.requests)
    assert first["tools"] and first["messages"][-1]["role"] == "user"  # offered natively
    messages = follow_up["messages"]
    assert "tools" not in follow_up and "tool_choice" not in follow_up
    assert all("tool_calls" not in m for m in messages)
    roles = [m["role"] for m in messages]
    assert roles == ["user", "assistant", "user"]  # user and assistant alternate
    recalled = messages[1]["content"]
    assert 'get_weather({"city": "Oslo"})' in recalled
    assert "18 °C and clear in Oslo" in recalled


def test_the_text_form_merges_turns_and_leaves_the_history_untouched():
    from lion_nb.models.endpoints.openai import text_tool_history

    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": {"celsius": 18}},
        {"role": "assistant", "content": "It is 18 °C."},
        {"role": "user", "content": "Thanks."},
    ]
    before = json.dumps(history)
    out = text_tool_history(history)
    assert json.dumps(history) == before
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert out[2]["content"].startswith("Checking.")
    assert "w({})" in out[2]["content"] and '{"celsius": 18}' in out[2]["content"]
    assert out[2]["content"].endswith("It is 18 °C.")
    plain = [{"role": "user", "content": "Hi"}]
    assert text_tool_history(plain) is plain


def test_openai_drops_tool_choice_none_when_nothing_is_offered(http_fake):
    endpoint = openai_model(http_fake).endpoint
    history = [{"role": "user", "content": "Hi"}]
    body = endpoint._body(ChatRequest(messages=history, options={"tool_choice": "none"}))[0]
    assert "tool_choice" not in body and "tools" not in body
    own = [{"type": "function", "function": {"name": "w", "parameters": WEATHER_PARAMS}}]
    body = endpoint._body(
        ChatRequest(messages=history, tools=own, options={"tool_choice": "none"})
    )[0]
    assert body["tool_choice"] == "none" and body["tools"] == own


def test_tool_history_is_a_model_setting(http_fake):
    model = openai_model(http_fake, tool_history="text")
    assert model.endpoint.tool_history == "text"
    assert model.to_dict()["endpoint"]["tool_history"] == "text"
    again = iModel.from_dict(model.to_dict())
    assert again.endpoint.tool_history == "text"
    native = iModel(provider="llamacpp", model="m", tool_history="native")
    assert native.endpoint.tool_history == "native"
    assert "tool_history" not in openai_model(http_fake).to_dict()["endpoint"]
    with pytest.raises(ConfigurationError, match="tool_history"):
        openai_model(http_fake, tool_history="prose")


# -- llama.cpp: the text form in requests that offer tools again --------------------------------
def assert_text_history(body: dict, *recalled: str) -> None:
    """The request carries no native tool message, and the earlier calls and results as text."""
    messages = body["messages"]
    assert all(m["role"] != "tool" and "tool_calls" not in m for m in messages), messages
    text = "\n".join(str(m.get("content")) for m in messages)
    for fragment in recalled:
        assert fragment in text, (fragment, text)
    roles = [m["role"] for m in messages if m["role"] != "system"]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles  # alternating


def test_llamacpp_keeps_the_tool_history_as_text_in_a_second_operate_with_tools(http_fake):
    http_fake.push_json(openai_tool_call())
    http_fake.push_json(openai_tool_call())
    model = iModel(provider="llamacpp", model="m", base_url=http_fake.openai_url)
    branch = Branch(chat_model=model)

    async def main():
        try:
            await branch.operate(instruction="Weather in Oslo?", tools=[get_weather])
            await branch.operate(instruction="And again?", tools=[get_weather])
        finally:
            await model.aclose()

    anyio.run(main)
    first, second = (r.body for r in http_fake.requests)
    assert first["tools"] and second["tools"]  # both offer the tool natively
    assert_text_history(second, 'get_weather({"city": "Oslo"})', "18 °C and clear in Oslo")
    assert second["messages"][-1]["role"] == "user"


def test_every_react_round_on_llamacpp_carries_the_earlier_rounds_as_text(http_fake):
    from tests.fakes.http_server import Script

    offered = []

    def server(rec):
        body = rec.body
        if body.get("tools"):  # a round: call the tool
            offered.append(body)
            return Script(body=openai_tool_call())
        if body.get("response_format"):  # a round's analysis: extend once
            more = len(offered) < 2
            analysis = {"analysis": "Oslo is mild.", "extension_needed": more}
            return Script(body=openai_text(json.dumps(analysis)))
        return Script(body=openai_text("Oslo: 18 °C and clear."))

    http_fake.routes.append(server)
    model = iModel(provider="llamacpp", model="m", base_url=http_fake.openai_url)
    branch = Branch(chat_model=model)

    async def main():
        try:
            return await branch.ReAct(
                {"instruction": "Weather in Oslo?"}, tools=[get_weather], max_extensions=2
            )
        finally:
            await model.aclose()

    assert anyio.run(main) == "Oslo: 18 °C and clear."
    assert len(offered) == 2  # two rounds offered the tool
    assert_text_history(offered[1], 'get_weather({"city": "Oslo"})', "18 °C and clear in Oslo")
    for rec in http_fake.requests[1:]:  # every request after the first tool call
        assert_text_history(rec.body, "18 °C and clear in Oslo")
