"""Batch benchmarks: the event loop under 1,000 concurrent operations, and what a batch adds.

Run: ``python tests/bench/bench_batch.py``. The loopback server runs in its own process here
(in the tests it shares the process, whose threads then compete with the event loop for the
interpreter lock, which is not what this measures). Prints, measured in this one run:

- the lag of a heartbeat task (a 5 ms sleep, how late it wakes) while ``session.map`` runs
  1,000 items at once against the server, 20 in flight at most; target: median under 10 ms.
  Its raw baseline is the same heartbeat while 1,000 raw ``httpx.AsyncClient.post`` calls of
  the same payloads run, 20 at once: on a small machine httpcore's connection-pool checks
  alone keep the loop busy for most of those 10 ms, so the ratio says what lion_nb adds;
- ``session.map`` of 500 items over the server, 20 at a time, against 500 raw
  ``httpx.AsyncClient.post`` calls of the same payloads at the same concurrency (ratio);
- ``session.map`` per item with the offline function model, against ``communicate`` on one
  branch of a session with its history cleared (the clone, the bookkeeping and the
  scheduling, as a ratio; the best of three interleaved runs of each, as for the posts,
  each from a collected heap);
- a provider batch of 500 items through the emulated OpenAI Batch API: submitting it, and
  recording its results (per item);
- the same 5 ms heartbeat while ``session.map`` runs 5,000 items on the offline function
  model, which never waits: its worst lag is how long Stop and progress wait; target: under
  100 ms (the map yields after every item).

This is a report, not a test: it asserts nothing about timing.
"""

from __future__ import annotations

import gc
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SERVER = """
import sys, json
sys.path.insert(0, {root!r})
from tests.fakes.http_server import FakeProvider, Script
from tests.fakes.batch_api import BatchEmulator

def echo(rec):
    if not rec.path.endswith("/chat/completions"):
        return None
    prompt = rec.body["messages"][-1]["content"]
    message = {{"role": "assistant", "content": "answer: " + prompt}}
    body = {{"id": "c", "object": "chat.completion", "model": "m",
            "choices": [{{"index": 0, "message": message, "finish_reason": "stop"}}],
            "usage": {{"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}}}}
    return Script(body=body, first_byte_delay={delay})

fake = FakeProvider()
fake.routes.append(echo)
BatchEmulator(fake, polls_to_finish=1)
fake.start()
print(fake.openai_url, flush=True)
sys.stdin.read()
"""


class Server:
    """The loopback server in a child process (closed with its stdin)."""

    def __init__(self, delay: float = 0.005):
        code = SERVER.format(root=str(ROOT), delay=delay)
        self.process = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.url = self.process.stdout.readline().strip()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=10)


def _fresh(main: Callable[[], Awaitable[float]]) -> float:
    """``anyio.run(main)`` from a collected heap: a repetition does not pay for the garbage
    of the one before (a finished run's branches are freed by the collector, not at once)."""
    gc.collect()
    return anyio.run(main)


def _session(url: str, **limits: Any):
    from lion_nb import Session, iModel

    session = Session()
    session.default_branch.chat_model = iModel(
        provider="openai", model="m", base_url=url, max_retries=0, **limits
    )
    return session


def _beating(work: Callable[[], Awaitable[Any]]) -> tuple[float, float, float]:
    """(median lag ms, 99th percentile ms, seconds) of a 5 ms heartbeat while ``work`` runs."""
    lags: list[float] = []

    async def beat(stop: anyio.Event) -> None:
        while not stop.is_set():
            before = time.perf_counter()
            await anyio.sleep(0.005)
            lags.append(time.perf_counter() - before - 0.005)

    async def main() -> float:
        stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(beat, stop)
            start = time.perf_counter()
            await work()
            elapsed = time.perf_counter() - start
            stop.set()
        return elapsed

    elapsed = anyio.run(main)
    lags.sort()
    return statistics.median(lags) * 1e3, lags[int(len(lags) * 0.99)] * 1e3, elapsed


def heartbeat_lag(url: str, items: int = 1000) -> tuple[float, float, float]:
    """The heartbeat while ``session.map`` runs ``items`` operations at once, 20 in flight."""
    session = _session(url, concurrency_limit=20)

    async def work() -> None:
        await session.map([f"item {i}" for i in range(items)], "{item}", concurrency=items)
        await session.default_branch.chat_model.aclose()

    return _beating(work)


async def _raw_posts(url: str, prompts: list[str], at_once: int = 20) -> float:
    """Raw httpx posts of ``prompts`` as chat payloads, ``at_once`` at a time, on a client
    made here; the seconds the posts took (closing the client not counted)."""
    import httpx

    client = httpx.AsyncClient(trust_env=False)
    limit = anyio.Semaphore(at_once)

    async def one(prompt: str) -> None:
        async with limit:
            body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
            response = await client.post(url + "/chat/completions", json=body)
            response.json()

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for prompt in prompts:
            tg.start_soon(one, prompt)
    elapsed = time.perf_counter() - start
    await client.aclose()
    return elapsed


def raw_heartbeat_lag(url: str, items: int = 1000) -> tuple[float, float, float]:
    """The heartbeat while ``items`` raw posts of the same payloads run, 20 at once (the
    client is made inside, as the mapped run's is)."""

    async def work() -> None:
        await _raw_posts(url, [f"item {i}" for i in range(items)])

    return _beating(work)


