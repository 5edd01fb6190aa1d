"""Interrupt and Stop of a *silent* turn in a real ipykernel (through nbclient).

The model is an offline function model that never answers, without a word. An interrupt of
such a turn is only acted on when the kernel's loop next wakes; a turn keeps its loop awake,
so the interrupted cell ends -- which is impossible if the interrupt waited for the model
(the wait for it is a guard against a hang, not a timing check). The same holds with
``%autoawait off`` (the worker-loop fallback). A Stop pressed from another task on the
kernel's loop (what a widget's comm handler does) ends a foreground turn the same way, but
quietly: it stops that turn, not the notebook; a Stop pressed after its turn ended does
nothing, not even to the cell running then. Every wait in
the notebook is for a condition, so a loaded machine only makes it slower. The measured times
are printed.

Tasks left behind are counted by what started them, never by their repr: a task counts when a
coroutine on its await chain is defined in the lion_nb package. The kernel's own tasks
(ipykernel 7's ``Kernel.shell_main``) and the notebook's stay out of the count even when a
path or name in their repr says ``lion_nb`` -- as the setup's own long-lived task does.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.notebook.test_kernel_notebook import CellIdClient, _interrupted, _json_line, _text
from tests.waiting import until

pytestmark = pytest.mark.kernel

#: a guard against a hang: the silent model never answers, so a cell that ends was interrupted
BOUND = 60.0

SETUP = """\
%load_ext lion_nb
import asyncio, json
from lion_nb import RunEnd, RunFailed, RunStart, current_session, iModel
from lion_nb.notebook.cell.handle_view import HandleView, set_view_factory
from lion_nb.notebook.cell.runner import running_wakers

async def sleepy(messages, **request):
    await asyncio.Event().wait()  # never set: only an interrupt or a Stop ends the turn
    return "the silent model answered"

silent = iModel(provider="offline", model="function", function=sleepy)
silent_cli = iModel(provider="offline_cli", model="scripted", delay=3600, turns=[[
    {"type": "system", "metadata": {"session_id": "quiet-1"}},
    {"type": "text", "content": "too late"},
    {"type": "result"},
]])
import lion_nb, os
PACKAGE = os.path.dirname(lion_nb.__file__) + os.sep

def lion_nb_task(task):
    # whether lion_nb's code is on the task's await chain
    coro = task.get_coro()
    while coro is not None:
        code = getattr(coro, "cr_code", None) or getattr(coro, "gi_code", None)
        if code is not None and code.co_filename.startswith(PACKAGE):
            return True
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return False

# not lion_nb's, though its repr says so (as a kernel's task does in a checkout named lion_nb)
bystander = asyncio.get_running_loop().create_task(asyncio.Event().wait(), name="in lion_nb/")
signals = []
for kind in (RunStart, RunEnd, RunFailed):
    current_session().observe(kind, lambda s: signals.append((s.branch_name, type(s).__name__)))

def report(branch):
    b = current_session().get_branch(branch)
    loop = asyncio.get_running_loop()
    print(json.dumps({
        "kinds": [m.kind for m in b.messages],
        "signals": [kind for name, kind in signals if name == branch],
        "wakers": running_wakers(),
        "pending": [
            repr(t)
            for t in asyncio.all_tasks(loop)
            if t is not asyncio.current_task() and lion_nb_task(t)
        ],
        "bystander_pending": not bystander.done(),
    }))
"""

STOP_SETUP = """\
pressed = []
checking = asyncio.Event()  # set by the check cell, once the quick turn has ended

async def press_stop(info):  # what a Stop button's comm handler does, on the kernel's loop
    while info.stop is None:  # the runner sets it once the turn's task exists
        await asyncio.sleep(0.05)
    if info.branch == "quick":
        await checking.wait()
    pressed.append(info.stop())

def view_with_stop(info):
    asyncio.get_running_loop().create_task(press_stop(info))
    return HandleView(info)

