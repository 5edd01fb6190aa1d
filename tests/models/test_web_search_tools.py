"""A provider's own web search offered through ``tools=``, end to end against the loopback
fakes: the Responses API's hosted ``{"type": "web_search"}`` and Anthropic's server tool
``{"type": "web_search_20250305", "name": "web_search"}``. Each is offered as given (per call,
on the model, or to ``operate`` beside registered functions), the answer lands on the branch
with its citations and the provider's search items in its record, and the next request sends
those back in place, as the API requires (the fakes refuse anything else)."""

from __future__ import annotations

import anyio
import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import ExecutionError
from tests.fakes import provider_fixtures
from tests.fakes.anthropic_thinking import ThinkingAPI, compact, streamed_blocks
from tests.fakes.http_server import anthropic_message, sse_events
from tests.fakes.responses_api import ResponsesAPI, web_searched

http_fake = provider_fixtures.http_fake
KEY = "sk-test-web-search-0123456789"
HOSTED = {"type": "web_search"}
SERVER = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
SEARCH_SSE = "anthropic_stream_server_tool.sse"
RELEASES = "https://www.python.org/downloads/"
NOTE = {
    "type": "url_citation",
    "start_index": 14,
    "end_index": 27,
    "url": RELEASES,
    "title": "Python Releases",
}
WORDS = ("The latest is", " Python 3.14.0", ", out in October.")


def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"14 C in {city}"


def gpt(fake, **kw) -> iModel:
    return iModel(
        provider="openai",
        model="gpt-5.2",
        base_url=fake.openai_url,
        api="responses",
        api_key=KEY,
        stream=True,
        **kw,
    )


def claude(fake, **kw) -> iModel:
    return iModel(
        provider="anthropic",
        model="claude-sonnet-4-5-20250929",
        base_url=fake.anthropic_url,
        api_key=KEY,
        stream=True,
        **kw,
    )


def searched() -> str:
    return web_searched("latest Python release", WORDS, [NOTE])


def answer_of(branch: Branch, n: int = -1):
    return [m for m in branch.messages if m.kind == "assistant_response"][n]


# -- OpenAI Responses: the hosted tool ------------------------------------------------------------
def test_responses_web_search_per_call_lands_with_its_citation_and_goes_back_in_place(http_fake):
    api = ResponsesAPI(http_fake, [searched(), "openai_responses_nonstream.json"])
    branch = Branch(chat_model=gpt(http_fake))

    async def main():
        said = await branch.communicate("What is the latest Python?", tools=[HOSTED])
        await branch.communicate("Thanks.", stream=False)
        return said

    said = anyio.run(main)
    assert said == "".join(WORDS)
    first, second = (r.body for r in http_fake.requests)
    assert first["tools"] == [HOSTED]  # as the API takes it, not wrapped as a function
    answer = answer_of(branch, 0)
    [cite] = answer.metadata["citations"]
    assert cite["url"] == RELEASES and cite["title"] == "Python Releases"
    assert said[: cite["end"]].endswith("Python 3.14.0")
    record = answer.metadata["reasoning_record"]["items"]
    assert [i["type"] for i in record] == ["reasoning", "web_search_call", "message"]
    assert record[1]["action"] == {"type": "search", "query": "latest Python release"}
    # the next request: the reasoning item, then the search it led to, whole, then the text
    assert api.refusals == []
    kinds = [item.get("type") for item in second["input"]]
    assert kinds == ["message", "reasoning", "web_search_call", "message", "message"]
    assert compact(second["input"][2]) == compact(record[1])
    assert "tools" not in second  # offered per call: not again


def test_the_responses_fake_refuses_a_turn_that_drops_the_search(http_fake):
    """The check the test above relies on can fail: a reasoning item sent without the search
    that followed it is refused, as the API refuses a reasoning item without its next item."""
    api = ResponsesAPI(http_fake, [searched(), "openai_responses_nonstream.json"])
    branch = Branch(chat_model=gpt(http_fake, tools=[HOSTED]))
    anyio.run(lambda: branch.communicate("What is the latest Python?"))
    answer = answer_of(branch)
    record = answer.metadata["reasoning_record"]
    kept = [i for i in record["items"] if i["type"] != "web_search_call"]
    answer.metadata = {**answer.metadata, "reasoning_record": {**record, "items": kept}}
    with pytest.raises(ExecutionError, match="required following item"):
        anyio.run(lambda: branch.communicate("Thanks.", stream=False))
    assert api.refusals


