"""The turn view's Stop while the model's code runs, in a real ipykernel (jupyter_client).

A ``%%lion --agent`` turn runs an endless loop through ``run_python``. Stop is pressed as
the front end presses it: the widget's ``{"type": "stop"}`` message over the shell channel
to its comm -- which the kernel cannot read while the loop holds its thread -- and, because
the view says code is running (``code_running``), the kernel's interrupt. The loop ends, the
run is recorded as stopped by the user with what it printed, the turn ends without another
round and its cell ends quietly, and the kernel answers the next cell. The time from the
Stop to the cell's end is printed, never asserted.
"""

from __future__ import annotations

import json
import queue
import time
from pathlib import Path

import pytest

from tests.notebook.agent.kernel import Kernel, last_json

pytestmark = pytest.mark.kernel

SETUP = """\
%load_ext lion_nb
%config LionMagics.live_view = "widget"
import json
from lion_nb import current_session, iModel, notebook_tools
LOOP = "print('looping', flush=True)\\nopen('looping', 'w').close()\\nwhile True:\\n    pass"
looper = iModel(provider="offline", model="scripted", responses=[
    {"tool_calls": [{"name": "run_python", "arguments": {"code": LOOP}}]},
    "the model went on after the Stop",
])
loop_branch = current_session().new_branch(name="loop", chat_model=looper)
loop_branch.acts.register_tools(notebook_tools(approve=True))
"""

FACTS = """\
b = current_session().get_branch("loop")
print(json.dumps({
    "kinds": [m.kind for m in b.messages],
    "responses": [(m.metadata.get("stopped"), m.rendered) for m in b.messages if m.kind == "action_response"],
    "answers": [m.rendered for m in b.messages if m.kind == "assistant_response"],
}))
"""


@pytest.fixture
def kernel(tmp_path):
    k = Kernel(str(tmp_path))  # the loop's marker file is made in this folder
    try:
        k.run(SETUP)
        yield k
    finally:
        k.close()


def _press_stop_while_code_runs(
    kernel: Kernel, msg_id: str, marker: Path, timeout: float = 90
) -> dict:
    """Wait for the turn view to say code runs and the loop to start (its ``marker`` file);
    press Stop as the front end does; return what the cell showed (``stop``: the time the
    press was sent)."""
    kc = kernel.kc
    seen = {"comm": None, "error": None, "stop": None, "idle": None}
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            msg = kc.get_iopub_msg(timeout=0.05)
        except queue.Empty:
            msg = {"msg_type": "", "content": {}, "parent_header": {}}
        kind, content = msg["msg_type"], msg["content"]
        if kind == "comm_msg" and content.get("data", {}).get("state", {}).get("code_running"):
            seen["comm"] = content["comm_id"]
        if msg["parent_header"].get("msg_id") == msg_id:
            if kind == "error":
                seen["error"] = f"{content['ename']}: {content['evalue']}"
            elif kind == "status" and content["execution_state"] == "idle":
                seen["idle"] = time.monotonic()
                return seen
        if seen["comm"] and seen["stop"] is None and marker.exists():
            data = {"method": "custom", "content": {"type": "stop"}}
            kc.shell_channel.send(
                kc.session.msg("comm_msg", {"comm_id": seen["comm"], "data": data})
            )
            kernel.km.interrupt_kernel()  # what Stop adds while code runs
            seen["stop"] = time.monotonic()
    raise TimeoutError(f"the turn's cell did not end in {timeout} s: {seen}")


def test_stop_ends_the_running_code_and_the_turn_and_the_kernel_answers(kernel, tmp_path):
    msg_id = kernel.send("%%lion -b loop --agent\nRun the loop.")
    seen = _press_stop_while_code_runs(kernel, msg_id, tmp_path / "looping")
    assert seen["stop"] is not None, "the view never said code was running"
    print(f"\nStop to the end of the turn's cell: {seen['idle'] - seen['stop']:.3f} s")
    facts = last_json(kernel.run(FACTS))
    assert seen["error"] is None, facts  # a Stop ends its turn quietly: no RunInterrupted
    [(stopped, rendered)] = facts["responses"]
    assert stopped == "stopped"
    assert "[stdout]\nlooping" in rendered and "the user stopped the turn" in rendered
    assert "the model went on after the Stop" not in json.dumps(facts["answers"])
    assert kernel.run("print(6 * 7)").strip() == "42"  # the kernel goes on
