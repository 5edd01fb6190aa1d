"""Cyclic garbage and CPU per call against a loopback server in its own process.

Run: ``python tests/bench/bench_gc.py [-n 300]``. For each path (a raw
``httpx.AsyncClient.post``, ``iModel.invoke``, ``Branch.chat``, ``Branch.communicate``) it
prints, after a warm-up:

- the objects per call that only the cycle collector frees: the calls run with ``gc``
  disabled, then ``gc.collect()`` counts what was left in reference cycles (a count, so it
  is the same on a busy machine);
- the CPU time per call (``time.process_time``, this process only: the server's work is in
  its own process), as a ratio to the raw post: the median over rounds of blocks, in which
  the paths take turns, of each block's time over the raw post's block of that round;
- the function calls per call, a steadier proxy for that CPU on a busy machine.

Every path sends the same system + user messages and gets the same completion. Targets:
``iModel.invoke`` <= 1.15x and ``Branch.chat`` <= 1.25x the CPU of the raw post, and no
path leaves more cyclic garbage than the raw post. This is a report: it asserts nothing.
"""

from __future__ import annotations

import argparse
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
import sys
sys.path.insert(0, {root!r})
from tests.fakes.http_server import FakeProvider, Script, openai_completion

fake = FakeProvider()
fake.routes.append(lambda rec: Script(body=openai_completion("It is sunny.")))
fake.start()
print(fake.openai_url, flush=True)
sys.stdin.read()
"""

SYSTEM = "You are a weather assistant."
PROMPT = "What is the weather in Paris today?"
MESSAGES = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
KEY = "bench-key-000"

Once = Callable[[], Awaitable[Any]]
Setup = Callable[[str], Awaitable[tuple[Once, Callable[[], Awaitable[None]]]]]


class Server:
    """The loopback server in a child process (closed with its stdin), so that its threads
    neither compete with the measured event loop nor count in its CPU time."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER.format(root=str(ROOT))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url = self.process.stdout.readline().strip()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=10)


async def raw_httpx(url: str):
    """The baseline: one keep-alive client posting the same JSON payload."""
    import httpx

    client = httpx.AsyncClient(timeout=httpx.Timeout(600, connect=5), trust_env=False)
    payload = {"model": "m", "messages": MESSAGES}
    headers = {"Authorization": f"Bearer {KEY}"}

    async def once() -> Any:
        response = await client.post(url + "/chat/completions", json=payload, headers=headers)
        response.raise_for_status()
        return response.json()

    return once, client.aclose


def _model(url: str):
    from lion_nb import iModel

    return iModel(provider="openai", model="m", base_url=url, api_key=KEY, max_retries=0)


async def imodel_invoke(url: str):
    from lion_nb.models.endpoints.base import ChatRequest

    model = _model(url)

    async def once() -> Any:
        call = await model.invoke(ChatRequest(messages=list(MESSAGES)))
        if call.error is not None:
            raise call.error
        return call.response

    return once, model.aclose


async def branch_chat(url: str):
    """``Branch.chat``: one unrecorded call with the branch's system message."""
    from lion_nb import Branch

    model = _model(url)
    branch = Branch(system=SYSTEM, chat_model=model)

    async def once() -> Any:
        return await branch.chat(PROMPT)

    return once, model.aclose


async def branch_communicate(url: str):
    """``Branch.communicate`` with history cleared: the whole facade, lifecycle included."""
    from lion_nb import Branch

    model = _model(url)
    branch = Branch(system=SYSTEM, chat_model=model)

    async def once() -> Any:
        return await branch.communicate(PROMPT, clear_messages=True)

    return once, model.aclose


PATHS: dict[str, Setup] = {
    "raw httpx.AsyncClient.post": raw_httpx,
    "iModel.invoke": imodel_invoke,
    "Branch.chat": branch_chat,
    "Branch.communicate": branch_communicate,
}
BASELINE = "raw httpx.AsyncClient.post"
TARGETS = {"iModel.invoke": "<= 1.15x raw", "Branch.chat": "<= 1.25x raw"}


async def cyclic_per_call(url: str, setup: Setup, n: int, warmup: int) -> float:
    """Objects per call that only the cycle collector frees (``gc`` off during the calls)."""
    once, close = await setup(url)
    try:
        for _ in range(warmup):
            await once()
        gc.collect()
        gc.disable()
        try:
            for _ in range(n):
                await once()
            found = gc.collect()
        finally:
            gc.enable()
        return found / n
    finally:
        await close()


