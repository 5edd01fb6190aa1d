"""A cancelled turn ends at once while a synchronous function model or tool still blocks:
both run in a worker thread the cancellation abandons, and what they return afterwards is
not recorded. The function blocks on an event released only after the turn has ended, so a
turn that waited for it would never end first."""

from __future__ import annotations

import threading

import anyio

from lion_nb import Branch, iModel

BOUND = 30  # the function gives up after this; the turn must end long before


def blocking_function(started: threading.Event, release: threading.Event, returned: list):
    def slow(messages, **request):
        started.set()
        release.wait(BOUND)
        returned.append("the late answer")
        return "the late answer"

    return slow


async def _cancel_once(started: threading.Event, scope: anyio.CancelScope) -> None:
    while not started.is_set():
        await anyio.sleep(0.01)
    scope.cancel()


def _run_cancelled(turn, started: threading.Event) -> bool:
    """Run ``turn()`` and cancel it once ``started``; whether it ended cancelled."""
    ended: list[str] = []

    async def main():
        async with anyio.create_task_group() as tg:
            scope = anyio.CancelScope()

            async def go():
                with scope:
                    await turn()
                    ended.append("finished")
                    return
                ended.append("cancelled")

            tg.start_soon(go)
            tg.start_soon(_cancel_once, started, scope)

    anyio.run(main)
    return ended == ["cancelled"]


def _wait_for(condition, what: str) -> None:
    for _ in range(BOUND * 100):
        if condition():
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"never happened: {what}")


def test_a_cancelled_sync_function_model_ends_the_turn_and_its_answer_is_not_kept():
    started, release, returned = threading.Event(), threading.Event(), []
    model = iModel(
        provider="offline", model="function", function=blocking_function(started, release, returned)
    )
    branch = Branch(chat_model=model)
    try:
        assert _run_cancelled(lambda: branch.communicate("take your time"), started)
        assert not release.is_set() and returned == []  # ended while the function blocked
    finally:
        release.set()
    _wait_for(lambda: returned, "the abandoned function returned in its thread")
    assert [m.kind for m in branch.messages] == []  # no text arrived: nothing recorded
    assert "the late answer" not in str([m.content for m in branch.messages])


def test_a_fast_sync_function_model_still_answers():
    model = iModel("offline/function", function=lambda messages: "quick")
    branch = Branch(chat_model=model)
    assert anyio.run(branch.communicate, "hi") == "quick"


def test_a_cancelled_sync_tool_ends_the_turn_and_its_result_is_not_kept():
    started, release, returned = threading.Event(), threading.Event(), []

    def slow_lookup(city: str) -> str:
        """Look a city up, slowly."""
        started.set()
        release.wait(BOUND)
        returned.append("sunny")
        return "sunny"

    model = iModel(
        "offline/scripted",
        responses=[{"tool_calls": [{"name": "slow_lookup", "arguments": {"city": "Rome"}}]}],
    )
    branch = Branch(chat_model=model, tools=[slow_lookup])
    try:
        turn = lambda: branch.operate(instruction="weather?", actions=True)  # noqa: E731
        assert _run_cancelled(turn, started)
        assert not release.is_set() and returned == []
    finally:
        release.set()
    _wait_for(lambda: returned, "the abandoned tool returned in its thread")
    responses = [m for m in branch.messages if m.kind == "action_response"]
    assert all("sunny" not in str(m.output) for m in responses)
