"""`iModel` limits on CLI runs: a run holds its slot for the whole life of its stream."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from lion_nb.errors import ConfigurationError
from lion_nb.models.endpoints import CLIRequest
from lion_nb.models.imodel import iModel


def agent(**kw: Any) -> iModel:
    turn = [
        {"type": "text", "content": "a"},
        {"type": "text", "content": "b"},
        {"type": "result"},
    ]
    return iModel(provider="offline_cli", model="scripted", turns=[turn] * 3, delay=0.05, **kw)


def _max_overlap(model: iModel, runs: int = 3) -> tuple[int, int]:
    """Run ``runs`` streams at once; the most in progress together, and how many finished."""
    state = {"active": 0, "most": 0, "done": 0}

    async def one() -> None:
        started = False
        async for _chunk in model.stream_cli(CLIRequest(prompt="x")):
            if not started:
                started = True
                state["active"] += 1
                state["most"] = max(state["most"], state["active"])
            await anyio.sleep(0)  # give the other runs every chance to start
        state["active"] -= 1
        state["done"] += 1

    async def main() -> None:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for _ in range(runs):
                    tg.start_soon(one)

    anyio.run(main)
    return state["most"], state["done"]


def test_concurrency_limit_one_runs_cli_streams_one_at_a_time():
    assert _max_overlap(agent(concurrency_limit=1)) == (1, 3)


def test_without_a_limit_cli_streams_overlap():
    assert _max_overlap(agent()) == (3, 3)  # the counter above can see an overlap


def test_a_stream_closed_early_frees_its_slot():
    model = agent(concurrency_limit=1)

    async def main() -> list[str]:
        first = model.stream_cli(CLIRequest(prompt="x"))
        await first.__anext__()
        await first.aclose()
        with anyio.fail_after(2):  # would wait for ever if the slot were still held
            return [c.type async for c in model.stream_cli(CLIRequest(prompt="y"))]

    assert anyio.run(main) == ["system", "text", "text", "result"]


def test_a_stream_closed_by_another_task_frees_its_slot():
    model = agent(concurrency_limit=1)

    async def main() -> list[str]:
        stream = model.stream_cli(CLIRequest(prompt="x"))

        async def start() -> None:  # the slot is taken in this task ...
            await stream.__anext__()

        async with anyio.create_task_group() as tg:
            tg.start_soon(start)
        await stream.aclose()  # ... and given back from another one
        with anyio.fail_after(2):
            return [c.type async for c in model.stream_cli(CLIRequest(prompt="y"))]

    assert anyio.run(main) == ["system", "text", "text", "result"]


def test_requests_per_minute_bound_cli_runs():
    model = iModel(
        provider="offline_cli",
        model="scripted",
        turns=[[{"type": "result"}]] * 2,
        limit_requests=1,
    )

    async def main() -> bool:
        async for _chunk in model.stream_cli(CLIRequest(prompt="x")):
            pass
        with anyio.move_on_after(0.3) as scope:  # the second run waits for the window
            async for _chunk in model.stream_cli(CLIRequest(prompt="y")):
                pass
        return scope.cancelled_caught

    assert anyio.run(main) is True


def test_a_model_that_is_not_a_cli_is_refused_at_once():
    with pytest.raises(ConfigurationError, match="is not a CLI agent"):
        iModel(provider="offline", model="auto", concurrency_limit=1).stream_cli(
            CLIRequest(prompt="x")
        )
