"""What replaying a cassette costs per exchange, beside a live offline call.

Run: ``python tests/bench/bench_cassette.py [-n 200] [--chunks 1000]``. Records one streamed
OpenAI-compatible answer of ``--chunks`` text deltas from the loopback server, and one CLI
turn of as many chunks from a scripted agent, then times (median of ``-n`` runs):

- ``iModel.invoke`` replaying the stream to a listener (every delta delivered), the target
  being under 1 ms for 1,000 chunks;
- ``iModel.stream_cli`` replaying the CLI turn to its end (every recorded chunk yielded,
  every text chunk delivered to a listener), same target;
- a live ``offline/auto`` call of the same messages, the live in-process agent turn that
  was recorded (validating the same chunks as it builds them), and the live loopback
  stream, for scale.

``results()`` gives the two replay figures as rows for ``tests/bench/run_all.py``, each with
its ratio to the live exchange it stands in for. This is a report, not a test: it asserts
nothing about timing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lion_nb.models.cassettes import cassette
from lion_nb.models.endpoints.base import ChatRequest, CLIEndpoint, CLIRequest, streaming_to
from lion_nb.models.imodel import iModel
from lion_nb.models.stream import StreamChunk
from tests.fakes.http_server import FakeProvider

MESSAGES = [
    {"role": "system", "content": "You are a storyteller."},
    {"role": "user", "content": "Tell a long story. " * 8},
]


def sse(chunks: int) -> list[str]:
    def event(delta: dict, finish: str | None = None) -> str:
        body = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
        body["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return "data: " + json.dumps(body)

    deltas = [event({"content": f"w{i} "}) for i in range(chunks)]
    return [*deltas, event({}, "stop"), "data: [DONE]"]


class Agent(CLIEndpoint):
    """A CLI agent that streams ``chunks`` text deltas (recorded once, then replayed)."""

    provider = "bench_agent"

    def __init__(self, chunks: int):
        super().__init__("v1")
        self.chunks = chunks

    async def stream(self, request: CLIRequest) -> AsyncGenerator[StreamChunk, None]:
        yield StreamChunk(type="system", metadata={"session_id": "s-1"})
        for i in range(self.chunks):
            yield StreamChunk(type="text", content=f"w{i} ", is_delta=True)
        yield StreamChunk(type="result", metadata={"usage": {"total_tokens": self.chunks}})


async def median_us(once: Callable[[], Awaitable[Any]], n: int) -> float:
    await once()  # warm up
    times = []
    for _ in range(n):
        start = time.perf_counter()
        await once()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


async def measure(n: int, chunks: int) -> dict[str, float]:
    """Every figure, in µs (medians), plus the cassette line's size in bytes."""
    folder = Path(tempfile.mkdtemp())
    api_tape, cli_tape = folder / "api.jsonl", folder / "cli.jsonl"
    received: list[str] = []
    sink = received.append

    with FakeProvider() as fake:
        live_model = iModel(provider="openai", model="m", base_url=fake.openai_url)

        async def live_stream() -> Any:
            fake.push(events=sse(chunks))
            with streaming_to(sink):
                return await live_model.invoke(ChatRequest(messages=list(MESSAGES)))

        with cassette(api_tape, mode="all"):
            await live_stream()
        live_us = await median_us(live_stream, max(5, n // 10))
        await live_model.aclose()

    replay_model = iModel(provider="openai", model="m", base_url="http://127.0.0.1:9/v1")

    async def replay_api() -> Any:
        received.clear()
        with streaming_to(sink):
            call = await replay_model.invoke(ChatRequest(messages=list(MESSAGES)))
        assert call.status == "completed" and len(received) == chunks
        return call

    agent = iModel(endpoint=Agent(chunks))

    async def cli_turn() -> int:
        count = 0
        async for _ in agent.stream_cli(CLIRequest(prompt="Tell a long story.")):
            count += 1
        return count

    async def replay_cli() -> int:
        received.clear()
        with streaming_to(sink):
            count = await cli_turn()
        assert count == chunks + 2 and len(received) == chunks
        return count

    with cassette(cli_tape, mode="all"):
        await cli_turn()
    agent_live_us = await median_us(cli_turn, n)

    offline = iModel(provider="offline", model="auto")

    async def offline_call() -> Any:
        with streaming_to(sink):
            return await offline.invoke(ChatRequest(messages=list(MESSAGES)))

    with cassette(api_tape, mode="none"):
        replay_us = await median_us(replay_api, n)
    with cassette(cli_tape, mode="none"):
        cli_us = await median_us(replay_cli, n)
    offline_us = await median_us(offline_call, n)

    return {
        "replay_us": replay_us,
        "cli_us": cli_us,
        "agent_live_us": agent_live_us,
        "offline_us": offline_us,
        "live_us": live_us,
        "size": api_tape.stat().st_size,
    }


def results(n: int = 200, chunks: int = 1000) -> list[tuple[str, str, str, float | None]]:
    """Rows ``(figure, value, target, ratio)`` for ``tests/bench/run_all.py``: each replay
    over the live exchange it replaces."""
    f = anyio.run(measure, n, chunks)
    return [
        (
            f"API stream replay, {chunks:,} deltas (vs live loopback)",
            f"{f['replay_us']:.0f} us",
            "< 1000 us",
            f["replay_us"] / f["live_us"],
        ),
        (
            f"CLI turn replay, {chunks:,} chunks (vs live in-process agent)",
            f"{f['cli_us']:.0f} us",
            "< 1000 us",
            f["cli_us"] / f["agent_live_us"],
        ),
    ]


async def main(n: int, chunks: int) -> None:
    f = await measure(n, chunks)
    print(f"replay overhead per exchange ({chunks}-chunk stream, median of {n}):")
    print(f"  API stream replayed to a listener   {f['replay_us']:9.0f} µs   (target < 1000 µs)")
    print(f"  CLI turn replayed to its end        {f['cli_us']:9.0f} µs   (target < 1000 µs)")
    print(f"  live in-process agent, same chunks  {f['agent_live_us']:9.0f} µs")
    print(f"  live offline/auto call (reference)  {f['offline_us']:9.0f} µs")
    print(f"  live loopback stream that was taped {f['live_us']:9.0f} µs")
    print(
        f"  API replay / live loopback: {f['replay_us'] / f['live_us']:.3f}x; "
        f"CLI replay / live agent: {f['cli_us'] / f['agent_live_us']:.2f}x; "
        f"cassette line {f['size']:,} bytes"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=1000)
    args = parser.parse_args()
    anyio.run(main, args.n, args.chunks)
