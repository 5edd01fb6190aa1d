"""A streamed input through a provider batch: each provider batch is sent once it is full,
before the rest of the input is read; a sent item's row and prompt are kept by its batch's
record, not in memory, and come back from there when its answer is recorded; a job whose
input was streamed resumes what it sent and says why the rest cannot be."""

from __future__ import annotations

import anyio
import pytest

from lion_nb import Session, iModel
from lion_nb.session.batch_records import FileRecords
from tests.fakes.batch_api import BatchEmulator
from tests.fakes.http_server import FakeProvider

OPTIONS = {"via": "batch", "batch_limits": (100, 10**8), "max_tokens": 5}


@pytest.fixture
def server():
    with FakeProvider() as fake:
        yield fake


def session_for(fake: FakeProvider) -> Session:
    session = Session()
    session.default_branch.chat_model = iModel(
        provider="openai", model="m", base_url=fake.openai_url
    )
    return session


def test_each_provider_batch_is_made_before_the_rest_of_the_input_is_read(server):
    BatchEmulator(server, polls_to_finish=1)
    session = session_for(server)
    made_when_read: dict[int, int] = {}
    holder: dict[str, object] = {}

    def rows():
        for i in range(450):
            run = holder.get("run")
            if run is not None and i % 100 == 1 and i > 1:  # the 101st row fills the 1st
                made_when_read[i] = len(run.parts)  # type: ignore[attr-defined]
            yield {"id": i, "text": f"row {i}"}

    run = session.map(rows(), "Say {item[text]}", poll_interval=0.01, **OPTIONS)
    holder["run"] = run
    results = anyio.run(run.wait)
    assert made_when_read == {101: 1, 201: 2, 301: 3, 401: 4}
    assert len(run.batch_ids) == 5 and not run.failures
    # the prompts were read back from each batch's record: the rows were not kept here
    assert results == [f"answer: Say row {i}" for i in range(450)]
    assert all(result.item is None for result in run.items)
    assert run.branch(449).messages[-1].response == "answer: Say row 449"
    ids = [run.branch(i).id for i in (0, 1, 448, 449)]  # made from the run's base, not kept
    assert len(set(ids)) == 4 and all(uid.version == 4 for uid in ids)
    last = FileRecords().load(run.batch_ids[-1])["items"]
    assert [e["branch_id"] for e in last[-2:]] == [str(uid) for uid in ids[2:]]
    assert all(part.indices == range(100 * n, min(450, 100 * n + 100))
               for n, part in enumerate(run.parts))  # fmt: skip


def test_a_streamed_job_killed_after_its_second_batch_resumes_what_it_sent(server):
    emulator = BatchEmulator(server, polls_to_finish=2)
    session = session_for(server)
    emulator.refuse_from = emulator.created + 2  # the third submission never gets through
    run = session.map((f"item {i}" for i in range(250)), "Say {item}", poll_interval=30, **OPTIONS)

    def kill_after_two(r):
        if len(r.batch_ids) >= 2:
            r.detach()  # the kernel dies: polling, reading and submitting stop here

    run.on_progress(kill_after_two)

    async def until_killed():
        await run.submit()
        await run.wait()

    anyio.run(until_killed)
    job = FileRecords().load(run.job_id)
    assert run.state == "detached" and job["streamed"] is True and len(job["parts"]) == 2
    emulator.refuse_from = None

    async def resume():
        resumed = Session().resume_batch(run.job_id, poll_interval=0.01)
        return resumed, await resumed

    resumed, results = anyio.run(resume)
    sent = {int(cid.split("-")[1]) for b in job["parts"] for cid, _ in emulator.batches[b].requests}
    assert len(sent) in (150, 200)  # two of the batches (100, 100, 50): as submissions raced
    assert [results[i] for i in sorted(sent)] == [f"answer: Say item {i}" for i in sorted(sent)]
    unsent = resumed.failures
    assert {r.index for r in unsent} == set(range(len(results))) - sent
    assert unsent and all("input was streamed" in r.error_text for r in unsent)
    assert resumed.batch_ids == job["parts"]
