"""Closing a session leaves no subprocess, thread or task behind.

`Session.aclose` closes every model its branches use: HTTP connection pools, and CLI agent
runs still going -- a run paused between chunks is closed (SIGTERM to its process group),
a run busy in another task has its group killed at once. Signals still being delivered to
async observers are awaited. Real subprocesses (the fake CLIs, which start a child of their
own) and the real loopback server.
"""

from __future__ import annotations

import asyncio
import threading
import time

import anyio
import pytest

from lion_nb import Session, iModel
from lion_nb.errors import CLIError
from lion_nb.models.endpoints import CLIRequest
from lion_nb.protocols.signals import MessageAdded
from tests.fakes.cli import alive, fake_cli_on_path

KEY = "sk-test-close-0123456789"


@pytest.fixture
def fakes(monkeypatch, tmp_path):
    fakes = fake_cli_on_path(monkeypatch, tmp_path)
    fakes.set(mode="child")  # prints one line, starts a child, then runs for ever
    return fakes


async def wait_for(predicate, seconds: float = 10.0) -> None:
    with anyio.fail_after(seconds):
        while not predicate():
            await anyio.sleep(0.02)


def test_closing_a_session_leaves_nothing_running(fakes, http_fake):
    threads_before = set(threading.enumerate())
    state: dict = {}

    async def main():
        session = Session()
        api = session.new_branch(
            name="api",
            chat_model=iModel(
                provider="openai", model="m", base_url=http_fake.openai_url, api_key=KEY
            ),
        )
        busy = session.new_branch(name="busy", chat_model=iModel(provider="claude_code"))
        paused = session.new_branch(name="paused", chat_model=iModel(provider="codex"))

        delivered: list = []

        async def slow_observer(signal):
            await anyio.sleep(0.3)
            delivered.append(signal)

        session.observe(MessageAdded, slow_observer)
        http_fake.push_json(
            {
                "id": "c",
                "choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop"}],
            }
        )
        await api.communicate("hello")
        assert api.chat_model.endpoint._http._client is not None  # a pool is open

        # a run paused between chunks: its stream is held, not being iterated
        paused_run = paused.chat_model.stream_cli(CLIRequest(prompt="list the files"))
        first = await paused_run.__anext__()  # the agent runs and has printed a line
        assert first.type == "system"
        await wait_for(lambda: len(fakes.records()) == 1)

        # a run busy in another task, waiting for output that never comes
        async def consume():
            try:
                async for _ in busy.run("count the files"):
                    pass
            except CLIError as exc:
                state["busy_error"] = exc

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await wait_for(lambda: len(fakes.records()) == 2)
            records = fakes.records()
            pids = [r["pid"] for r in records] + [r["child_pid"] for r in records]
            await anyio.sleep(0.2)
            assert all(alive(pid) for pid in pids)
            state["pids"] = pids
            api.msgs.add_message(instruction="a note")  # no run drains its signal: close does
            started = time.monotonic()
            await session.aclose()
            state["took"] = time.monotonic() - started
        # the busy task ended by itself: its agent was killed under it
        state["alive_after"] = [alive(pid) for pid in state["pids"]]
        state["client"] = api.chat_model.endpoint._http._client
        state["tasks"] = asyncio.all_tasks() - {asyncio.current_task()}
        state["delivered"] = len(delivered)
        await paused_run.aclose()  # already closed by the session: a no-op

    anyio.run(main)
    assert state["alive_after"] == [False] * 4
    assert state["client"] is None
    assert state["tasks"] == set()
    assert state["delivered"] == 4  # every slow observer was awaited, not dropped
    assert isinstance(state["busy_error"], CLIError)
    assert state["took"] < 30  # the busy agent never ends by itself; a guard only

    def left() -> list[str]:
        return [t.name for t in set(threading.enumerate()) - threads_before if t.is_alive()]

    deadline = time.monotonic() + 30  # threads that drained the CLIs' stderr end with their pipes
    while left() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert left() == []


def test_close_outside_an_event_loop_closes_the_pools(http_fake):
    model = iModel(provider="openai", model="m", base_url=http_fake.openai_url, api_key=KEY)
    session = Session()
    session.new_branch(chat_model=model)
    http_fake.push_json(
        {
            "id": "c",
            "choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop"}],
        }
    )
    anyio.run(session.branches[-1].communicate, "hello")
    assert model.endpoint._http._client is not None
    assert session.close() is None  # no loop runs here: closed before it returns
    assert model.endpoint._http._client is None


def gone_without_yielding(pids: list[int], seconds: float = 30.0) -> bool:
    """Whether the processes end within ``seconds`` (a guard against a hang), polled without
    giving the event loop a turn (so nothing scheduled can be what stopped them)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(alive(pid) for pid in pids):
            return True
        time.sleep(0.01)
    return False


def test_close_inside_a_running_loop_stops_agents_at_once_and_returns_a_task(fakes):
    session = Session()
    branch = session.new_branch(chat_model=iModel(provider="claude_code"))

    async def main():
        run = branch.chat_model.stream_cli(CLIRequest(prompt="hello"))
        await run.__anext__()
        await wait_for(lambda: len(fakes.records()) == 1)
        (record,) = fakes.records()
        task = session.close()  # as a notebook cell would call it
        assert isinstance(task, asyncio.Task)
        dead_at_once = gone_without_yielding([record["pid"], record["child_pid"]])
        await task
        await run.aclose()
        return dead_at_once

    assert anyio.run(main, backend="asyncio")


def test_a_closed_session_can_still_be_used():
    session = Session()
    anyio.run(session.default_branch.communicate, "first")
    session.close()
    answer = anyio.run(session.default_branch.communicate, "second")
    assert isinstance(answer, str) and len(session.default_branch.messages) == 4
