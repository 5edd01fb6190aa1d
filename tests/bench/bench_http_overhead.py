"""How much lion_nb adds on top of a bare HTTP call, measured against a loopback server.

Run: ``python tests/bench/bench_http_overhead.py [-n 300]``. Prints the median time of each
measured path and its ratio to a raw ``httpx.AsyncClient.post`` of the same payload (the
target for ``iModel.invoke`` is <= 1.3x). Each path is one async function in ``PATHS`` that
makes one call; every path sends the same system + user messages (no tools, so that
``Branch.communicate()`` sends exactly the raw payload). This is a report, not a test: it
asserts nothing about timing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lion_nb.models.endpoints.base import ChatRequest
from lion_nb.models.imodel import iModel
from tests.fakes.http_server import FakeProvider

MESSAGES = [
    {"role": "system", "content": "You are a weather assistant."},
    {"role": "user", "content": "What is the weather in Paris today? " * 8},
]

Setup = Callable[[FakeProvider], Awaitable[tuple[Callable[[], Awaitable[Any]], Callable]]]


async def raw_httpx(fake: FakeProvider):
    """The baseline: one keep-alive client posting the same JSON payload."""
    client = httpx.AsyncClient(timeout=httpx.Timeout(600, connect=5), trust_env=False)
    url = fake.openai_url + "/chat/completions"
    payload = {"model": "m", "messages": MESSAGES}
    headers = {"Authorization": "Bearer bench-key-000"}

    async def once() -> Any:
        response = await client.post(url, json=payload, headers=headers)
        response.raise_for_status()
        return response.json()

    return once, client.aclose


async def imodel_invoke(fake: FakeProvider):
    """``iModel(...).invoke(ChatRequest(...))`` of the same payload."""
    model = iModel(provider="openai", model="m", base_url=fake.openai_url, api_key="bench-key-000")

    async def once() -> Any:
        call = await model.invoke(ChatRequest(messages=list(MESSAGES)))
        if call.error is not None:
            raise call.error
        return call.response

    return once, model.aclose


async def branch_communicate(fake: FakeProvider):
    """``Branch.communicate()`` with history cleared each call: the same two messages go out,
    and the instruction and answer are recorded (the whole facade, lifecycle included)."""
    from lion_nb import Branch

    model = iModel(provider="openai", model="m", base_url=fake.openai_url, api_key="bench-key-000")
    branch = Branch(system=MESSAGES[0]["content"], chat_model=model)

    async def once() -> Any:
        return await branch.communicate(MESSAGES[1]["content"], clear_messages=True)

    return once, model.aclose


PATHS: dict[str, Setup] = {
    "raw httpx.AsyncClient.post": raw_httpx,
    "iModel.invoke": imodel_invoke,
    "Branch.communicate": branch_communicate,
}
BASELINE = "raw httpx.AsyncClient.post"


async def measure(fake: FakeProvider, setup: Setup, n: int, warmup: int) -> float:
    once, close = await setup(fake)
    try:
        for _ in range(warmup):
            await once()
        samples = []
        for _ in range(n):
            start = time.perf_counter()
            await once()
            samples.append(time.perf_counter() - start)
        return statistics.median(samples)
    finally:
        await close()


async def measure_paths(n: int, warmup: int, rounds: int) -> dict[str, float]:
    """Each path's median time (the median of its rounds' medians)."""
    with FakeProvider() as fake:
        medians: dict[str, list[float]] = {name: [] for name in PATHS}
        for _ in range(rounds):  # interleave paths so drift hits all of them alike
            for name, setup in PATHS.items():
                medians[name].append(await measure(fake, setup, n, warmup))
    return {name: statistics.median(values) for name, values in medians.items()}


def results(n: int = 300, warmup: int = 30, rounds: int = 3) -> list[tuple]:
    """Rows ``(figure, value, target, ratio to raw httpx)`` for ``tests/bench/run_all.py``."""
    found = anyio.run(measure_paths, n, warmup, rounds)
    base = found[BASELINE]
    targets = {"iModel.invoke": "<= 1.3x raw"}
    return [
        (f"{name}, loopback, median", f"{value * 1e3:.3f} ms", targets.get(name, ""), value / base)
        for name, value in found.items()
    ]


async def main(n: int, warmup: int, rounds: int) -> None:
    with FakeProvider() as fake:
        medians: dict[str, list[float]] = {name: [] for name in PATHS}
        for _ in range(rounds):  # interleave paths so drift hits all of them alike
            for name, setup in PATHS.items():
                medians[name].append(await measure(fake, setup, n, warmup))
    base = statistics.median(medians[BASELINE])
    print(f"{'path':<32} {'median':>10} {'ratio':>7}   (n={n} x {rounds} rounds)")
    for name, values in medians.items():
        value = statistics.median(values)
        print(f"{name:<32} {value * 1e3:>8.3f}ms {value / base:>6.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=300, help="calls per path per round")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    anyio.run(main, args.n, args.warmup, args.rounds)
