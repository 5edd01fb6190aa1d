"""Batches and the session store: items' answers reach the store as rows as they arrive, and
a provider batch resumed on a session restored from the store keeps its items there."""

from __future__ import annotations

import anyio

from lion_nb import Session, iModel
from lion_nb.session.batch_records import FileRecords
from lion_nb.session.batch_rows import decode_row
from lion_nb.store import open_store
from lion_nb.store.items import ItemSink
from tests.fakes.batch_api import BatchEmulator
from tests.fakes.http_server import FakeProvider
from tests.waiting import until


def test_live_answers_reach_the_store_as_they_arrive(tmp_path):
    store = open_store(tmp_path / "sessions.db")
    session = Session()
    gate = anyio.Event()

    async def play(messages, **_request):
        prompt = messages[-1]["content"]
        if prompt == "slow":
            await gate.wait()
        return f"answer: {prompt}"

    session.default_branch.chat_model = iModel(provider="offline", model="function", function=play)
    session.default_branch.msgs.add_message(system="Be brief.")
    saver = store.autosave(session)
    sink = ItemSink(store)
    sid = str(session.id)

    def saved(index):  # what a restart now would find, read from the file
        row = sink.get(sid, "map-1", index)
        return None if row is None else decode_row(row, session.default_branch, None)

    async def main():
        run = session.map(["a", "b", "slow"], "{item}", concurrency=3)
        await until(lambda: sink.count(sid, "map-1")[0] == 2, what="two answers stored")
        half = [saved(i) for i in range(3)]
        gate.set()
        await run
        return half

    half = anyio.run(main)
    assert [m.kind for m in half[0].messages] == ["system", "instruction", "assistant_response"]
    assert half[1].name == "map-1[1]" and half[1].messages[-1].response == "answer: b"
    assert half[2] is None  # still running: nothing of it yet
    store.flush()
    assert saved(2).messages[-1].response == "answer: slow"
    assert len(store.load(sid).branches) == 1  # the items are rows, not the session's branches
    saver.stop()
    store.close()


def test_a_resumed_batch_keeps_its_items_in_the_store_not_the_session(tmp_path):
    store = open_store(tmp_path / "sessions.db")
    with FakeProvider() as fake:
        emulator = BatchEmulator(fake, polls_to_finish=2)
        session = Session()
        session.default_branch.chat_model = iModel(
            provider="anthropic", model="m", base_url=fake.anthropic_url
        )
        session.default_branch.msgs.add_message(system="Be brief.")
        saver = store.autosave(session)

        async def submit():
            run = session.map(["x", "y"], "Say {item}", via="batch")
            await run.submit()
            return run

        first = anyio.run(submit)
        ids = [e["branch_id"] for e in FileRecords().load(first.batch_id)["items"]]
        saver.checkpoint()
        store.flush()
        saver.stop()

        restored = store.load(str(session.id))  # the kernel restarted
        assert [b.name for b in restored.branches] == [None]  # the items were never members
        again = store.autosave(restored)

        async def resume():
            run = restored.resume_batch(first.batch_id, poll_interval=0.01)
            return run, await run

        run, results = anyio.run(resume)
        assert results == ["answer: Say x", "answer: Say y"]
        assert [str(b.id) for b in run.branches] == ids  # under the ids they were sent with
        store.flush()
        row = ItemSink(store).get(str(session.id), "map-1", 1)
        kept = decode_row(row, restored.default_branch, None)
        assert [m.kind for m in kept.messages] == ["system", "instruction", "assistant_response"]
        assert kept.messages[-1].response == "answer: Say y"
        assert emulator.batches[first.batch_id].state == "ended"
        again.stop()
    store.close()
