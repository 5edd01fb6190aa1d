"""``reasoning=`` on Claude against the loopback server playing the thinking fixtures: the
``thinking`` form each model takes, refusals before any request, thinking streamed to the
thinking sink, and thinking / redacted thinking blocks sent back byte for byte (the fake
refuses a changed or missing signature with 400, as the API does), across a save and load of
the branch, and never to another provider."""

from __future__ import annotations

import json

import anyio
import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import ConfigurationError, ExecutionError
from lion_nb.models.anthropic_thinking import thinking_form
from lion_nb.models.cassettes import cassette
from lion_nb.models.endpoints.base import ChatRequest, thinking_to
from tests.fakes.anthropic_thinking import ThinkingAPI, compact, streamed_blocks
from tests.fakes.http_server import (
    FakeProvider,
    anthropic_message,
    openai_completion,
    sse_events,
)

KEY = "sk-ant-test-thinking-0123456789"
TOOL = "anthropic_stream_thinking_tool.sse"
REDACTED = "anthropic_stream_redacted_thinking.sse"
SIGNATURE = streamed_blocks(sse_events(TOOL))[0]["signature"]


def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return "14°C, light rain"


def claude(url: str, model: str = "claude-sonnet-4-5-20250929", **kw) -> iModel:
    kw.setdefault("stream", True)  # the stream fixtures answer streamed requests
    return iModel(provider="anthropic", model=model, base_url=url, api_key=KEY, **kw)


def tool_round(url: str, **kw) -> Branch:
    branch = Branch(chat_model=claude(url, reasoning="low", **kw))
    anyio.run(
        lambda: branch.operate(instruction="What's the weather in Paris?", tools=[get_weather])
    )
    return branch


def assistant_turns(body: dict) -> list[list[dict]]:
    return [m["content"] for m in body["messages"] if m["role"] == "assistant"]


def test_a_tool_round_sends_the_thinking_block_back_unchanged_before_the_call(http_fake):
    api = ThinkingAPI(http_fake, [TOOL, anthropic_message("Take an umbrella.")])
    seen = []
    branch = Branch(chat_model=claude(http_fake.anthropic_url, reasoning="low"))

    async def main():
        with thinking_to(seen.append):
            await branch.operate(instruction="What's the weather in Paris?", tools=[get_weather])
        return await branch.communicate("So, umbrella?", stream=False)

    assert anyio.run(main) == "Take an umbrella."
    assert api.refusals == [] and len(http_fake.requests) == 2
    first, second = (r.body for r in http_fake.requests)
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2048}  # as the fixture
    assert first["max_tokens"] > 2048
    thought = "".join(c.content for c in seen)
    assert thought.startswith("The user wants the current weather in Paris.")
    assert {c.type for c in seen} == {"thinking"}
    answer = next(m for m in branch.messages if m.kind == "assistant_response")
    assert answer.metadata["thinking"] == thought
    record = answer.metadata["reasoning_record"]
    assert record["api"] == "anthropic"
    assert [b["type"] for b in record["items"]] == ["thinking", "text", "tool_use"]
    [turn] = assistant_turns(second)
    assert [b["type"] for b in turn] == ["thinking", "text", "tool_use"]
    assert turn[0] == streamed_blocks(sse_events(TOOL))[0]
    assert turn[0]["signature"] == SIGNATURE
    assert compact(turn[0]) in http_fake.requests[1].raw
    assert turn[2]["id"] == "toolu_01V3fnzPAHY7Y8hHduboHyBY"
    assert second["messages"][2]["content"][0]["type"] == "tool_result"


