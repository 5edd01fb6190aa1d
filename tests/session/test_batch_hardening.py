"""Batches under hostile conditions: a map that never waits, result lines and counts of the
wrong shape, a batch that never ends, a result file too large to hold.

- an offline ``session.map`` yields to the event loop after every item, so Stop and
  progress act during the run -> test_an_offline_map_lets_the_loop_run_and_stop_it
- one result line with ``"status_code": "abc"`` fails its item only
  -> test_a_malformed_result_line_fails_only_its_item
- malformed ``request_counts`` count as zero -> test_malformed_request_counts_count_as_zero
- polling has a deadline, ``poll_timeout`` -> test_a_batch_that_never_ends_fails_at_its_deadline
- the result file is streamed -> test_the_result_file_is_read_line_by_line
"""

from __future__ import annotations

import json
import tracemalloc

import anyio
import pytest

from lion_nb import Session, iModel
from lion_nb.errors import ConfigurationError, ProviderError, ProviderTimeoutError
from lion_nb.models.batch_service import batch_service
from lion_nb.models.endpoints.batches import BatchStatus
from tests.fakes.batch_api import BatchEmulator
from tests.fakes.http_server import FakeProvider, Script


@pytest.fixture
def server():
    with FakeProvider() as fake:
        yield fake


def batch_session(fake: FakeProvider, provider: str = "openai") -> Session:
    url = fake.openai_url if provider == "openai" else fake.anthropic_url
    session = Session()
    session.default_branch.chat_model = iModel(provider=provider, model="m", base_url=url)
    return session


# -- a map whose model never waits ----------------------------------------------------------------
def test_an_offline_map_lets_the_loop_run_and_stop_it():
    """The offline function model answers without ever waiting; the loop still gets a turn
    after every item, so a heartbeat ticks during the map and Stop takes effect mid-run."""
    session = Session()
    session.default_branch.chat_model = iModel(
        provider="offline", model="function", function=lambda messages, **kw: "ok"
    )
    items = list(range(2000))

    async def main():
        ticks_during = 0
        run = session.map(items, "{item}")

        async def heartbeat():
            nonlocal ticks_during
            while not run.done():
                ticks_during += 1
                await anyio.sleep(0)

        async def stopper():
            while run.progress().done < 200 and not run.done():
                await anyio.sleep(0)
            run.stop()

        async with anyio.create_task_group() as tg:
            tg.start_soon(heartbeat)
            tg.start_soon(stopper)
            await run
        return run, ticks_during

    run, ticks = anyio.run(main)
    statuses = [r.status for r in run.items]
    done = statuses.count("done")
    assert run.state == "stopped"
    assert 200 <= done < len(items)  # Stop acted long before the end
    assert ticks >= done // run.concurrency // 2, ticks  # the loop ran every few items
    assert statuses.count("done") + statuses.count("pending") + statuses.count("stopped") == len(
        items
    )


# -- result lines and counts of the wrong shape ---------------------------------------------------
class _BadLine(BatchEmulator):
    """Writes item 2's result line with ``"status_code": "abc"``."""

    def _write_openai_files(self, batch) -> None:
        super()._write_openai_files(batch)
        file_id = batch.output_file_id
        rows = [json.loads(x) for x in self.files[file_id].decode().splitlines()]
        for row in rows:
            if row["custom_id"] == "item-2":
                row["response"]["status_code"] = "abc"
        self.files[file_id] = "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_a_malformed_result_line_fails_only_its_item(server):
    _BadLine(server)
    session = batch_session(server)

    async def main():
        run = session.map(
            [f"q{i}" for i in range(5)], "Say {item}", via="batch", poll_interval=0.01
        )
        return run, await run

    run, results = anyio.run(main)
    assert run.state == "finished"
    assert [r.status for r in run.items] == ["done", "done", "failed", "done", "done"]
    assert results[:2] == ["answer: Say q0", "answer: Say q1"]
    error = run.items[2].error
    assert isinstance(error.__cause__, ProviderError) and "`response.status_code`" in str(error)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("counts", ["abc", ["x"], {"total": "many", "completed": None}, {"x": -3}])
def test_malformed_request_counts_count_as_zero(server, provider, counts):
    session = batch_session(server, provider)
    service = batch_service(session.default_branch.chat_model)
    state = {"status": "in_progress"} if provider == "openai" else {}
    server.push_json({"id": "batch_1", "request_counts": counts, **state})
    status = anyio.run(service.status, "batch_1")
    assert (status.id, status.state) == ("batch_1", "running")
    assert (status.total, status.succeeded, status.failed) == (0, 0, 0)


# -- a batch that never ends ---------------------------------------------------------------------
def test_a_batch_that_never_ends_fails_at_its_deadline(server):
    emulator = BatchEmulator(server, polls_to_finish=10**9)
    session = batch_session(server)

    async def main():
        run = session.map(["a", "b"], "{item}", via="batch", poll_interval=0.01, poll_timeout=0.2)
        with pytest.raises(ProviderTimeoutError) as info:
            with anyio.fail_after(60):  # a guard against polling forever, not a timing check
                await run
        return run, info.value

    run, error = anyio.run(main)
    assert "`poll_timeout=0.2`" in str(error) and "resume_batch" in str(error)
    assert run.state == "failed" and run.error is error
    assert [r.status for r in run.items] == ["failed", "failed"]
    assert emulator.batches[run.batch_id].polls >= 1


def test_poll_timeout_is_checked(server):
    session = batch_session(server)
    with pytest.raises(ConfigurationError, match="poll_timeout"):
        session.map(["a"], "{item}", via="batch", poll_timeout=0)
    with pytest.raises(ConfigurationError, match="poll_timeout"):
        session.map(["a"], "{item}", via="batch", poll_timeout="1h")
    with pytest.raises(ConfigurationError, match="only applies to `via='batch'`"):
        session.map(["a"], "{item}", poll_timeout=5)


# -- a result file too large to hold ------------------------------------------------------------
def test_the_result_file_is_read_line_by_line(server):
    """A 40 MB result file is read with a small fraction of its size in memory."""
    body = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "x" * 4000}}],
    }
    lines = [
        json.dumps({"custom_id": f"item-{i}", "response": {"status_code": 200, "body": body}})
        for i in range(10_000)
    ]
    data = ("\n".join(lines) + "\n").encode()
    del lines
    assert len(data) > 40_000_000
    server.routes.append(
        lambda rec: (
            Script(body=data, content_type="application/octet-stream")
            if rec.path.endswith("/files/file-big/content")
            else None
        )
    )
    service = batch_service(batch_session(server).default_branch.chat_model)
    status = BatchStatus(id="batch_1", state="ended", raw={"output_file_id": "file-big"})

    async def main():
        count = 0
        async for outcome in service.results(status):
            assert outcome.error is None
            count += 1
        return count

    tracemalloc.start()
    try:
        count = anyio.run(main)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 10_000
    assert peak < len(data) / 8, f"peak {peak:,} bytes for a {len(data):,}-byte file"
