"""``map(..., via="batch")`` through the emulated OpenAI Batch API and Anthropic Message
Batches: 500 items with 5 % failures and a retry, a kernel restart while the batch is
pending, Stop, detach and resume, and records identical to a live call's."""

from __future__ import annotations

import gc
import json
import re

import anyio
import pytest
from pydantic import BaseModel

from lion_nb import Session, iModel
from lion_nb.errors import BadRequestError, ConfigurationError
from lion_nb.session.batch_records import FileRecords, records_dir
from tests.fakes.batch_api import BatchEmulator
from tests.fakes.http_server import FakeProvider

PROVIDERS = ("openai", "anthropic")


class Verdict(BaseModel):
    label: str
    score: int


@pytest.fixture
def server():
    with FakeProvider() as fake:
        yield fake


def model_for(fake: FakeProvider, provider: str) -> iModel:
    url = fake.openai_url if provider == "openai" else fake.anthropic_url
    return iModel(provider=provider, model="m", base_url=url)


def batch_session(fake: FakeProvider, provider: str) -> Session:
    session = Session()
    session.default_branch.chat_model = model_for(fake, provider)
    session.default_branch.msgs.add_message(system="Be brief.")
    return session


def _number(custom_id: str) -> int:
    return int(custom_id.rsplit("-", 1)[1])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_500_items_with_5_percent_failures_through_the_batch_api(server, provider):
    emulator = BatchEmulator(server, fail=lambda cid, _body: _number(cid) % 20 == 13)
    session = batch_session(server, provider)
    items = [f"item {i}" for i in range(500)]

    async def main():
        run = session.map(items, "Say {item}", via="batch", poll_interval=0.01)
        assert run.state == "submitting"  # returned at once; the task submits
        batch_id = await run.submit()
        first = await run
        failed = [r.index for r in run.failures]
        errors = {type(r.error.__cause__) for r in run.failures}
        second = await run.retry()
        return run, batch_id, first, failed, errors, second

    run, batch_id, first, failed, errors, second = anyio.run(main)
    expected = [n for n in range(500) if n % 20 == 13]
    assert len(expected) == 25
    assert failed == expected
    assert errors == {BadRequestError}
    assert [first[i] for i in range(500) if i not in expected] == [
        f"answer: Say item {i}" for i in range(500) if i not in expected
    ]
    assert second == [f"answer: Say item {i}" for i in range(500)]
    assert len(run.batch_ids) == 2 and run.batch_ids[0] == batch_id
    retry_batch = emulator.batches[run.batch_ids[1]]
    assert sorted(_number(cid) for cid, _ in retry_batch.requests) == expected
    assert run.progress().tokens == 500 * 14
    assert run.progress().state == "finished"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_restart_while_the_batch_is_pending(server, provider):
    emulator = BatchEmulator(server, polls_to_finish=3)
    session = batch_session(server, provider)
    secret = "test-key-not-real-0123456789"
    url = server.openai_url if provider == "openai" else server.anthropic_url
    session.default_branch.chat_model = iModel(
        provider=provider, model="m", base_url=url, api_key=secret
    )

    async def submit():
        run = session.map([f"item {i}" for i in range(40)], "Say {item}", via="batch")
        return await run.submit()  # the default 30 s poll never comes: the kernel "dies"

    batch_id = anyio.run(submit)  # the loop closes: the polling task goes with it
    assert emulator.batches[batch_id].state == "running"
    record = json.loads((records_dir() / f"{batch_id}.json").read_text())
    assert record["state"] == "submitted" and len(record["items"]) == 40
    assert secret not in json.dumps(record)  # never a key: resuming reads it again
    session = None  # the old kernel's objects are gone
    gc.collect()

    fresh = Session()  # a new kernel: nothing of the old session is here

    async def resume():
        run = fresh.resume_batch(batch_id, poll_interval=0.01)
        return run, await run

    run, results = anyio.run(resume)
    assert results == [f"answer: Say item {i}" for i in range(40)]
    assert len(fresh.branches) == 1  # the items are the run's rows, not members
    assert [b.name for b in run.branches] == [f"map-1[{i}]" for i in range(40)]
    branch = run.branch(7)
    assert str(branch.id) == record["items"][7]["branch_id"]
    assert [m.kind for m in branch.messages] == ["system", "instruction", "assistant_response"]
    assert branch.messages[-1].response == "answer: Say item 7"
    assert branch.messages[-1].metadata["model"] == f"{provider}/m"
    assert json.loads((records_dir() / f"{batch_id}.json").read_text())["state"] == "collected"

    again_run = fresh.resume_batch(batch_id, poll_interval=0.01)
    again = anyio.run(again_run.wait)
    assert again == results  # resuming once more records nothing twice
    assert len(again_run.branch(7).messages) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_batched_records_equal_a_live_calls(server, provider):
    BatchEmulator(server)
    session = batch_session(server, provider)
    anyio.run(session.map(["x"], "Say {item}", via="batch", poll_interval=0.01).wait)
    batched = session.runs[0].branch(0)

    # the same exchange live, answered by the server with the same body
    live = session.default_branch.clone()
    server.push_json(_live_body(provider))
    anyio.run(lambda: live.communicate("Say x"))

    def shape(branch):
        ins, res = branch.messages[-2], branch.messages[-1]
        meta = {k: v for k, v in res.metadata.items() if k != "model_response"}
        return (
            ins.instruction,
            ins.chat_msg(),
            res.response,
            meta,
            sorted(branch.logs[-1].content) if len(branch.logs) else None,
            {k: branch.logs[-1].content[k] for k in ("event", "provider", "model", "status")},
        )

    assert shape(batched) == shape(live)
    assert len(batched.logs) == 1  # the capture of the request left no trace


