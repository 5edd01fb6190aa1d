"""``citations=True`` asks Claude to cite the documents a request sends, against the loopback
server playing the Messages API: every ``document`` block (a PDF given as a file, a text
document given as a block, one inside a tool result) carries ``"citations": {"enabled":
true}``; off, the request is the same bytes as without the option; a bad value is refused
before any request; a provider that cannot ask leaves it out and says so; a saved model keeps
it as it keeps its other request options."""

from __future__ import annotations

import json

import anyio
import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import ConfigurationError
from lion_nb.models.endpoints.base import ChatRequest
from lion_nb.models.endpoints.batches import provider_batch_service
from lion_nb.models.media import file_part
from tests.context.test_files import pdf
from tests.fakes import provider_fixtures
from tests.fakes.anthropic_thinking import ThinkingAPI
from tests.fakes.http_server import anthropic_message, openai_completion

# the loopback server and no key from the machine, as in the other provider tests
http_fake = provider_fixtures.http_fake
_no_provider_keys = provider_fixtures._no_provider_keys

KEY = "sk-test-ask-citations-0123456789"
CITED = "anthropic_stream_citations.sse"
ON = {"enabled": True}
FACTS = "The grass is green. The sky is blue."
TEXT_DOC = {
    "type": "document",
    "source": {"type": "text", "media_type": "text/plain", "data": FACTS},
    "title": "Facts",
}
OWN = {**TEXT_DOC, "title": "Own", "citations": {"enabled": False}}


def claude(url: str, **kw) -> iModel:
    return iModel(provider="anthropic", model="claude-sonnet-4-5", base_url=url, api_key=KEY, **kw)


def documents(body: dict) -> list[dict]:
    """Every document block of a Messages request, a tool result's own blocks included."""
    found = []
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block["type"] == "tool_result" and isinstance(block["content"], list):
                found += [b for b in block["content"] if b["type"] == "document"]
            elif block["type"] == "document":
                found.append(block)
    return found


def request(*, own: bool = False, **options) -> ChatRequest:
    """A turn with a PDF file, a text document and a tool result holding a document."""
    parts = [{"type": "text", "text": "What do they say?"}, file_part("r.pdf", pdf(2))]
    parts += [TEXT_DOC, OWN] if own else [TEXT_DOC]
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "Read the notes."},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": [TEXT_DOC]},
        {"role": "user", "content": parts},
    ]
    return ChatRequest(messages=messages, options=options)


def call(model: iModel, req: ChatRequest):
    async def main():
        try:
            return await model.invoke(req)
        finally:
            await model.aclose()

    return anyio.run(main)


def test_citations_true_enables_them_on_every_document_block_sent(http_fake):
    api = ThinkingAPI(http_fake, [anthropic_message("Green and blue.")])
    result = call(claude(http_fake.anthropic_url, citations=True), request(own=True))
    assert result.status == "completed", result.error
    assert api.refusals == []
    sent = http_fake.requests[-1]
    docs = documents(sent.body)
    assert [d["source"]["type"] for d in docs] == ["text", "base64", "text", "text"]
    assert [d["citations"] for d in docs] == [ON, ON, ON, {"enabled": False}]  # its own kept
    assert docs[1]["source"]["media_type"] == "application/pdf" and docs[1]["title"] == "r.pdf"
    assert "citations" not in sent.body  # a block's field, not a request option
    assert b'"citations":{"enabled":true}' in sent.raw
    assert "citations" not in TEXT_DOC  # the caller's block is not changed


def test_citations_per_call_on_a_branch_with_a_pdf_reads_the_answer_citations(http_fake, tmp_path):
    (tmp_path / "facts.pdf").write_bytes(pdf(1))
    api = ThinkingAPI(http_fake, [CITED, anthropic_message("No.")])
    branch = Branch(chat_model=claude(http_fake.anthropic_url, stream=True))
    files = [tmp_path / "facts.pdf"]

    async def main():
        await branch.communicate("What does it say?", files=files, citations=True)
        await branch.communicate("Anything else?", stream=False)

    anyio.run(main)
    assert api.refusals == []
    first, second = http_fake.requests
    [doc] = documents(first.body)
    assert doc["citations"] == ON and doc["title"] == "facts.pdf"
    answer = next(m for m in branch.messages if m.kind == "assistant_response")
    assert [c["kind"] for c in answer.metadata["citations"]] == ["document", "document"]
    # this call only: the next turn sends the same PDF without it
    [again] = documents(second.body)
    assert "citations" not in again and again["source"] == doc["source"]