@pytest.mark.parametrize("change", ["edited", "dropped", "missing"])
def test_the_fake_refuses_a_changed_or_missing_signature(http_fake, change):
    """The check the other tests rely on can fail: a 400 as the API answers."""
    api = ThinkingAPI(http_fake, [TOOL, anthropic_message("unused")])
    branch = tool_round(http_fake.anthropic_url)
    answer = next(m for m in branch.messages if m.kind == "assistant_response")
    thinking, *rest = answer.metadata["reasoning_record"]["items"]
    if change == "edited":
        items = [{**thinking, "signature": SIGNATURE[:-4] + "AAAA"}, *rest]
    elif change == "dropped":
        items = [{k: v for k, v in thinking.items() if k != "signature"}, *rest]
    else:
        items = rest
    answer.metadata = {**answer.metadata, "reasoning_record": {"api": "anthropic", "items": items}}
    with pytest.raises(ExecutionError):
        anyio.run(branch.communicate, "So?")
    assert len(api.refusals) == 1
    assert ("signature" in api.refusals[0]) == (change != "missing")
    assert http_fake.requests[-1].body["messages"][1]["role"] == "assistant"


def test_redacted_thinking_blocks_go_back_unchanged_and_in_order(http_fake):
    api = ThinkingAPI(http_fake, [REDACTED, anthropic_message("Sure.")])
    branch = Branch(chat_model=claude(http_fake.anthropic_url, "claude-3-7-sonnet-20250219"))
    branch.chat_model.endpoint.options["reasoning"] = "medium"
    text = anyio.run(branch.communicate, "ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING")
    assert text == "I'm not sure what you'd like help with. Could you tell me more?"
    answer = next(m for m in branch.messages if m.kind == "assistant_response")
    assert "thinking" not in answer.metadata  # redacted: nothing readable
    served = streamed_blocks(sse_events(REDACTED))
    assert answer.metadata["reasoning_record"]["items"] == served
    anyio.run(lambda: branch.communicate("Tell me more.", stream=False))
    assert api.refusals == []
    [turn] = assistant_turns(http_fake.requests[1].body)
    assert turn[:3] == served[:3] and [b["type"] for b in turn] == ["redacted_thinking"] * 3 + [
        "text"
    ]
    assert all(compact(b) in http_fake.requests[1].raw for b in served[:3])
    assert http_fake.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 8192}


@pytest.mark.parametrize(
    ("model", "thinking", "effort"),
    [
        ("claude-opus-4-6", {"type": "adaptive", "display": "summarized"}, "high"),
        ("claude-opus-4-7", {"type": "adaptive", "display": "summarized"}, "high"),
        ("claude-sonnet-4-5-20250929", {"type": "enabled", "budget_tokens": 16384}, None),
        ("claude-opus-4-1-20250805", {"type": "enabled", "budget_tokens": 16384}, None),
    ],
)
def test_reasoning_high_sends_the_form_the_model_takes(http_fake, invoke, model, thinking, effort):
    http_fake.push_json(anthropic_message("ok"))
    m = claude(http_fake.anthropic_url, model, stream=False)
    request = ChatRequest(
        messages=[{"role": "user", "content": "Hi"}], options={"reasoning": "high"}
    )
    call = invoke(m, request)
    assert call.status == "completed", call.error
    assert call.response.notes == []
    [sent] = http_fake.requests
    assert sent.body["thinking"] == thinking
    assert sent.body.get("output_config") == ({"effort": effort} if effort else None)
    assert sent.body["max_tokens"] > 16384


@pytest.mark.parametrize(
    ("model", "max_tokens", "says"),
    [
        ("claude-3-5-haiku-latest", None, "does not think"),
        ("claude-3-opus-20240229", None, "does not think"),
        ("claude-unknown-9", None, "not known"),
        ("claude-sonnet-4-5", 4000, "max_tokens=4000"),
    ],
)
def test_a_model_that_would_refuse_gets_a_configuration_error_before_any_request(
    http_fake, model, max_tokens, says
):
    kw = {"max_tokens": max_tokens} if max_tokens else {}
    branch = Branch(chat_model=claude(http_fake.anthropic_url, model, reasoning="high", **kw))
    with pytest.raises((ConfigurationError, ExecutionError)) as info:
        anyio.run(branch.communicate, "Hi")
    error = info.value if isinstance(info.value, ConfigurationError) else info.value.__cause__
    assert isinstance(error, ConfigurationError) and says in str(error)
    assert "\n" not in str(error)
    assert http_fake.requests == []


