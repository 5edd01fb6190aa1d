"""The turn view's Stop in a real ipykernel (nbclient runs the cells in order, as Run All
does): it stops that turn only -- the cell ends quietly, its view says what was kept, and the
next cell runs. The model is a synchronous function blocked on an event for up to 30 s, so a
Stop that waited for it would let it answer first (the event is released only after the
next cell has checked that the turn ended without it).

Stop is pressed as the front end presses it: a custom ``{"type": "stop"}`` message delivered
to the widget through its comm, from a task on the kernel's loop while the turn runs. The
kernel's interrupt keeps raising `RunInterrupted` (`test_kernel_notebook`).
"""

from __future__ import annotations

import json
import shutil

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.kernel

SETUP = """\
%load_ext lion_nb
import asyncio, json, threading
from ipywidgets.widgets.widget import _instances
from lion_nb import iModel, current_session
from lion_nb.widgets.turn import TurnWidget

started, release, returned = threading.Event(), threading.Event(), []

def slow(messages, **request):
    started.set()
    release.wait(30)
    returned.append("the late answer")
    return "the late answer"

model = iModel(provider="offline", model="function", function=slow)
pressed = {}

async def press_stop():
    while not started.is_set():
        await asyncio.sleep(0.02)
    turn = next(w for w in list(_instances.values()) if isinstance(w, TurnWidget) and w.running)
    pressed["turn"] = turn
    data = {"method": "custom", "content": {"type": "stop"}}
    message = {"content": {"data": data}, "buffers": []}
    turn._handle_msg(message)  # what the comm does with the Stop button's message

presser = asyncio.get_running_loop().create_task(press_stop())
"""

TURN = "%%lion -b slow -m model\nTake your time."

AFTER = """\
await presser
print(json.dumps({
    "returned": list(returned),
    "status": pressed["turn"].status,
    "running": pressed["turn"].running,
    "kinds": [m.kind for m in current_session().get_branch("slow").messages],
}))
release.set()
"""

LATER = """\
for _ in range(3000):
    if returned:
        break
    await asyncio.sleep(0.01)
print(json.dumps({
    "returned": list(returned),
    "kinds": [m.kind for m in current_session().get_branch("slow").messages],
}))
"""


def _json_line(cell) -> dict:
    text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
    return json.loads(text.strip().splitlines()[-1])


def test_stop_ends_the_cell_quietly_and_the_next_cells_run(tmp_path):
    if shutil.which("python") is None:  # pragma: no cover - the kernel needs an interpreter
        pytest.skip("no python on PATH")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in (SETUP, TURN, AFTER, LATER)]
    client = NotebookClient(
        nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises if a cell fails: Run All would stop there
    turn_cell = nb.cells[1]
    assert not [o for o in turn_cell.outputs if o.get("output_type") == "error"]
    assert not [o for o in turn_cell.outputs if o.get("name") == "stderr"], turn_cell.outputs
    after = _json_line(nb.cells[2])
    assert after["returned"] == []  # the turn ended while the function still blocked
    assert after["running"] is False and after["status"].startswith("stopped")
    assert after["kinds"] == []  # no text had arrived: nothing recorded (ADR-0106)
    later = _json_line(nb.cells[3])
    assert later["returned"] == ["the late answer"]  # it finished in its thread ...
    assert later["kinds"] == []  # ... and its answer is not the turn's


INTERRUPT_SETUP = """\
%load_ext lion_nb
import json, pathlib, threading
from lion_nb import iModel, current_session

release, returned = threading.Event(), []

def slow(messages, **request):
    pathlib.Path("started").write_text("")
    release.wait(30)
    returned.append("the late answer")
    return "the late answer"

model = iModel(provider="offline", model="function", function=slow)
"""

INTERRUPT_AFTER = """\
print(json.dumps({
    "returned": list(returned),
    "kinds": [m.kind for m in current_session().get_branch("slow").messages],
}))
release.set()
"""


def test_the_interrupt_of_a_sync_function_model_raises_at_once(tmp_path):
    """The kernel's interrupt still stops everything (`RunInterrupted`), and it acts while
    the synchronous function blocks: the next cell finds the function still running."""
    import asyncio

    if shutil.which("python") is None:  # pragma: no cover - the kernel needs an interpreter
        pytest.skip("no python on PATH")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in (INTERRUPT_SETUP, TURN, INTERRUPT_AFTER)]
    client = NotebookClient(
        nb,
        timeout=60,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )

    async def scenario() -> None:
        async with client.async_setup_kernel():
            await client.async_execute_cell(nb.cells[0], 0)
            turn = asyncio.ensure_future(client.async_execute_cell(nb.cells[1], 1))
            while not (tmp_path / "started").exists():
                await asyncio.sleep(0.05)
            await client.km.interrupt_kernel()
            await asyncio.wait_for(turn, 60)
            await client.async_execute_cell(nb.cells[2], 2)

    asyncio.run(scenario())
    errors = [o for o in nb.cells[1].outputs if o.get("output_type") == "error"]
    assert [e["ename"] for e in errors] == ["RunInterrupted"], nb.cells[1].outputs
    after = _json_line(nb.cells[2])
    assert after == {"returned": [], "kinds": []}  # ended while the function still blocked