def test_off_the_request_is_the_same_bytes_as_without_the_option(http_fake):
    ThinkingAPI(http_fake, [anthropic_message("A.")] * 3)
    for model in (
        claude(http_fake.anthropic_url),
        claude(http_fake.anthropic_url, citations=False),
        claude(http_fake.anthropic_url, citations=True),
    ):
        assert call(model, request()).status == "completed"
    plain, off, on = (r.raw for r in http_fake.requests)
    assert plain == off
    assert b"citations" not in plain
    assert on != plain and on.count(b'"citations":{"enabled":true}') == 3


def test_the_fake_refuses_a_malformed_citations_field(http_fake):
    """The check the tests above rely on can fail: ``citations: true`` on a block is a 400."""
    api = ThinkingAPI(http_fake, [anthropic_message("A.")])
    bad = {**TEXT_DOC, "citations": True}
    req = ChatRequest(messages=[{"role": "user", "content": [bad]}])
    result = call(claude(http_fake.anthropic_url), req)
    assert result.status == "failed"
    assert api.refusals == ["messages.0.content.0.citations: Input should be {'enabled': bool}."]


def test_a_bad_value_is_refused_in_one_line_before_any_request(http_fake):
    for bad in ("yes", 1, {"enabled": True}):
        with pytest.raises(ConfigurationError) as info:
            claude(http_fake.anthropic_url, citations=bad)
        assert "\n" not in str(info.value) and "`citations=" in str(info.value)
    with pytest.raises(ConfigurationError, match="give True or False"):
        call(claude(http_fake.anthropic_url), request(citations="on"))
    branch = Branch(chat_model=claude(http_fake.anthropic_url))
    with pytest.raises(ConfigurationError, match="citations="):
        anyio.run(lambda: branch.communicate("Hi.", citations=0))
    assert http_fake.requests == []
    assert len(branch.messages) == 0  # nothing recorded either


def test_a_provider_that_cannot_ask_leaves_it_out_and_says_so(http_fake):
    http_fake.push(body=openai_completion("Sure."))
    model = iModel(
        provider="openai",
        model="gpt-4o-mini",
        base_url=http_fake.openai_url,
        api_key=KEY,
        api="chat",
        citations=True,
    )
    result = call(model, request())
    assert result.status == "completed", result.error
    assert b"citations" not in http_fake.requests[-1].raw
    assert any("`citations=` is not sent to `openai`" in n for n in result.response.notes)
    # off says nothing
    http_fake.push(body=openai_completion("Sure."))
    quiet = iModel(
        provider="openai", model="gpt-4o-mini", base_url=http_fake.openai_url, api_key=KEY
    )
    assert not any("citations" in n for n in call(quiet, request(citations=False)).response.notes)


def test_a_saved_model_keeps_the_option_with_its_request_options(http_fake):
    model = claude(http_fake.anthropic_url, citations=True)
    data = json.loads(json.dumps(model.to_dict(include_request_options=True)))
    assert data["options"]["citations"] is True
    assert "options" not in model.to_dict()  # as `reasoning=` and the other request options
    ThinkingAPI(http_fake, [anthropic_message("A.")] * 2)
    for again in (iModel.from_dict(data), model.copy()):
        assert call(again, request()).status == "completed"
        assert [d["citations"] for d in documents(http_fake.requests[-1].body)] == [ON] * 3
    with pytest.raises(ConfigurationError, match="citations="):
        iModel.from_dict({**data, "options": {"citations": "yes"}})


def test_a_batch_line_carries_it_as_a_live_call_does():
    url = "http://127.0.0.1:9"  # nothing is sent: only the lines are built
    cited = provider_batch_service(claude(url, citations=True)).body(request())
    assert [d["citations"] for d in documents(cited)] == [ON] * 3
    assert "citations" not in cited
    openai = iModel(provider="openai", model="gpt-4o-mini", base_url=url, api_key=KEY)
    line = provider_batch_service(openai).body(request(citations=True))
    assert "citations" not in line and "citations" not in json.dumps(line)
