"""A provider batch job split to the providers' limits: as many batches as the requests and
bytes require, polled together, one run; a job killed after its second submission resumes
from its records with the results an uninterrupted job gives."""

from __future__ import annotations

import anyio
import pytest

from lion_nb import Session, iModel
from lion_nb.session.batch_records import FileRecords
from tests.fakes.batch_api import BatchEmulator
from tests.fakes.http_server import FakeProvider
from tests.waiting import until


@pytest.fixture
def server():
    with FakeProvider() as fake:
        yield fake


def session_for(fake: FakeProvider, provider: str) -> Session:
    url = fake.openai_url if provider == "openai" else fake.anthropic_url
    session = Session()
    session.default_branch.chat_model = iModel(provider=provider, model="m", base_url=url)
    return session


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize(("provider", "batches"), [("openai", 3), ("anthropic", 2)])
def test_120000_items_become_as_many_batches_as_the_real_limits_require(server, provider, batches):
    emulator = BatchEmulator(server)  # refuses a batch over the provider's limits
    session = session_for(server, provider)
    items = [str(i) for i in range(120_000)]
    run = session.map(items, "{item}", via="batch", poll_interval=600, max_tokens=1)

    async def submit_all():
        await run.submit()
        await until(lambda: run.progress().in_flight == 120_000, timeout=500, what="all sent")
        run.detach()  # what the provider has is the point here, not its answers

    anyio.run(submit_all)
    assert len(run.batch_ids) == batches and not run.failures
    sizes = [len(emulator.batches[b].requests) for b in run.batch_ids]
    limit = 50_000 if provider == "openai" else 100_000
    assert sum(sizes) == 120_000 and max(sizes) == limit
    sent = {cid for b in run.batch_ids for cid, _ in emulator.batches[b].requests}
    assert sent == {f"item-{i}" for i in range(120_000)}  # each item once, in one batch
    assert len(session.branches) == 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_limit_in_bytes_splits_too(server, provider):
    BatchEmulator(server, polls_to_finish=1, limits={provider: (1_000, 5_000)})
    session = session_for(server, provider)
    run = session.map(
        [f"item {i}" for i in range(100)],
        "Say {item}",
        via="batch",
        poll_interval=0.01,
        batch_limits=(1_000, 5_000),
    )
    results = anyio.run(run.wait)
    assert results == [f"answer: Say item {i}" for i in range(100)]
    assert len(run.batch_ids) > 1  # 100 requests of a few hundred bytes: not one file


def test_a_job_killed_after_its_second_submission_resumes_to_the_same_results(server):
    emulator = BatchEmulator(server, polls_to_finish=2)
    items = [f"item {i}" for i in range(1_500)]
    options = {"via": "batch", "batch_limits": (500, 10**8), "max_tokens": 5}

    whole = session_for(server, "openai")
    expected = anyio.run(whole.map(items, "Say {item}", poll_interval=0.01, **options).wait)

    session = session_for(server, "openai")
    emulator.refuse_from = emulator.created + 2  # the third submission never gets through
    run = session.map(items, "Say {item}", poll_interval=30, **options)

    def kill_after_two(r):
        if len(r.batch_ids) >= 2:
            r.detach()  # the kernel dies: polling and submitting stop here

    run.on_progress(kill_after_two)

    async def until_killed():
        await run.submit()
        await run.wait()

    anyio.run(until_killed)
    assert run.state == "detached"
    job = FileRecords().load(run.job_id)
    assert job["parts"] == run.batch_ids and len(job["parts"]) == 2
    sent = sum(len(emulator.batches[b].requests) for b in job["parts"])
    assert sent == 1_000  # the last 500 never reached the provider

    emulator.refuse_from = None
    fresh = Session()  # a new kernel: only the records remain

    async def resume():
        resumed = fresh.resume_batch(run.job_id, poll_interval=0.01)
        return resumed, await resumed

    resumed, results = anyio.run(resume)
    assert results == expected
    assert len(resumed.batch_ids) == 3 and resumed.batch_ids[:2] == job["parts"]
    assert [b.name for b in resumed.branches[:2]] == ["map-1[0]", "map-1[1]"]
    assert resumed.branch(1_499).messages[-1].response == "answer: Say item 1499"
    assert FileRecords().load(run.job_id)["state"] == "collected"
