"""Citations on the answer, against the loopback servers playing the providers' wire:
Anthropic's ``citations`` on text blocks (streamed as ``citations_delta``s, and whole in a
non-streamed answer) from a document and from the web search tool, the Responses API's
``url_citation`` annotations (on the item, or only in ``annotation.added`` events) and Chat
Completions' ``message.annotations``: one shape on ``metadata["citations"]``, kept on the
message through ``to_dict`` / ``from_dict``, the store and a cassette, never sent back."""

from __future__ import annotations

import json

import anyio
import pytest

from lion_nb import Branch, Session, iModel
from lion_nb.errors import ExecutionError
from lion_nb.models.cassettes import cassette
from lion_nb.store.store import SessionStore
from tests.fakes import provider_fixtures
from tests.fakes.anthropic_thinking import ThinkingAPI, compact, streamed_blocks
from tests.fakes.http_server import FakeProvider, anthropic_message, openai_completion, sse_events
from tests.fakes.responses_api import ResponsesAPI, url_cited

# the loopback server and no key from the machine, as in the other provider tests
http_fake = provider_fixtures.http_fake
_no_provider_keys = provider_fixtures._no_provider_keys

KEY = "sk-test-citations-0123456789"
CITED = "anthropic_stream_citations.sse"
SEARCH = "anthropic_stream_server_tool.sse"
WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
STRAWBERRY = "openai_responses_stream_reasoning_text.sse"
PY = "https://www.python.org/downloads/release/python-3140/"

DOCUMENT = [
    {
        "n": 1,
        "title": "Facts",
        "url": None,
        "cited_text": "The grass is green. ",
        "kind": "document",
        "end": 45,
    },
    {
        "n": 1,
        "title": "Facts",
        "url": None,
        "cited_text": "The sky is blue. ",
        "kind": "document",
        "end": 65,
    },
]
ANSWER = "According to the document, the grass is green and the sky is blue."


def claude(url: str, **kw) -> iModel:
    kw.setdefault("stream", True)
    return iModel(
        provider="anthropic", model="claude-sonnet-4-5-20250929", base_url=url, api_key=KEY, **kw
    )


def gpt(url: str, **kw) -> iModel:
    return iModel(provider="openai", model="gpt-5.2", base_url=url, api_key=KEY, **kw)


def answer_of(branch: Branch, n: int = 0):
    return [m for m in branch.messages if m.kind == "assistant_response"][n]


def two_turns(model: iModel, first: str = "What does the document say?") -> Branch:
    branch = Branch(chat_model=model)

    async def main():
        await branch.communicate(first)
        await branch.communicate("Thanks. Anything else?", stream=False)

    anyio.run(main)
    return branch


# -- Anthropic ---------------------------------------------------------------------------------
def test_streamed_document_citations_number_the_source_once_and_mark_each_block_end(http_fake):
    api = ThinkingAPI(http_fake, [CITED, anthropic_message("No.")])
    branch = two_turns(claude(http_fake.anthropic_url))
    answer = answer_of(branch)
    assert answer.response == ANSWER
    assert answer.metadata["citations"] == DOCUMENT
    assert ANSWER[: DOCUMENT[0]["end"]].endswith("the grass is green")
    assert ANSWER[: DOCUMENT[1]["end"]].endswith("the sky is blue")
    assert "reasoning_record" not in answer.metadata  # nothing the API needs back
    assert api.refusals == []
    second = http_fake.requests[1]
    assert b"cited_text" not in second.raw and b"citations" not in second.raw
    assert second.body["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": ANSWER}],
    }


def test_a_non_streamed_answer_with_citations_on_its_blocks_reads_the_same(http_fake):
    message = json.loads(sse_events(CITED)[0].split("data: ", 1)[1])["message"]
    message["content"] = streamed_blocks(sse_events(CITED))
    assert message["content"][1]["citations"][0]["type"] == "char_location"
    ThinkingAPI(http_fake, [message])
    branch = Branch(chat_model=claude(http_fake.anthropic_url, stream=False))
    assert anyio.run(lambda: branch.communicate("What does the document say?")) == ANSWER
    assert answer_of(branch).metadata["citations"] == DOCUMENT


