"""Stop while the model's code runs, in a real in-process IPython shell.

The turn view's Stop does two things, as the front end does them: its message cancels the
turn's task (read once the loop runs again) and the kernel's interrupt ends the code (here
`stop_current`, the same SIGINT on the main thread). The run is then recorded as stopped by
the user with what it printed, and the turn ends after the tool's response is on the branch.
An interrupt with no Stop behind it (the kernel's ■) leaves the turn going on, and the model
reads that the user interrupted the run. A view is told when code starts and stops running,
and a background turn's proposed cell is offered in its view only.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from lion_nb import Branch, iModel, notebook_tools
from lion_nb.notebook.agent import execute
from lion_nb.notebook.agent.tools import cell_ended

LOOP = "print('looping', flush=True)\nlooping.set()\nwhile True:\n    pass"


def _looping_branch(after: str = "the model went on") -> Branch:
    script = [{"tool_calls": [{"name": "run_python", "arguments": {"code": LOOP}}]}, after]
    model = iModel(provider="offline", model="scripted", responses=script)
    return Branch(chat_model=model, tools=notebook_tools(approve=True))


def _when_code_runs(ip: Any, seen: list[bool], act: Any) -> Any:
    """A watcher that records what it is told and, once the code has printed, does ``act``
    from another thread (as a front end's click arrives from outside the busy main thread)."""
    looping = ip.user_ns["looping"] = threading.Event()

    def later() -> None:
        looping.wait(30)
        act()

    def watch(running: bool) -> None:
        seen.append(running)
        if running:
            threading.Thread(target=later, daemon=True).start()

    return watch


def _responses(branch: Branch) -> list[Any]:
    return [m for m in branch.messages if m.kind == "action_response"]


def test_stop_ends_the_code_and_the_turn_and_the_run_is_recorded_with_its_output(ip):
    branch = _looping_branch()
    seen: list[bool] = []
    ended: dict[str, Any] = {}

    async def turn() -> None:
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        assert task is not None

        def press_stop() -> None:
            while not execute.stop_current():  # the run's interrupt is in place once it runs
                time.sleep(0.01)
            ended["pressed"] = time.monotonic()
            loop.call_soon_threadsafe(task.cancel)  # Stop's message, read when the loop runs

        with execute.runs_shown_by(_when_code_runs(ip, seen, press_stop)):
            try:
                await branch.operate(instruction="Loop.", actions=True)
                await asyncio.sleep(0)  # where `%%lion --agent` looks for a Stop between rounds
                await branch.operate(instruction="Go on.")  # the next round
            except asyncio.CancelledError:
                ended["cancelled"] = time.monotonic()
                raise

    try:
        asyncio.run(turn())
    except asyncio.CancelledError:
        pass
    assert "cancelled" in ended, "the Stop did not end the turn"
    print(f"\nStop to the end of the turn: {ended['cancelled'] - ended['pressed']:.3f} s")
    [response] = _responses(branch)
    assert response.metadata["stopped"] == "stopped"
    assert "[stdout]\nlooping" in response.rendered
    assert "the user stopped the turn while this ran" in response.rendered
    assert not [
        m for m in branch.messages if m.kind == "assistant_response" and "went on" in m.rendered
    ]
    assert seen == [True, False]


def test_the_kernel_interrupt_alone_stops_the_code_and_the_turn_goes_on(ip):
    branch = _looping_branch("I see you interrupted it.")
    seen: list[bool] = []

    def press_interrupt() -> None:
        while not execute.stop_current():
            time.sleep(0.01)

    async def turn() -> Any:
        with execute.runs_shown_by(_when_code_runs(ip, seen, press_interrupt)):
            await branch.operate(instruction="Loop.", actions=True)
            return await branch.operate(instruction="Go on.")  # the next round

    answer = asyncio.run(turn())
    [response] = _responses(branch)
    assert response.metadata["stopped"] == "interrupted"
    assert "the user interrupted the run" in response.rendered
    assert "[stdout]\nlooping" in response.rendered
    assert "I see you interrupted it." in str(answer)
    assert seen == [True, False]


def test_without_a_view_an_interrupted_run_returns_at_once(ip):
    tool = {t.name: t for t in notebook_tools(approve=True)}["run_python"]
    ip.user_ns["looping"] = threading.Event()

    def interrupt() -> None:
        while not execute.stop_current():
            time.sleep(0.01)

    threading.Thread(target=interrupt, daemon=True).start()
    out = asyncio.run(tool.call({"code": LOOP}))
    assert out.metadata["stopped"] == "interrupted"  # no Stop could be behind it: no wait


def test_a_failing_watcher_never_stops_the_run(ip):
    tool = {t.name: t for t in notebook_tools(approve=True)}["run_python"]

    def broken(_running: bool) -> None:
        raise RuntimeError("the view is gone")

    with execute.runs_shown_by(broken):
        out = asyncio.run(tool.call({"code": "print(6 * 7)"}))
    assert "[stdout]\n42" in out.output and out.metadata["is_error"] is False


def test_a_proposed_cell_is_recorded_and_inserted_only_while_its_cell_runs(ip):
    tool = {t.name: t for t in notebook_tools(approve=True)}["propose_cell"]
    asked: list[str] = []
    ip.set_next_input = lambda text, replace=False: asked.append(text)  # type: ignore[method-assign]
    try:
        now = asyncio.run(tool.call({"code": "print('now')"}))
        with cell_ended():
            later = asyncio.run(tool.call({"code": "print('later')"}))
    finally:
        del ip.set_next_input
    assert asked == ["print('now')"]  # a background turn's payload would reach another cell
    assert now.metadata == {"code": "print('now')", "proposed_cell": True}
    assert later.metadata == {"code": "print('later')", "proposed_cell": True}
