"""The Responses API through `Branch`: reasoning items that come back in every later request
byte for byte and in place (the fake refuses a request that drops, edits or moves one, as
the API does), across tool rounds, a save and load of the branch, and a cassette's record and
replay; structured output; an incomplete answer and an error in the middle of a stream under
the early-end rule (ADR-0106)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel

from lion_nb import Branch, iModel
from lion_nb.errors import ExecutionError, StreamInterruptedError
from lion_nb.models.cassettes import cassette
from lion_nb.models.endpoints.base import streaming_to
from tests.fakes.http_server import FIXTURES, FakeProvider, openai_completion
from tests.fakes.responses_api import ResponsesAPI, compact, variant

KEY = "sk-test-responses-branch-0123456789"
CALL = "openai_responses_stream_function_call.sse"
TEXT = "openai_responses_stream_reasoning_text.sse"


def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return json.dumps({"temp_c": 14, "conditions": "light rain"})


class Forecast(BaseModel):
    city: str
    celsius: int


def branch_for(url: str, **kw) -> Branch:
    kw.setdefault("stream", True)  # the stream fixtures answer streamed requests
    m = iModel(provider="openai", model="gpt-5.2", base_url=url, api_key=KEY, api="responses", **kw)
    return Branch(system="Be brief.", chat_model=m)


def three_rounds(branch: Branch) -> str:
    async def main():
        with streaming_to(lambda _text: None):  # streamed, as a notebook cell listens
            await branch.operate(instruction="Weather in Paris?", tools=[get_weather])
            await branch.operate(instruction="And in Lyon?", tools=[get_weather])
            return await branch.communicate("So, umbrella?")

    return anyio.run(main)


def records(branch: Branch) -> list[list[bytes]]:
    return [
        [compact(item) for item in m.metadata["reasoning_record"]["items"]]
        for m in branch.messages
        if m.kind == "assistant_response" and "reasoning_record" in m.metadata
    ]


def reasoning_ids(body: dict) -> list[str]:
    return [i["id"] for i in body["input"] if i.get("type") == "reasoning"]


def test_three_tool_rounds_send_the_earlier_reasoning_items_back_in_place(http_fake):
    api = ResponsesAPI(http_fake, [CALL, variant(CALL, "Lyon"), TEXT])
    branch = branch_for(http_fake.openai_url)
    assert three_rounds(branch) == 'There are 3 r\'s in "strawberry".'
    assert api.refusals == [] and len(http_fake.requests) == 3
    second, third = (r.body for r in http_fake.requests[1:])
    assert reasoning_ids(second) == ["rs_63c202939da63a6714eb496fc6504e65c7df23509c44dabe"]
    assert reasoning_ids(third) == [
        "rs_63c202939da63a6714eb496fc6504e65c7df23509c44dabe",
        "rs_Lyon63c202939da63a6714eb496fc6504e65c7df23509c44dabe",
    ]
    kinds = [i.get("type") for i in third["input"]]
    assert kinds == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "message",
    ]
    # the function call goes back as the API sent it too
    assert compact(third["input"][2]) in http_fake.requests[1].raw
    answer = branch.messages[-1]
    assert answer.metadata["thinking"].startswith("**Counting letters**")
    assert len(records(branch)) == 3


def test_the_fake_refuses_a_reasoning_item_that_was_changed(http_fake):
    """The check the other tests rely on can fail: an edited item is refused with 400."""
    api = ResponsesAPI(http_fake, [CALL, TEXT])
    branch = branch_for(http_fake.openai_url)
    anyio.run(lambda: branch.operate(instruction="Weather in Paris?", tools=[get_weather]))
    answer = next(m for m in branch.messages if m.kind == "assistant_response")
    item, call = answer.metadata["reasoning_record"]["items"]
    answer.metadata = {
        **answer.metadata,
        "reasoning_record": {
            "api": "openai.responses",
            "items": [{**item, "encrypted_content": item["encrypted_content"][:-4]}, call],
        },
    }
    with pytest.raises(ExecutionError):
        anyio.run(branch.communicate, "So?")
    assert api.refusals and "not found" in api.refusals[0]


def test_the_items_survive_saving_and_loading_the_branch(http_fake):
    api = ResponsesAPI(http_fake, [CALL, TEXT])
    branch = branch_for(http_fake.openai_url)
    anyio.run(lambda: branch.operate(instruction="Weather in Paris?", tools=[get_weather]))
    saved = json.loads(json.dumps(branch.to_dict(mode="json")))
    loaded = Branch.from_dict(saved)
    assert records(loaded) == records(branch)
    assert loaded.chat_model.endpoint.api == "responses"  # a loopback server needs no key
    answer = anyio.run(lambda: loaded.communicate("So, umbrella?", stream=True))
    assert answer == 'There are 3 r\'s in "strawberry".'
    assert api.refusals == []
    sent = http_fake.requests[-1]
    kept = records(branch)[0][0]
    assert kept in sent.raw
    assert reasoning_ids(sent.body) == ["rs_63c202939da63a6714eb496fc6504e65c7df23509c44dabe"]


def test_a_fork_sends_the_items_it_was_cloned_with_byte_for_byte(http_fake):
    api = ResponsesAPI(http_fake, [CALL, TEXT])
    branch = branch_for(http_fake.openai_url)
    anyio.run(lambda: branch.operate(instruction="Weather in Paris?", tools=[get_weather]))
    fork = branch.clone()
    assert records(fork) == records(branch)
    anyio.run(lambda: fork.communicate("So, umbrella?"))
    assert api.refusals == []
    sent = http_fake.requests[-1]
    assert all(item in sent.raw for item in records(branch)[0])
    assert reasoning_ids(sent.body) == ["rs_63c202939da63a6714eb496fc6504e65c7df23509c44dabe"]
    assert len(records(fork)) == 2 and len(records(branch)) == 1  # the original is its own


def test_a_cassette_records_and_replays_the_items_byte_for_byte(tmp_path: Path):
    path = tmp_path / "calls.jsonl"
    with FakeProvider() as server:
        api = ResponsesAPI(server, [CALL, variant(CALL, "Lyon"), TEXT])
        url = server.openai_url
        with cassette(path, mode="once") as tape:
            recorded = branch_for(url)
            three_rounds(recorded)
        assert api.refusals == [] and tape.recorded == 3
    with cassette(path, mode="none") as tape:  # the server is gone: replay only
        replayed = branch_for(url)
        three_rounds(replayed)
    assert tape.replayed == 3 and tape.recorded == 0
    assert records(replayed) == records(recorded) and len(records(replayed)) == 3
    line = json.loads(path.read_text().splitlines()[0])  # as the file holds it
    kept = line["response"]["metadata"]["reasoning_record"]["items"]
    assert [compact(i) for i in kept] == records(recorded)[0] == served_items(CALL)


def served_items(name: str) -> list[bytes]:
    """The output items of a stream fixture, as its ``output_item.done`` lines have them."""
    out = []
    for line in (FIXTURES / name).read_text().splitlines():
        if line.startswith("data: ") and '"type":"response.output_item.done"' in line:
            out.append(compact(json.loads(line[6:])["item"]))
    return out


def test_structured_output_goes_as_text_format(http_fake):
    answer = json.loads((FIXTURES / "openai_responses_nonstream.json").read_text())
    answer["output"][1]["content"][0]["text"] = json.dumps({"city": "Oslo", "celsius": 4})
    http_fake.push_json(answer)
    branch = branch_for(http_fake.openai_url, stream=False)
    result = anyio.run(lambda: branch.communicate("Oslo?", response_format=Forecast))
    assert result == Forecast(city="Oslo", celsius=4)
    fmt = http_fake.requests[-1].body["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["name"] == "Forecast"
    assert fmt["schema"]["properties"]["celsius"]["type"] == "integer"
    assert "response_format" not in http_fake.requests[-1].body


def test_an_incomplete_answer_is_kept_and_cut_by_max_output_tokens(http_fake):
    ResponsesAPI(http_fake, ["openai_responses_incomplete.sse"])
    branch = branch_for(http_fake.openai_url, max_tokens=96)
    text = anyio.run(lambda: branch.communicate("A haiku"))
    assert text == "Here is a haiku about autumn rain:\n\nCold drops on the tin roof"
    answer = branch.messages[-1]
    assert answer.metadata["finish_reason"] == "length"
    assert http_fake.requests[-1].body["max_output_tokens"] == 96


def test_a_failed_response_mid_stream_keeps_the_text_marked_incomplete(http_fake):
    ResponsesAPI(http_fake, ["openai_responses_stream_error.sse"])
    branch = branch_for(http_fake.openai_url)
    seen: list[str] = []

    async def main():
        with streaming_to(seen.append):
            await branch.communicate("Capital of France?")

    with pytest.raises(StreamInterruptedError) as info:
        anyio.run(main)
    assert info.value.partial_text == "".join(seen) == "The capital of France"
    assert [m.kind for m in branch.messages] == ["system", "instruction", "assistant_response"]
    answer = branch.messages[-1]
    assert answer.response == "The capital of France" and answer.metadata["incomplete"] is True
    assert "server_error" in answer.metadata["incomplete_reason"]


def test_the_ledger_prices_cached_and_reasoning_tokens(http_fake):
    ResponsesAPI(http_fake, ["openai_responses_nonstream.json"])
    price = {"input": 1.0, "output": 10.0, "cache_read": 0.1}
    branch = branch_for(http_fake.openai_url, price=price, stream=False)
    anyio.run(branch.communicate, "100 km/h in m/s?")
    usd = branch.messages[-1].metadata["cost_usd"]
    # 1190 input of which 1024 cached, 142 output (reasoning included)
    expected = (166 * 1.0 + 1024 * 0.1 + 142 * 10.0) / 1e6
    assert usd == pytest.approx(expected)


def test_a_chat_completions_model_later_in_the_branch_gets_no_reasoning_items(http_fake):
    ResponsesAPI(http_fake, [CALL])
    branch = branch_for(http_fake.openai_url)
    anyio.run(lambda: branch.operate(instruction="Weather in Paris?", tools=[get_weather]))
    branch.chat_model = iModel(
        provider="openai", model="gpt-4o-mini", base_url=http_fake.openai_url, api="chat"
    )
    http_fake.push_json(openai_completion("Take an umbrella."))
    assert anyio.run(branch.communicate, "So?") == "Take an umbrella."
    sent = http_fake.requests[-1]
    assert sent.path == "/v1/chat/completions"
    assistant = [m for m in sent.body["messages"] if m["role"] == "assistant"]
    assert assistant and all(set(m) <= {"role", "content", "tool_calls"} for m in assistant)
    assert b"encrypted_content" not in sent.raw
