"""The Stop of a turn (``TurnInfo.stop``, ``NotebookState.stop_current``) in a real in-process
IPython shell: it ends a silent turn as an interrupt does -- but stops that turn only: the
cell ends quietly, with no error, on the awaited path and on the worker-loop fallback (called
from another thread); a background run's Stop cancels its handle; a late Stop does nothing;
and the timer that keeps the loop awake during a turn is gone once it ends.

The models are silent for 20 s: a turn that is not stopped would finish normally (and the
test would fail on its result), not hang.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from lion_nb import current_session
from lion_nb.notebook.cell.handle_view import TurnView, set_view_factory
from lion_nb.notebook.cell.runner import RunInterrupted, running_wakers
from lion_nb.notebook.state.session import notebook_state
from tests.notebook.nbshell import run
from tests.waiting import until, wait_until

SETUP = """
import asyncio
from lion_nb import iModel

entered = []  # the silent model was called: the turn waits on it

async def sleepy(messages, **request):
    entered.append(messages[-1]["content"])
    await asyncio.sleep(20)
    return "the silent model answered"

silent = iModel(provider="offline", model="function", function=sleepy)
silent_cli = iModel(provider="offline_cli", model="scripted", delay=20, turns=[[
    {"type": "system", "metadata": {"session_id": "quiet-1"}},
    {"type": "text", "content": "too late"},
    {"type": "result"},
]])
"""


class StopView(TurnView):
    """Records the turn's lifecycle; optionally presses Stop from a task once ``press_when()``
    holds (the turn reached the point the test stops it at)."""

    press_when: Callable[[], Any] | None = None
    views: list[StopView] = []

    def __init__(self, info):
        super().__init__(info)
        self.events: list[tuple] = []
        self.stop_at_start = info.stop
        self.pressed: bool | None = None
        self.wakers_while_running: int | None = None
        StopView.views.append(self)

    def start(self):
        self.events.append(("start",))
        if StopView.press_when is not None:
            asyncio.get_running_loop().create_task(self._press(StopView.press_when))

    async def _press(self, when: Callable[[], Any]) -> None:  # what a Stop button's handler does
        await until(when, what="the point to press Stop at")
        self.wakers_while_running = running_wakers()
        self.pressed = self.info.stop()

    def finish(self, result):
        self.events.append(("finish",))

    def fail(self, error, *, interrupted=False):
        self.events.append(("fail", interrupted))


def _waker_handles(loop) -> list:
    """Live timer handles of the loop-waking timer in ``loop``'s schedule."""
    return [
        h
        for h in getattr(loop, "_scheduled", [])
        if not h.cancelled() and type(getattr(h._callback, "__self__", None)).__name__ == "_Waker"
    ]


@pytest.fixture
def nb(ip):
    assert run(ip, SETUP).error is None
    StopView.views = []
    StopView.press_when = None
    ip.user_ns.update(until=until, instructed=instructed)
    set_view_factory(StopView)
    yield ip
    set_view_factory(None)


def instructed(name: str) -> bool:
    """Whether branch ``name`` holds its instruction (a CLI turn records it first)."""
    branch = next((b for b in current_session().branches if b.name == name), None)
    return branch is not None and any(m.kind == "instruction" for m in branch.messages)


def _stopped_quietly(ran) -> None:
    assert ran.error is None and ran.value is None, ran  # Run All goes on to the next cell
    assert ran.stderr == "", ran


def test_stop_from_another_task_interrupts_a_silent_turn_and_no_timer_is_left(nb):
    from IPython.core.async_helpers import get_asyncio_loop

    StopView.press_when = lambda: nb.user_ns["entered"]
    ran = run(nb, "%%lion -b quiet -m silent\nSay nothing for a while.")
    _stopped_quietly(ran)
    (view,) = StopView.views
    assert view.stop_at_start is not None  # set before the view existed
    assert view.pressed is True
    assert view.events == [("start",), ("fail", True)]  # one terminal report: interrupted
    assert view.wakers_while_running == 1  # the loop was kept awake during the turn
    assert running_wakers() == 0
    assert _waker_handles(get_asyncio_loop()) == []  # nothing keeps waking the idle loop
    assert notebook_state().foreground_stop is None
    assert list(current_session().get_branch("quiet").messages) == []  # no text arrived (ADR-0106)
    assert run(nb, "%%lion -q\nstill usable").error is None


def test_stop_of_a_cli_turn_keeps_the_instruction_and_one_terminal_signal(nb):
    from lion_nb import RunEnd, RunFailed, RunStart

    seen = []
    for kind in (RunStart, RunEnd, RunFailed):
        current_session().observe(kind, lambda s: seen.append(type(s).__name__))
    StopView.press_when = lambda: instructed("agent")
    ran = run(nb, "%%lion -b agent -m silent_cli\nRun for a while.")
    _stopped_quietly(ran)
    assert StopView.views[0].pressed is True
    assert [m.kind for m in current_session().get_branch("agent").messages] == ["instruction"]
    assert seen == ["RunStart", "RunFailed"]


def test_a_stop_after_the_turn_ended_returns_false_and_cancels_nothing(nb):
    assert run(nb, "%%lion -q\nquick").error is None
    ran = run(nb, "%%lion -b quick\nquick too")
    assert ran.error is None, ran
    (view,) = StopView.views
    nb.user_ns["old_stop"] = view.info.stop
    later = run(nb, "late = old_stop()\nawait asyncio.sleep(0.05)\nreached = True")
    assert later.error is None, later  # the next cell was not cancelled
    assert nb.user_ns["late"] is False and nb.user_ns["reached"] is True
    assert view.events == [("start",), ("finish",)]