def _live_body(provider: str) -> dict:
    if provider == "anthropic":
        return {
            "id": "msg_live",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [{"type": "text", "text": "answer: Say x"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 4},
        }
    return {
        "id": "chatcmpl-live",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "answer: Say x"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14},
    }


@pytest.mark.parametrize("provider", PROVIDERS)
def test_stop_cancels_the_batch_at_the_provider(server, provider):
    emulator = BatchEmulator(server, polls_to_finish=50)
    session = batch_session(server, provider)

    async def main():
        run = session.map(
            [f"item {i}" for i in range(10)], "{item}", via="batch", poll_interval=0.01
        )
        await run.submit()
        while emulator.batches[run.batch_id].polls < 20:
            await anyio.sleep(0.01)
        assert run.stop() is True
        with anyio.fail_after(10):
            await run
        return run

    run = anyio.run(main)
    assert emulator.batches[run.batch_id].state == "cancelled"
    statuses = [r.status for r in run.items]
    assert run.state == "stopped"
    assert statuses.count("done") == 2  # what the provider finished before the cancel
    assert statuses.count("stopped") == 8
    assert [r.value for r in run.items[:2]] == ["answer: item 0", "answer: item 1"]


def test_detach_then_resume_with_a_response_format(server):
    first_object = re.compile(r"\{[^{}]*\}")  # the item, the first JSON object of the prompt
    BatchEmulator(server, answer=lambda text: first_object.search(text).group(0))
    session = batch_session(server, "openai")

    async def main():
        run = session.map(
            [{"label": "ok", "score": 3}, {"label": "meh", "score": 1}],
            "{item}",
            via="batch",
            poll_interval=5,
            response_format=Verdict,
        )
        batch_id = await run.submit()
        assert run.detach() is True
        await anyio.sleep(0)
        return run, batch_id

    run, batch_id = anyio.run(main)
    assert run.state == "detached" and not run.running
    record = json.loads((records_dir() / f"{batch_id}.json").read_text())
    assert record["kwargs"]["response_format"] == {"__class__": f"{__name__}:Verdict"}

    async def resume():
        return await session.resume_batch(batch_id, poll_interval=0.01)

    results = anyio.run(resume)  # the same session: its items under their saved ids
    assert results == [Verdict(label="ok", score=3), Verdict(label="meh", score=1)]
    (resumed,) = session.runs
    assert str(resumed.branch(0).id) == record["items"][0]["branch_id"]
    assert resumed.branch(0).messages[-1].kind == "assistant_response"
    assert len(session.branches) == 1


def test_batch_is_refused_for_what_it_cannot_do(server):
    session = Session()
    session.default_branch.chat_model = iModel("offline/auto")
    with pytest.raises(ConfigurationError, match="batch service"):
        session.map(["a"], "{item}", via="batch")
    session.default_branch.chat_model = model_for(server, "openai")
    with pytest.raises(ConfigurationError, match="operate"):
        session.map(["a"], "{item}", via="batch", operation="operate")
    with pytest.raises(ConfigurationError, match="poll_interval"):
        session.map(["a"], "{item}", poll_interval=1)
    with pytest.raises(ConfigurationError, match="No saved batch"):
        session.resume_batch("batch_nope")


def test_records_are_listed_and_forgotten(tmp_path):
    book = FileRecords(tmp_path)
    book.save({"version": 1, "batch_id": "batch_1", "provider": "openai", "items": [{}]})
    assert [r["batch_id"] for r in book.list()] == ["batch_1"]
    assert book.load("batch_1")["provider"] == "openai"
    book.delete("batch_1")
    assert book.list() == []
    (tmp_path / "batch_2.json").write_text('{"version": 99, "batch_id": "batch_2"}')
    with pytest.raises(ConfigurationError, match="another version"):
        book.load("batch_2")


def test_awaiting_a_detached_run_gives_what_it_has(server):
    BatchEmulator(server, polls_to_finish=100)
    session = batch_session(server, "openai")

    async def main():
        run = session.map(["a"], "{item}", via="batch", poll_interval=0.01)
        await run.submit()
        run.detach()
        return run, await run

    run, results = anyio.run(main)
    assert results == [None] and run.state == "detached"
    assert [r.status for r in run.items] == ["running"]  # still at the provider