def test_structured_output_with_thinking_is_refused_before_any_request(http_fake, invoke):
    m = claude(http_fake.anthropic_url, stream=False)
    request = ChatRequest(
        messages=[{"role": "user", "content": "Hi"}],
        response_format={"name": "answer", "schema": {"type": "object"}},
        options={"reasoning": "low"},
    )
    call = invoke(m, request)
    assert isinstance(call.error, ConfigurationError) and "forced" in str(call.error)
    assert http_fake.requests == []


@pytest.mark.parametrize(
    ("model", "form"),
    [
        ("claude-sonnet-4-20250514", "budget"),
        ("claude-sonnet-4", "budget"),
        ("claude-opus-4-0", "budget"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "budget"),
        ("claude-haiku-4-5", "budget"),
        ("claude-3-7-sonnet-latest", "budget"),
        ("claude-sonnet-4-6", "adaptive"),
        ("claude-opus-4-6@20260101", "adaptive"),
        ("claude-mythos-preview", "adaptive"),
        ("claude-3-5-sonnet-20241022", "none"),
        ("gpt-5.2", None),
    ],
)
def test_the_table_of_forms(model, form):
    assert thinking_form(model) == form


def test_a_switch_to_an_openai_model_sends_no_anthropic_blocks(http_fake):
    ThinkingAPI(http_fake, [TOOL])
    branch = tool_round(http_fake.anthropic_url)
    branch.chat_model = iModel(
        provider="openai", model="gpt-4o-mini", base_url=http_fake.openai_url, api="chat"
    )
    http_fake.push_json(openai_completion("Take an umbrella."))
    assert anyio.run(branch.communicate, "So?") == "Take an umbrella."
    sent = http_fake.requests[-1]
    assert sent.path == "/v1/chat/completions"
    assert SIGNATURE.encode() not in sent.raw and b"reasoning_record" not in sent.raw
    assistant = [m for m in sent.body["messages"] if m["role"] == "assistant"]
    assert assistant and all(set(m) <= {"role", "content", "tool_calls"} for m in assistant)