def test_stop_current_stops_the_running_foreground_turn(nb):
    assert notebook_state().stop_current() is False  # nothing runs
    code = (
        "from lion_nb.notebook.state.session import notebook_state\n"
        "src = '%%lion -b side -m silent\\nSay nothing.'\n"
        "task = asyncio.ensure_future(get_ipython().run_cell_async("
        "src, store_history=False, transformed_cell=get_ipython().transform_cell(src)))\n"
        "while notebook_state().foreground_stop is None:\n"
        "    await asyncio.sleep(0.01)\n"
        "await until(lambda: entered)  # the turn waits on its model\n"
        "stopped = notebook_state().stop_current()\n"
        "inner = await task\n"
        "after = notebook_state().stop_current()"
    )
    ran = run(nb, code)
    assert ran.error is None, ran
    assert nb.user_ns["inner"].error_in_exec is None  # a Stop, not an interrupt
    assert nb.user_ns["stopped"] is True and nb.user_ns["after"] is False
    assert StopView.views[0].events[-1] == ("fail", True)


def test_an_interrupt_after_a_stop_still_stops_everything(nb):
    code = (
        "from lion_nb.notebook.state.session import notebook_state\n"
        "src = '%%lion -b both -m silent\\nSay nothing.'\n"
        "task = asyncio.ensure_future(get_ipython().run_cell_async("
        "src, store_history=False, transformed_cell=get_ipython().transform_cell(src)))\n"
        "while notebook_state().foreground_stop is None:\n"
        "    await asyncio.sleep(0.01)\n"
        "await asyncio.sleep(0.2)\n"
        "stopped = notebook_state().stop_current()\n"
        "task.cancel()  # what the kernel's interrupt does\n"
        "inner = await task"
    )
    ran = run(nb, code)
    assert ran.error is None, ran
    assert nb.user_ns["stopped"] is True
    assert isinstance(nb.user_ns["inner"].error_in_exec, RunInterrupted)


def test_stop_of_a_background_run_is_its_handles_cancel(nb):
    ran = run(nb, "%%lion --bg -b later -m silent\nTake your time.")
    handle = ran.value
    assert type(handle).__name__ == "RunHandle"
    (view,) = StopView.views
    assert view.stop_at_start is not None
    assert run(nb, "await until(lambda: entered)").error is None  # it waits on its model
    assert handle.status == "running"
    assert view.info.stop() is True
    waited = run(nb, f"await Out[{nb.execution_count - 2}]")
    assert isinstance(waited.error, asyncio.CancelledError)
    assert handle.status == "cancelled"
    assert view.events == [("start",), ("fail", True)]
    assert view.info.stop() is False  # ended
    assert running_wakers() == 0  # a background run never keeps the loop awake


def test_stop_from_another_thread_on_the_worker_loop_fallback(nb):
    """A host whose loop runs calls the magic synchronously: the turn runs on a worker loop,
    and a Stop from a third thread is carried out there."""
    timers = []

    def stop_later(info):
        view = StopView(info)

        def press():  # from a third thread, once the turn waits on its agent
            wait_until(lambda: instructed("fallback"), what="the instruction recorded")
            view.pressed = info.stop()

        timer = threading.Thread(target=press)
        timers.append(timer)
        timer.start()
        return view

    set_view_factory(stop_later)

    async def host():
        assert nb.run_cell_magic("lion", "-b fallback -m silent_cli", "Run for a while.") is None
        return asyncio.get_running_loop()

    host_loop = asyncio.run(host())
    timers[0].join()
    view = StopView.views[0]
    assert view.pressed is True
    assert view.events == [("start",), ("fail", True)]
    assert view.info.stop() is False
    assert [m.kind for m in current_session().get_branch("fallback").messages] == ["instruction"]
    assert not [t for t in threading.enumerate() if t.name == "lion-run"]
    assert _waker_handles(host_loop) == []


def test_stop_kills_a_cli_agents_subprocess(nb, monkeypatch, tmp_path):
    """A real CLI agent (the fake ``claude`` executable) hangs; Stop kills its process."""
    import json
    import os
    import time
    from pathlib import Path

    fake_bin = Path(__file__).resolve().parents[2] / "fakes" / "bin"
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_CLI_MODE", "hang")
    monkeypatch.setenv("FAKE_CLI_RECORD", str(record))
    nb.user_ns["record_path"] = str(record)
    code = (
        "import os, pathlib\n"
        "from lion_nb.notebook.state.session import notebook_state\n"
        "src = '%%lion -b agent -m claude_code/sonnet\\nrefactor everything'\n"
        "task = asyncio.ensure_future(get_ipython().run_cell_async("
        "src, store_history=False, transformed_cell=get_ipython().transform_cell(src)))\n"
        "def started():  # the agent's process has written its first record line\n"
        "    p = pathlib.Path(record_path)\n"
        "    return p.exists() and p.read_text().strip()\n"
        'await until(started, what="the agent\'s first record line")\n'
        "await until(lambda: instructed('agent'))  # the turn waits on the agent\n"
        "stopped = notebook_state().stop_current()\n"
        "inner = await task"
    )
    ran = run(nb, code)
    assert ran.error is None, ran
    assert nb.user_ns["stopped"] is True
    assert nb.user_ns["inner"].error_in_exec is None
    pid = json.loads(record.read_text().splitlines()[0])["pid"]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"the CLI process {pid} is still running")