def test_web_search_keeps_its_server_blocks_for_the_next_turn_and_cites_the_result(http_fake):
    api = ThinkingAPI(http_fake, [SEARCH, anthropic_message("Yes.")])
    model = claude(http_fake.anthropic_url, tools=[WEB_SEARCH])
    branch = two_turns(model, "What is the latest Python?")
    answer = answer_of(branch)
    said = "I'll search for the latest Python release.The latest major release is Python 3.14.0."
    assert answer.response == said
    [cite] = answer.metadata["citations"]
    assert cite["n"] == 1 and cite["kind"] == "web_search" and cite["url"] == PY
    assert cite["title"] == "Python 3.14.0 released | Python.org"
    assert cite["cited_text"].startswith("Python 3.14.0 is the newest major release")
    assert said[: cite["end"]].endswith("Python 3.14.0")
    record = answer.metadata["reasoning_record"]
    kinds = [b["type"] for b in record["items"]]
    assert kinds == ["text", "server_tool_use", "web_search_tool_result", "text", "text", "text"]
    assert record["items"][1]["input"] == {"query": "latest Python release"}
    # the next request sends the search and its result back in place, byte for byte
    assert api.refusals == []
    second = http_fake.requests[1]
    turn = second.body["messages"][1]["content"]
    assert [b["type"] for b in turn] == [
        "text",
        "server_tool_use",
        "web_search_tool_result",
        "text",
        "text",
        "text",
    ]
    blocks = streamed_blocks(sse_events(SEARCH))
    assert compact(blocks[1]) in second.raw and compact(blocks[2]) in second.raw
    assert "".join(b["text"] for b in turn if b["type"] == "text") == said
    assert b"cited_text" not in second.raw


def test_the_fake_refuses_a_turn_without_the_search_result(http_fake):
    """The check the test above relies on can fail: a dropped result is refused with 400."""
    api = ThinkingAPI(http_fake, [SEARCH, anthropic_message("Yes.")])
    branch = Branch(chat_model=claude(http_fake.anthropic_url, tools=[WEB_SEARCH]))
    anyio.run(lambda: branch.communicate("What is the latest Python?"))
    answer = answer_of(branch)
    items = answer.metadata["reasoning_record"]["items"]
    kept = [b for b in items if b["type"] != "web_search_tool_result"]
    answer.metadata = {**answer.metadata, "reasoning_record": {"api": "anthropic", "items": kept}}
    with pytest.raises(ExecutionError):
        anyio.run(lambda: branch.communicate("Thanks.", stream=False))
    assert api.refusals and "web_search_tool_result" in api.refusals[0]


def test_citations_survive_to_dict_from_dict_and_the_store(http_fake, tmp_path):
    ThinkingAPI(http_fake, [CITED])
    session = Session()
    branch = session.new_branch(chat_model=claude(http_fake.anthropic_url))
    anyio.run(lambda: branch.communicate("What does the document say?"))
    again = Branch.from_dict(branch.to_dict())
    assert answer_of(again).metadata["citations"] == DOCUMENT
    store = SessionStore(tmp_path / "sessions.db")
    store.save(session)
    loaded = store.load(str(session.id))
    [kept] = [b for b in loaded.branches if b.messages]
    assert answer_of(kept).metadata["citations"] == DOCUMENT


def test_a_cassette_replays_the_citations(tmp_path):
    path = tmp_path / "calls.jsonl"

    def ask(url: str) -> Branch:
        branch = Branch(chat_model=claude(url))
        anyio.run(lambda: branch.communicate("What does the document say?"))
        return branch

    with FakeProvider() as server:
        ThinkingAPI(server, [CITED])
        url = server.anthropic_url
        with cassette(path, mode="once"):
            ask(url)
    with cassette(path, mode="none") as tape:  # the server is gone: replay only
        replayed = ask(url)
    assert tape.replayed == 1
    assert answer_of(replayed).metadata["citations"] == DOCUMENT


