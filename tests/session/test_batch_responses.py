"""``map(..., via="batch")`` on an OpenAI model that speaks the Responses API: the batch's
lines go to ``/v1/responses`` with the body a live call sends, and its result lines are read
as Responses objects, reasoning record and thinking included, as a live answer is."""

from __future__ import annotations

import json

import anyio
import pytest

from lion_nb import Session, iModel
from tests.fakes.batch_api import BatchEmulator, _responses_answer
from tests.fakes.http_server import FakeProvider


@pytest.fixture
def server():
    with FakeProvider() as fake:
        yield fake


def responses_session(fake: FakeProvider, **kw) -> Session:
    session = Session()
    url = fake.openai_url
    model = iModel(provider="openai", model="gpt-5.2", base_url=url, api="responses", **kw)
    session.default_branch.chat_model = model
    session.default_branch.msgs.add_message(system="Be brief.")
    return session


def test_the_batch_posts_responses_bodies_and_reads_responses_results(server):
    emulator = BatchEmulator(server)
    session = responses_session(server, reasoning="low")
    run = session.map(["a", "b"], "Say {item}", via="batch", poll_interval=0.01)
    anyio.run(run.wait)
    [batch] = emulator.batches.values()
    assert batch.endpoint == "/v1/responses"
    [upload] = [r for r in server.requests if r.path == "/v1/files"]
    lines = [json.loads(line) for line in upload.raw.decode().splitlines() if '"custom_id"' in line]
    assert {line["url"] for line in lines} == {"/v1/responses"}
    body = lines[0]["body"]
    assert body["instructions"] == "Be brief."
    assert body["input"][0]["content"] == [{"type": "input_text", "text": "Say a"}]
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert "stream" not in body and "messages" not in body
    assert run.results == ["answer: Say a", "answer: Say b"] and not run.failures
    answers = [b.messages[-1] for b in run.branches]
    assert sorted(a.response for a in answers) == ["answer: Say a", "answer: Say b"]
    for answer in answers:
        record = answer.metadata["reasoning_record"]
        assert record["api"] == "openai.responses"
        assert [i["type"] for i in record["items"]] == ["reasoning", "message"]
        assert answer.metadata["thinking"].startswith("Thinking about Say")
        assert answer.metadata["usage"]["reasoning_tokens"] == 16


def test_a_batched_answer_equals_a_live_one(server):
    BatchEmulator(server)
    session = responses_session(server)
    anyio.run(session.map(["x"], "Say {item}", via="batch", poll_interval=0.01).wait)
    batched = session.runs[0].branch(0)
    live = session.default_branch.clone()
    tag = batched.messages[-1].metadata["reasoning_record"]["items"][0]["id"][3:]
    server.push_json(_responses_answer(tag, "gpt-5.2", "Say x", "answer: Say x"))
    anyio.run(lambda: live.communicate("Say x", stream=False))
    assert server.requests[-1].path == "/v1/responses"

    def shape(branch):  # the price differs: a batch costs half
        res = branch.messages[-1]
        skip = ("model_response", "cost_usd")
        return res.response, {k: v for k, v in res.metadata.items() if k not in skip}

    assert shape(batched) == shape(live)