def map_vs_raw(url: str, items: int = 500) -> tuple[float, float]:
    """Seconds for ``session.map`` and for raw httpx posts of the same payloads, 20 at once."""

    prompts = [f"item {i}" for i in range(items)]

    async def raw() -> float:
        return await _raw_posts(url, prompts)

    async def mapped() -> float:
        session = _session(url, concurrency_limit=20)
        start = time.perf_counter()
        await session.map(prompts, "{item}", concurrency=20)
        elapsed = time.perf_counter() - start
        await session.default_branch.chat_model.aclose()
        return elapsed

    raws, maps = [], []
    for _ in range(2):  # interleaved, so drift hits both alike
        raws.append(_fresh(raw))
        maps.append(_fresh(mapped))
    return min(maps), min(raws)


def offline_per_item_us(items: int = 2000) -> tuple[float, float]:
    """Microseconds per item: ``session.map`` against ``communicate`` on one branch."""
    from lion_nb import Session, iModel

    async def ok(messages: Any, **kw: Any) -> str:  # async: a sync one hops to a thread
        return "ok"

    def model() -> Any:
        return iModel(provider="offline", model="function", function=ok)

    async def mapped() -> float:
        session = Session()
        session.default_branch.chat_model = model()
        start = time.perf_counter()
        await session.map([str(i) for i in range(items)], "{item}", concurrency=8)
        return (time.perf_counter() - start) / items * 1e6

    async def single() -> float:
        branch = Session().default_branch  # a member of a session, as the items are
        branch.chat_model = model()
        start = time.perf_counter()
        for i in range(items):
            await branch.communicate(str(i), clear_messages=True)
        return (time.perf_counter() - start) / items * 1e6

    anyio.run(single)  # warm up
    maps, singles = [], []
    for _ in range(3):  # interleaved, so drift hits both alike
        maps.append(_fresh(mapped))
        singles.append(_fresh(single))
    return min(maps), min(singles)


def offline_heartbeat_lag(items: int = 5000) -> tuple[float, float, float]:
    """The heartbeat while ``session.map`` runs ``items`` on the offline function model."""
    from lion_nb import Session, iModel

    async def ok(messages: Any, **kw: Any) -> str:  # async: a sync one hops to a thread
        return "ok"

    session = Session()
    session.default_branch.chat_model = iModel(provider="offline", model="function", function=ok)

    async def work() -> None:
        await session.map([str(i) for i in range(items)], "{item}")

    return _beating(work)


def provider_batch(url: str, items: int = 500) -> tuple[float, float]:
    """(seconds to submit, microseconds per item to record) for a provider batch."""
    session = _session(url)
    timings: dict[str, float] = {}

    async def main() -> None:
        run = session.map(
            [f"item {i}" for i in range(items)], "{item}", via="batch", poll_interval=0.01
        )
        start = time.perf_counter()
        await run.submit()
        timings["submit"] = time.perf_counter() - start
        await run
        timings["total"] = time.perf_counter() - start
        collect = [r.duration for r in run.items if r.duration is not None]
        timings["record_us"] = statistics.median(collect) * 1e6

    anyio.run(main)
    return timings["submit"], timings["record_us"]


def results() -> list[tuple[str, str, str, float | None]]:
    """Rows ``(figure, value, target, ratio to a raw baseline or None)``."""
    import os
    import tempfile

    os.environ.setdefault("LION_HOME", tempfile.mkdtemp(prefix="lion-bench-"))
    with Server() as server:
        raw_median, raw_p99, raw_seconds = raw_heartbeat_lag(server.url)
        median, p99, seconds = heartbeat_lag(server.url)
        mapped, raw = map_vs_raw(server.url)
        submit_s, record_us = provider_batch(server.url)
    per_map, per_single = offline_per_item_us()
    _off_median, off_worst, off_seconds = offline_heartbeat_lag()
    return [
        ("heartbeat lag, 1,000 concurrent items (median)", f"{median:.2f} ms", "< 10 ms", median / raw_median),
        ("  raw httpx posts, same payloads, 20 at once", f"{raw_median:.2f} ms", "", 1.0),
        ("heartbeat lag, 1,000 concurrent items (99th pct)", f"{p99:.1f} ms", "", p99 / raw_p99),
        ("  raw httpx posts (99th pct)", f"{raw_p99:.1f} ms", "", 1.0),
        ("  1,000 items, 20 in flight, took", f"{seconds:.2f} s", "", seconds / raw_seconds),
        ("  1,000 raw posts, 20 at once, took", f"{raw_seconds:.2f} s", "", 1.0),
        ("session.map, 500 items over loopback, 20 at once", f"{mapped:.2f} s", "<= 1.5x raw", mapped / raw),
        ("  raw httpx posts, same payloads and concurrency", f"{raw:.2f} s", "", 1.0),
        ("session.map per item, offline model", f"{per_map:.0f} us", "<= 2x", per_map / per_single),
        ("  communicate per call, one session branch", f"{per_single:.0f} us", "", None),
        ("batch API, submit 500 items", f"{submit_s * 1e3:.0f} ms", "", None),
        ("batch API, record one result", f"{record_us:.0f} us", "", None),
        ("heartbeat lag, 5,000 offline items (99th pct)", f"{off_worst:.1f} ms", "< 100 ms", None),
        ("  5,000 offline items took", f"{off_seconds:.2f} s", "", None),
    ]  # fmt: skip


def main() -> None:
    rows = results()
    width = max(len(r[0]) for r in rows)
    for figure, value, target, ratio in rows:
        shown = f"{ratio:.2f}x" if ratio is not None else ""
        print(f"{figure:<{width}}  {value:>10}  {shown:>6}  {target}")


if __name__ == "__main__":
    main()