def test_an_openai_record_is_not_sent_to_anthropic(http_fake, invoke):
    http_fake.push_json(anthropic_message("ok"))
    foreign = {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAAAABsecret"}
    request = ChatRequest(
        messages=[
            {"role": "user", "content": "Hi"},
            {
                "role": "assistant",
                "content": "Hello.",
                "reasoning_record": {"api": "openai.responses", "items": [foreign]},
            },
            {"role": "user", "content": "Again?"},
        ]
    )
    call = invoke(claude(http_fake.anthropic_url, stream=False), request)
    assert call.status == "completed", call.error
    [sent] = http_fake.requests
    assert b"gAAAAABsecret" not in sent.raw and b"reasoning_record" not in sent.raw
    assert assistant_turns(sent.body) == [[{"type": "text", "text": "Hello."}]]


def test_the_blocks_survive_saving_and_loading_the_branch(http_fake):
    api = ThinkingAPI(http_fake, [TOOL, anthropic_message("Take an umbrella.")])
    branch = tool_round(http_fake.anthropic_url)
    saved = json.loads(json.dumps(branch.to_dict(mode="json")))
    loaded = Branch.from_dict(saved)
    before = next(m for m in branch.messages if m.kind == "assistant_response")
    after = next(m for m in loaded.messages if m.kind == "assistant_response")
    assert after.metadata["reasoning_record"] == before.metadata["reasoning_record"]
    # a saved branch keeps its model's settings, not its request options: asked per call
    reply = anyio.run(lambda: loaded.communicate("So, umbrella?", reasoning="low", stream=False))
    assert reply == "Take an umbrella."
    assert api.refusals == []
    sent = http_fake.requests[-1]
    [turn] = assistant_turns(sent.body)
    assert turn[0] == streamed_blocks(sse_events(TOOL))[0]
    assert compact(turn[0]) in sent.raw
    assert sent.body["thinking"] == {"type": "enabled", "budget_tokens": 2048}


def test_a_fork_sends_the_thinking_block_it_was_cloned_with(http_fake):
    api = ThinkingAPI(http_fake, [TOOL, anthropic_message("Take an umbrella.")])
    branch = tool_round(http_fake.anthropic_url)
    fork = branch.clone()
    reply = anyio.run(lambda: fork.communicate("So, umbrella?", reasoning="low", stream=False))
    assert reply == "Take an umbrella." and api.refusals == []
    sent = http_fake.requests[-1]
    [turn] = assistant_turns(sent.body)
    assert compact(turn[0]) == compact(streamed_blocks(sse_events(TOOL))[0])
    assert compact(turn[0]) in sent.raw


@pytest.mark.parametrize("option", [{"temperature": 0.2}, {"top_k": 5}, {"top_p": 0.5}])
def test_sampling_the_api_refuses_with_thinking_is_refused_before_any_request(
    http_fake, invoke, option
):
    m = claude(http_fake.anthropic_url, stream=False, reasoning="low", **option)
    call = invoke(m)
    assert isinstance(call.error, ConfigurationError) and "sampling" in str(call.error)
    assert http_fake.requests == []


def test_temperature_without_reasoning_is_still_sent(http_fake, invoke):
    http_fake.push_json(anthropic_message("ok"))
    call = invoke(claude(http_fake.anthropic_url, stream=False, temperature=0.2))
    assert call.status == "completed", call.error
    assert http_fake.requests[0].body["temperature"] == 0.2


def test_a_cassette_records_and_replays_the_blocks_byte_for_byte(tmp_path):
    path = tmp_path / "calls.jsonl"

    def conversation(url: str) -> Branch:
        branch = tool_round(url)
        anyio.run(lambda: branch.communicate("So, umbrella?", stream=False))
        return branch

    with FakeProvider() as server:
        api = ThinkingAPI(server, [TOOL, anthropic_message("Take an umbrella.")])
        url = server.anthropic_url
        with cassette(path, mode="once") as tape:
            recorded = conversation(url)
        assert api.refusals == [] and tape.recorded == 2
        sent = server.requests[-1]
    with cassette(path, mode="none") as tape:  # the server is gone: replay only
        replayed = conversation(url)
    assert tape.replayed == 2 and tape.recorded == 0

    def record(branch: Branch) -> list[bytes]:
        answer = next(m for m in branch.messages if m.kind == "assistant_response")
        return [compact(b) for b in answer.metadata["reasoning_record"]["items"]]

    assert record(replayed) == record(recorded)
    assert record(recorded)[0] == compact(streamed_blocks(sse_events(TOOL))[0])
    assert record(recorded)[0] in sent.raw


def test_interleaved_thinking_goes_back_in_its_order_between_the_calls(http_fake, invoke):
    http_fake.push_json(anthropic_message("ok"))

    def use(n: int) -> dict:
        return {"type": "tool_use", "id": f"toolu_{n}", "name": "get_weather", "input": {"n": n}}

    def calls(n: int) -> dict:
        fn = {"name": "get_weather", "arguments": json.dumps({"n": n})}
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"toolu_{n}", "function": fn}],
        }

    first = {"type": "thinking", "thinking": "Paris first.", "signature": "sigA"}
    second = {"type": "thinking", "thinking": "Now Lyon.", "signature": "sigB"}
    items = [first, {"type": "text", "text": "Checking."}, use(1), second, use(2)]
    messages = [
        {"role": "user", "content": "Paris and Lyon?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "reasoning_record": {"api": "anthropic", "items": items},
        },
        calls(1),
        calls(2),
        {"role": "tool", "tool_call_id": "toolu_1", "content": "14°C"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "16°C"},
    ]
    request = ChatRequest(
        messages=messages, tools=[{"type": "function", "function": {"name": "get_weather"}}]
    )
    call = invoke(claude(http_fake.anthropic_url, stream=False, cache=False), request)
    assert call.status == "completed", call.error
    [turn] = assistant_turns(http_fake.requests[0].body)
    assert turn == items  # one turn, each call once, the thinking where it was