set_view_factory(view_with_stop)
"""

CELLS = [
    ("setup", SETUP),
    ("awaited", "%%lion -b quiet -m silent\nSay nothing for a while."),
    ("awaited-check", "report('quiet')\n1 + 1"),
    ("off", "%autoawait off"),
    ("fallback", "%%lion -b quiet_fb -m silent\nSay nothing for a while."),
    ("fallback-check", "report('quiet_fb')\n1 + 1"),
    ("on", "%autoawait on"),
    ("stop-setup", STOP_SETUP),
    ("stopped", "%%lion -b agent -m silent_cli\nRun for a while."),
    ("quick", "%%lion -b quick\nA quick answer."),
    (
        "stop-check",
        "checking.set()  # the quick turn's Stop is pressed now, while this cell runs\n"
        "while len(pressed) < 2:\n"
        "    await asyncio.sleep(0.05)\n"
        "set_view_factory(None)\n"
        "print(json.dumps({'pressed': pressed}))\n"
        "report('agent')\n"
        "bystander.cancel()",
    ),
]
INTERRUPTED = {"awaited", "fallback"}


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    if shutil.which("python") is None:  # pragma: no cover - the kernel needs an interpreter
        pytest.skip("no python on PATH")
    workdir = tmp_path_factory.mktemp("kernel-interrupt")
    nb = new_notebook(cells=[new_code_cell(source, id=cid) for cid, source in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    for cell in nb.cells:
        if cell.id in INTERRUPTED:
            cell.metadata["tags"] = ["raises-exception"]
    nbformat.validate(nb)
    client = CellIdClient(
        nb, timeout=2 * BOUND, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}
    )
    facts: dict[str, Any] = {}

    async def scenario() -> None:
        async with client.async_setup_kernel():
            client.send_with_cell_id()
            for i, cell in enumerate(nb.cells):
                started = time.monotonic()
                if cell.id not in INTERRUPTED:
                    await client.async_execute_cell(cell, i)
                    facts[f"{cell.id}_seconds"] = time.monotonic() - started
                    continue
                task = asyncio.ensure_future(client.async_execute_cell(cell, i))
                # the turn has shown its view, so it runs and waits on its silent model
                await until(lambda cell=cell: cell.outputs, what=f"{cell.id}: the turn's view")
                interrupted_at = time.monotonic()
                await client.km.interrupt_kernel()
                done, _ = await asyncio.wait({task}, timeout=BOUND)
                took = time.monotonic() - interrupted_at
                facts[f"{cell.id}_took"] = took if done else None  # None: it waited for the model
                await task

    asyncio.run(scenario())
    by_id = {cell.id: cell for cell in nb.cells}
    took = {k: facts[f"{k}_took"] for k in ("awaited", "fallback")}
    shown = {k: "no reply" if v is None else f"{v:.2f} s" for k, v in took.items()}
    print(
        f"\ninterrupt of a silent turn acted on after: awaited {shown['awaited']}, "
        f"%autoawait off {shown['fallback']}; the Stop cell took {facts['stopped_seconds']:.2f} s "
        "(Stop pressed once the turn ran)"
    )
    return by_id, facts


def _answers_two(cell: Any) -> None:
    results = [o for o in cell.outputs if o.get("output_type") == "execute_result"]
    assert results and results[-1]["data"]["text/plain"] == "2", cell.outputs


@pytest.mark.parametrize("cell_id", ["awaited", "fallback"])
def test_an_interrupt_ends_a_silent_turn_long_before_the_model_would(executed, cell_id):
    by_id, facts = executed
    assert facts[f"{cell_id}_took"] is not None, f"no reply within {BOUND} s of the interrupt"
    _interrupted(by_id[cell_id])
    check = by_id[f"{cell_id}-check"]
    _answers_two(check)  # the kernel answers the next cell
    kept = _json_line(check)
    assert kept["signals"] == ["RunStart", "RunFailed"]  # exactly one terminal signal
    assert kept["kinds"] == []  # an interrupted API turn records nothing (ADR-0021 D3)
    assert kept["wakers"] == 0  # no timer keeps waking the kernel between cells
    assert kept["pending"] == []  # lion_nb left no task behind ...
    assert kept["bystander_pending"] is True  # ... while the notebook's own task still runs


def test_stop_from_another_task_ends_a_foreground_turn_quietly(executed):
    by_id, _ = executed
    stopped = by_id["stopped"]  # the silent agent never ends a turn by itself
    assert not [o for o in stopped.outputs if o.get("output_type") == "error"], stopped.outputs
    kept = _json_line(by_id["stop-check"])
    assert kept["kinds"] == ["instruction"]  # a CLI run records its instruction first
    assert kept["signals"] == ["RunStart", "RunFailed"]
    assert kept["wakers"] == 0 and kept["pending"] == []


def test_a_stop_after_its_turn_ended_returns_false_and_cancels_nothing(executed):
    by_id, _ = executed
    quick = by_id["quick"]
    assert not [o for o in quick.outputs if o.get("output_type") == "error"], quick.outputs
    check = by_id["stop-check"]
    assert not [o for o in check.outputs if o.get("output_type") == "error"], check.outputs
    pressed = [line for line in _text(check).splitlines() if line.startswith('{"pressed"')]
    assert pressed and pressed[0] == '{"pressed": [true, false]}'  # the running turn, the ended one