async def python_calls_per_call(url: str, setup: Setup, n: int, warmup: int) -> float:
    """Python and C function calls per call (``sys.setprofile`` events): a steady proxy for
    the CPU a path adds, when a shared machine makes times drift (the event loop's polling
    still varies a little with timing)."""
    once, close = await setup(url)
    try:
        for _ in range(warmup):
            await once()
        count = 0

        def profile(frame: Any, event: str, arg: Any) -> None:
            nonlocal count
            if event == "call" or event == "c_call":
                count += 1

        sys.setprofile(profile)
        try:
            for _ in range(n):
                await once()
        finally:
            sys.setprofile(None)
        return count / n
    finally:
        await close()


async def cpu_samples(
    url: str, n: int, warmup: int, blocks: int, paths: dict[str, Setup] = PATHS
) -> dict[str, list[float]]:
    """Each path's CPU seconds per call in each of ``blocks`` blocks of ``n`` calls. The paths
    take turns block by block, in the reverse order every other round (so that drift on a
    shared machine, and whatever running first or last in a round costs, hit all of them
    alike), ``gc`` on as usual (its collections count)."""
    made = {name: await setup(url) for name, setup in paths.items()}
    try:
        for once, _close in made.values():
            for _ in range(warmup):
                await once()
        gc.collect()
        samples: dict[str, list[float]] = {name: [] for name in paths}
        order = list(made.items())
        for block in range(blocks):
            for name, (once, _close) in order if block % 2 == 0 else reversed(order):
                start = time.process_time()
                for _ in range(n):
                    await once()
                samples[name].append((time.process_time() - start) / n)
        return samples
    finally:
        for _once, close in made.values():
            await close()


def paired_ratio(samples: dict[str, list[float]], name: str, baseline: str) -> float:
    """The median over rounds of ``name``'s block time over ``baseline``'s block of the same
    round (`cpu_samples`): each pair ran back to back, so a shared machine's drift cancels."""
    pairs = zip(samples[name], samples[baseline], strict=True)
    return statistics.median(mine / base for mine, base in pairs)


def measure(
    n: int = 300, warmup: int = 30, blocks: int = 15
) -> dict[str, tuple[float, float, float, float]]:
    """Each path's (cyclic objects, median CPU seconds, function calls) per call, and the
    median of its blocks' CPU ratios to the raw post's block run beside them."""
    with Server() as server:
        garbage = {
            name: anyio.run(cyclic_per_call, server.url, setup, n, warmup)
            for name, setup in PATHS.items()
        }
        calls = {
            name: anyio.run(python_calls_per_call, server.url, setup, max(1, n // 3), warmup)
            for name, setup in PATHS.items()
        }
        cpu = anyio.run(cpu_samples, server.url, max(1, n // 10), warmup, blocks)
    return {
        name: (
            garbage[name],
            statistics.median(cpu[name]),
            calls[name],
            paired_ratio(cpu, name, BASELINE),
        )
        for name in PATHS
    }


def results(n: int = 300, warmup: int = 30, blocks: int = 15) -> list[tuple]:
    """Rows ``(figure, value, target, ratio to raw httpx)`` for ``tests/bench/run_all.py``."""
    found = measure(n, warmup, blocks)
    base_garbage, _cpu, base_calls, _one = found[BASELINE]
    rows = []
    for name, (garbage, cpu, calls, ratio) in found.items():
        target = TARGETS.get(name, "")
        rows.append((f"{name}, CPU per call", f"{cpu * 1e6:.0f} us", target, ratio))
        rows.append((f"  {name}, function calls per call", f"{calls:.0f}", "", calls / base_calls))
        rows.append(
            (
                f"  {name}, cyclic garbage per call",
                f"{garbage:.1f} objects",
                "" if name == BASELINE else f"<= {base_garbage:.1f} (raw)",
                None,
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=300, help="calls per path (a tenth per block)")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--blocks", type=int, default=15, help="CPU blocks per path")
    args = parser.parse_args()
    found = measure(args.n, args.warmup, args.blocks)
    _garbage, _cpu, base_calls, _one = found[BASELINE]
    print(f"{'path':<28} {'cyclic/call':>11} {'CPU/call':>10} {'ratio':>7} {'calls/call':>11}")
    for name, (garbage, cpu, calls, ratio) in found.items():
        print(
            f"{name:<28} {garbage:>11.1f} {cpu * 1e6:>8.0f}us {ratio:>6.2f}x "
            f"{calls:>6.0f} {calls / base_calls:.2f}x"
        )


if __name__ == "__main__":
    main()