def test_operate_offers_the_hosted_tool_beside_registered_functions(http_fake):
    ResponsesAPI(http_fake, [searched()])
    branch = Branch(chat_model=gpt(http_fake))
    out = anyio.run(
        lambda: branch.operate(
            instruction="What is the latest Python?", tools=[get_weather, HOSTED], actions=True
        )
    )
    [sent] = http_fake.requests
    names = [(t["type"], t.get("name")) for t in sent.body["tools"]]
    assert names == [("function", "get_weather"), ("web_search", None)]
    assert "web_search" not in branch.acts.registry  # the provider runs it, not the branch
    assert "Python 3.14.0" in str(out)
    assert answer_of(branch).metadata["citations"][0]["url"] == RELEASES


def test_a_models_own_tools_option_joins_the_functions_operate_offers(http_fake):
    ResponsesAPI(http_fake, [searched()])
    branch = Branch(chat_model=gpt(http_fake, tools=[HOSTED]))
    anyio.run(lambda: branch.operate(instruction="Python?", tools=[get_weather], actions=True))
    [sent] = http_fake.requests
    assert [t["type"] for t in sent.body["tools"]] == ["function", "web_search"]


# -- Anthropic: the server tool -------------------------------------------------------------------
def test_anthropic_web_search_through_tools_lands_and_its_blocks_go_back(http_fake):
    api = ThinkingAPI(http_fake, [SEARCH_SSE, anthropic_message("Yes.")])
    branch = Branch(chat_model=claude(http_fake))

    async def main():
        await branch.communicate("What is the latest Python?", tools=[SERVER])
        await branch.communicate("Thanks.", tools=[SERVER], stream=False)

    anyio.run(main)
    first, second = http_fake.requests
    [offered] = first.body["tools"]
    assert {k: offered[k] for k in SERVER} == SERVER  # as given (a cache marker may join)
    answer = answer_of(branch, 0)
    [cite] = answer.metadata["citations"]
    assert cite["kind"] == "web_search" and cite["url"].startswith("https://www.python.org/")
    kinds = [b["type"] for b in answer.metadata["reasoning_record"]["items"]]
    assert kinds[1:3] == ["server_tool_use", "web_search_tool_result"]
    assert api.refusals == []
    blocks = streamed_blocks(sse_events(SEARCH_SSE))
    assert compact(blocks[1]) in second.raw and compact(blocks[2]) in second.raw


def test_the_anthropic_fake_plays_a_search_only_to_a_request_that_offers_the_tool(http_fake):
    api = ThinkingAPI(http_fake, [SEARCH_SSE])
    branch = Branch(chat_model=claude(http_fake))
    with pytest.raises(ExecutionError, match="server tool"):
        anyio.run(lambda: branch.communicate("What is the latest Python?"))
    assert api.refusals and api.replies == [SEARCH_SSE]


def test_operate_offers_the_server_tool_beside_registered_functions(http_fake):
    ThinkingAPI(http_fake, [SEARCH_SSE])
    branch = Branch(chat_model=claude(http_fake))
    anyio.run(
        lambda: branch.operate(
            instruction="What is the latest Python?", tools=[get_weather, SERVER], actions=True
        )
    )
    [sent] = http_fake.requests
    names = [(t.get("type"), t["name"]) for t in sent.body["tools"]]
    assert ("web_search_20250305", "web_search") in names
    assert any(name == "get_weather" for _, name in names)
    record = answer_of(branch).metadata["reasoning_record"]["items"]
    assert "server_tool_use" in [b["type"] for b in record]
    assert not [m for m in branch.messages if m.kind == "action_request"]  # the API ran it
