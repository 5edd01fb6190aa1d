"""``notebooks/lion_kernel.ipynb`` executed in a real ipykernel through nbclient.

The client sends each cell's id in the execute request's metadata (``cellId``), as JupyterLab
does, so that re-running a cell is recognised. One cell is executed twice (the re-run), and
the kernel is interrupted with ``interrupt_kernel()`` while a long CLI run streams: once in
a ``%%lion`` cell (an awaited turn) and once in an indented ``%lion ask`` (the synchronous
fallback). A ``%%lion --bg`` cell's body is its instruction, so its handle is awaited by the
next cell (``%lion ask --bg`` is awaited in the same cell).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.kernel

NOTEBOOK = Path(__file__).parent / "notebooks" / "lion_kernel.ipynb"


class CellIdClient(NotebookClient):
    """Sends ``metadata.cellId`` with every execute request, like JupyterLab."""

    current_cell_id: str | None = None

    async def async_execute_cell(
        self, cell: Any, cell_index: int, *args: Any, **kwargs: Any
    ) -> Any:
        self.current_cell_id = cell.get("id")
        return await super().async_execute_cell(cell, cell_index, *args, **kwargs)

    def send_with_cell_id(self) -> None:
        kc = self.kc

        def execute(
            code,
            silent=False,
            store_history=True,
            user_expressions=None,
            allow_stdin=None,
            stop_on_error=True,
        ):
            content = {
                "code": code,
                "silent": silent,
                "store_history": store_history,
                "user_expressions": user_expressions or {},
                "allow_stdin": False,
                "stop_on_error": stop_on_error,
            }
            msg = kc.session.msg(
                "execute_request", content, metadata={"cellId": self.current_cell_id}
            )
            kc.shell_channel.send(msg)
            return msg["header"]["msg_id"]

        kc.execute = execute


def _text(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


def _json_line(cell: Any) -> Any:
    lines = [line for line in _text(cell).splitlines() if line.startswith(("{", "["))]
    assert lines, f"cell {cell.id} printed no JSON: {cell.outputs}"
    return json.loads(lines[-1])


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    if shutil.which("python") is None:  # pragma: no cover - the kernel needs an interpreter
        pytest.skip("no python on PATH")
    workdir = tmp_path_factory.mktemp("kernel-nb")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = CellIdClient(
        nb, timeout=90, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}
    )
    by_id = {cell.id: (i, cell) for i, cell in enumerate(nb.cells)}
    facts: dict[str, Any] = {}

    async def scenario() -> None:
        async with client.async_setup_kernel():
            client.send_with_cell_id()
            for i, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                loop = asyncio.get_running_loop()
                if cell.id in ("interrupt", "interrupt-fallback"):
                    task = asyncio.ensure_future(client.async_execute_cell(cell, i))
                    await asyncio.sleep(2.5)  # the run streams for ~18 s
                    interrupted_at = loop.time()
                    await client.km.interrupt_kernel()
                    await asyncio.wait_for(task, 30)
                    facts[f"{cell.id}_took"] = loop.time() - interrupted_at
                    continue
                started = loop.time()
                await client.async_execute_cell(cell, i)
                facts[f"{cell.id}_seconds"] = loop.time() - started
                if cell.id == "rerun":
                    facts["first_run_outputs"] = [dict(o) for o in cell.outputs]
                    cell.source = cell.source.replace("Remember", "Remember again:")
                    await client.async_execute_cell(cell, i)

    asyncio.run(scenario())
    return by_id, facts


def test_structured_output_is_bound_and_shown_as_json(executed):
    by_id, _ = executed
    _, cell = by_id["structured"]
    shown = [o for o in cell.outputs if "application/json" in o.get("data", {})]
    assert shown and set(shown[-1]["data"]["application/json"]) == {"title", "points"}
    facts = _json_line(by_id["structured-check"][1])
    assert facts == {"type": "Summary", "points": facts["points"], "out_is_summary": True}


def test_tools_from_notebook_functions_are_called(executed):
    by_id, _ = executed
    facts = _json_line(by_id["tools-check"][1])
    assert facts["calls"], "the notebook function was not called"
    assert "action_request" in facts["kinds"] and "action_response" in facts["kinds"]


def test_cli_run_through_offline_cli(executed):
    by_id, _ = executed
    facts = _json_line(by_id["cli-check"][1])
    assert facts["kinds"][0] == "instruction"
    assert {"action_request", "action_response", "assistant_response"} <= set(facts["kinds"])
    assert facts["session"] == "nb-session-1"
    shown = json.dumps([o.get("data", {}) for o in by_id["cli"][1].outputs])
    assert "The file has one row." in shown


def test_rerunning_a_cell_forks_the_branch(executed):
    by_id, facts = executed
    branches = _json_line(by_id["rerun-check"][1])
    assert set(branches) == {"notes", "notes~1"}
    assert len(branches["notes"]) == 1 and branches["notes"][0].startswith("Remember again:")
    assert len(branches["notes~1"]) == 1 and branches["notes~1"][0].startswith(
        "Remember the report"
    )
    assert '"{summary.title}"' not in branches["notes"][0]  # interpolated from the kernel
    shown = json.dumps([o.get("data", {}) for o in by_id["rerun"][1].outputs])
    assert "notes~1" in shown  # the re-run says where the earlier turn is kept
    assert "re-run" not in json.dumps(facts["first_run_outputs"])  # the first run was plain


def test_background_run_awaited_in_the_same_cell(executed):
    by_id, _ = executed
    cell = by_id["background"][1]
    assert "kernel free True" in _text(cell)
    facts = _json_line(cell)
    assert facts["status"] == "done" and facts["result"].startswith("Offline model")
    assert facts["returned_after"] < 0.5 < facts["total"]


def test_a_background_cell_returns_at_once_and_its_handle_is_awaited(executed):
    by_id, facts = executed
    assert by_id["bg-cell"][1].get("outputs") is not None
    assert not [o for o in by_id["bg-cell"][1].outputs if o.get("output_type") == "error"]
    run = _json_line(by_id["bg-cell-await"][1])
    assert run["type"] == "RunHandle" and run["waiting"] == "running"  # the cell did not wait
    assert run["status"] == "done" and run["result"].startswith("Offline model")
    assert run["bound"] is True  # `-o river_answer` holds the result
    assert facts["bg-cell_seconds"] < run["elapsed"]


def _interrupted(cell: Any) -> None:
    errors = [o for o in cell.outputs if o.get("output_type") == "error"]
    assert errors and errors[-1]["ename"] == "RunInterrupted", cell.outputs
    assert len(errors[-1]["traceback"]) == 1  # one line, no traceback


def _partial(answer: str) -> None:
    assert answer.startswith("part 0 part 1 "), answer  # what arrived before the interrupt
    assert "part 59" not in answer  # ... and no more: the run was cut short


def test_interrupt_cancels_the_run_cleanly_and_the_kernel_answers_afterwards(executed):
    by_id, facts = executed
    _interrupted(by_id["interrupt"][1])
    assert facts["interrupt_took"] < 10  # not the full ~18 s run
    after = by_id["after"][1]
    kept = _json_line(after)
    assert kept["kinds"] == ["instruction", "assistant_response"]
    _partial(kept["partial"])
    results = [o for o in after.outputs if o.get("output_type") == "execute_result"]
    assert results and results[-1]["data"]["text/plain"] == "2"
    signals = _json_line(by_id["signals"][1])
    assert signals[0] == "RunStart" and len(signals) == 2  # exactly one terminal signal


def test_interrupt_on_the_synchronous_fallback_is_as_clean(executed):
    by_id, facts = executed
    _interrupted(by_id["interrupt-fallback"][1])
    assert facts["interrupt-fallback_took"] < 10
    kept = _json_line(by_id["fallback-check"][1])  # the kernel answers afterwards
    assert kept["kinds"] == ["instruction", "assistant_response"]
    _partial(kept["partial"])
    assert kept["signals"] == ["RunStart", "RunFailed"]  # exactly one terminal signal
    assert kept["pending"] == []  # the run's task is over
    assert kept["nest_asyncio"] is False  # the kernel's loop was never patched