# -- OpenAI ------------------------------------------------------------------------------------
NOTES = [
    {
        "type": "url_citation",
        "start_index": 0,
        "end_index": 9,
        "url": "https://example.org/strawberry",
        "title": "Strawberry",
    },
    {
        "type": "url_citation",
        "start_index": 10,
        "end_index": 17,
        "url": "https://example.org/letters",
        "title": "Letters",
    },
    {
        "type": "url_citation",
        "start_index": 19,
        "end_index": 32,
        "url": "https://example.org/strawberry",
        "title": "Strawberry",
    },
]
URLS = [
    {
        "n": 1,
        "title": "Strawberry",
        "url": "https://example.org/strawberry",
        "cited_text": None,
        "kind": "url",
        "end": 9,
    },
    {
        "n": 2,
        "title": "Letters",
        "url": "https://example.org/letters",
        "cited_text": None,
        "kind": "url",
        "end": 17,
    },
    {
        "n": 1,
        "title": "Strawberry",
        "url": "https://example.org/strawberry",
        "cited_text": None,
        "kind": "url",
        "end": 32,
    },
]


def test_responses_url_annotations_streamed_on_the_item_or_only_as_events(http_fake):
    for in_items in (True, False):
        api = ResponsesAPI(http_fake, [url_cited(STRAWBERRY, NOTES, in_items=in_items)])
        branch = Branch(chat_model=gpt(http_fake.openai_url, api="responses", stream=True))
        text = anyio.run(lambda b=branch: b.communicate("How many r's in strawberry?"))
        assert text == 'There are 3 r\'s in "strawberry".'
        assert answer_of(branch).metadata["citations"] == URLS
        assert api.refusals == []
        http_fake.routes.remove(api)


def test_responses_non_streamed_annotations_and_none_sent_back(http_fake):
    answer = json.loads(
        (
            __import__("tests.fakes.http_server", fromlist=["FIXTURES"]).FIXTURES
            / "openai_responses_nonstream.json"
        ).read_text()
    )
    message = next(item for item in answer["output"] if item["type"] == "message")
    text = message["content"][0]["text"]
    message["content"][0]["annotations"] = [
        {"type": "url_citation", "start_index": 0, "end_index": len(text), "url": "u", "title": "T"}
    ]
    api = ResponsesAPI(http_fake, [answer, "openai_responses_nonstream.json"])
    branch = two_turns(gpt(http_fake.openai_url, api="responses", stream=False))
    [cite] = answer_of(branch).metadata["citations"]
    assert cite == {
        "n": 1,
        "title": "T",
        "url": "u",
        "cited_text": None,
        "kind": "url",
        "end": len(text),
    }
    assert api.refusals == []
    assert b"url_citation" not in http_fake.requests[1].raw


def test_chat_completions_message_annotations(http_fake):
    completion = openai_completion("See the docs.")
    completion["choices"][0]["message"]["annotations"] = [
        {
            "type": "url_citation",
            "url_citation": {
                "start_index": 4,
                "end_index": 12,
                "url": "https://d.org",
                "title": "D",
            },
        }
    ]
    http_fake.push(body=completion)
    http_fake.push(body=openai_completion("Sure."))
    branch = two_turns(gpt(http_fake.openai_url, api="chat", stream=False))
    assert answer_of(branch).metadata["citations"] == [
        {"n": 1, "title": "D", "url": "https://d.org", "cited_text": None, "kind": "url", "end": 12}
    ]
    assert b"url_citation" not in http_fake.requests[1].raw


def test_chat_completions_streamed_annotations(http_fake):
    note = {
        "type": "url_citation",
        "url_citation": {"start_index": 0, "end_index": 3, "url": "https://d.org", "title": "D"},
    }
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4o-mini"}

    def chunk(delta: dict, finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return "data: " + json.dumps({**head, "choices": [choice]})

    events = [
        chunk({"role": "assistant", "content": "See"}),
        chunk({"content": " the docs.", "annotations": [note]}),
        chunk({}, "stop"),
        "data: [DONE]",
    ]
    http_fake.push(events=events)
    branch = Branch(chat_model=gpt(http_fake.openai_url, api="chat", stream=True))
    assert anyio.run(lambda: branch.communicate("Docs?")) == "See the docs."
    [cite] = answer_of(branch).metadata["citations"]
    assert cite["url"] == "https://d.org" and cite["end"] == 3 and cite["n"] == 1
