"""Batches and the session store: items' answers are autosaved as they arrive, and a provider
batch resumed on a session restored from the store finds its branches there."""

from __future__ import annotations

import anyio

from lion_nb import Session, iModel
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


def test_a_resumed_batch_uses_the_branches_the_store_restored(tmp_path):
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
            return await run.submit()

        batch_id = anyio.run(submit)
        saver.checkpoint()
        store.flush()
        saver.stop()

        restored = store.load(str(session.id))  # the kernel restarted; the store had them
        names = sorted(b.name for b in restored.branches if b.name)
        assert names == ["map-1[0]", "map-1[1]"]  # pending: the clones, no answer yet
        before = {b.name: b for b in restored.branches if b.name}

        async def resume():
            return await restored.resume_batch(batch_id, poll_interval=0.01)

        assert anyio.run(resume) == ["answer: Say x", "answer: Say y"]
        after = {b.name: b for b in restored.branches if b.name}
        assert after["map-1[0]"] is before["map-1[0]"]  # found by id, not rebuilt
        assert [m.kind for m in after["map-1[0]"].messages] == [
            "system",
            "instruction",
            "assistant_response",
        ]
        assert emulator.batches[batch_id].state == "ended"
    store.close()
