"""A provider job whose kernel is killed (SIGKILL, a real process) after its second batch
is with the provider: a new process resumes the job from its records alone, takes up the two
batches sent, sends the third, and ends with the results of an uninterrupted job.

1,500 items in three batches of 500 here; ``LION_NB_KILLED_JOB_ITEMS=120000`` runs the job
at the size the providers split (three batches at OpenAI's 50,000 requests), a few minutes'
work kept out of the suite's time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from lion_nb import Session, iModel
from lion_nb.session.batch_records import FileRecords
from tests.fakes.batch_api import BatchEmulator
from tests.fakes.http_server import FakeProvider
from tests.waiting import until

ROOT = Path(__file__).resolve().parents[2]
ITEMS = int(os.environ.get("LION_NB_KILLED_JOB_ITEMS") or 1_500)
#: three batches: at the provider's own limit for a large job, else at a third of the items
PER_BATCH = 50_000 if ITEMS > 100_000 else -(-ITEMS // 3)
OPTIONS = {"via": "batch", "max_tokens": 5}
if ITEMS <= 100_000:
    OPTIONS["batch_limits"] = (PER_BATCH, 10**8)

KERNEL = """
import sys, anyio
from lion_nb import Session, iModel

async def main():
    session = Session()
    session.default_branch.chat_model = iModel(provider="openai", model="m", base_url=sys.argv[1])
    run = session.map([f"item {{i}}" for i in range({items})], "Say {{item}}", poll_interval=30,
                      **{options!r})
    print(run.job_id, flush=True)
    await run.submit()
    await anyio.sleep_forever()  # a kernel between cells: the job goes on until it is killed

anyio.run(main)
"""


@pytest.fixture
def server():
    with FakeProvider() as fake:
        yield fake


@pytest.mark.timeout(300 if ITEMS <= 100_000 else 3_000)
def test_a_job_whose_kernel_is_killed_after_two_batches_resumes_in_a_new_process(server):
    emulator = BatchEmulator(server, polls_to_finish=2)
    whole = Session()
    whole.default_branch.chat_model = iModel(
        provider="openai", model="m", base_url=server.openai_url
    )
    items = [f"item {i}" for i in range(ITEMS)]
    expected = anyio.run(whole.map(items, "Say {item}", poll_interval=0.01, **OPTIONS).wait)

    emulator.hold_from = 2  # the third submission waits at the provider: the kernel dies first
    code = KERNEL.format(items=ITEMS, options=OPTIONS)
    kernel = subprocess.Popen(
        [sys.executable, "-c", code, server.openai_url],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        job_id = kernel.stdout.readline().strip()  # type: ignore[union-attr]
        assert job_id.startswith("job-"), job_id

        def two_batches_recorded() -> bool:
            try:
                return len(FileRecords().load(job_id)["parts"]) == 2
            except Exception:  # not written yet
                return False

        wait = 240 if ITEMS <= 100_000 else 2_400
        anyio.run(lambda: until(two_batches_recorded, timeout=wait, what="two batches saved"))
        kernel.send_signal(signal.SIGKILL)
        assert kernel.wait(30) == -signal.SIGKILL
    finally:
        if kernel.poll() is None:
            kernel.kill()
            kernel.wait()
        emulator.hold_from = None
        emulator.release.set()  # the dead kernel's last request: a batch no record names
    job = FileRecords().load(job_id)
    sent = sum(len(emulator.batches[b].requests) for b in job["parts"])

    async def resume():
        resumed = Session().resume_batch(job_id, poll_interval=0.01)
        return resumed, await resumed

    resumed, results = anyio.run(resume)
    assert results == expected
    assert len(resumed.batch_ids) == 3 and resumed.batch_ids[:2] == job["parts"]
    sizes = [len(emulator.batches[b].requests) for b in resumed.batch_ids]
    assert sum(sizes) == ITEMS and max(sizes) == PER_BATCH and sum(sizes[:2]) == sent
    assert not resumed.failures
    assert FileRecords().load(job_id)["state"] == "collected"
