"""The notebook tools in a real ipykernel (jupyter_client, no front end).

run_python runs on the kernel's main thread in the user's namespace; an endless loop is
stopped by the kernel's interrupt, keeps what it printed, and the kernel stays usable (the
time from the interrupt to the end of the run is printed, never asserted); a ``%%lion
--agent`` turn with nobody to see its card denies every run; a recorded call replayed from a
cassette asks again (denied with nobody there) unless the replay approves it explicitly.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.notebook.agent.kernel import Kernel, last_json, wait_for

pytestmark = pytest.mark.kernel

SETUP = """\
%load_ext lion_nb
import asyncio, json, threading
from lion_nb import Branch, iModel, notebook_tools
from lion_nb.widgets.turn import TurnWidget
TurnWidget.unseen_grace = 0.5  # no front end here: the card is seen by nobody
RUNS = []
def call(branch, code):
    return branch.act({"function": "run_python", "arguments": {"code": code}})
def show(response):
    print(json.dumps({"output": response.rendered, "meta": {k: v for k, v in response.metadata.items() if k != "images"},
                      "images": len(response.metadata.get("images", [])), "error": response.is_error}))
free = Branch(tools=notebook_tools(approve=True))
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    k = Kernel(str(tmp_path_factory.mktemp("agent-kernel")))
    try:
        k.run(SETUP)
        yield k
    finally:
        k.close()


def test_run_python_sees_and_changes_the_notebook_variables_on_the_main_thread(kernel):
    kernel.run("base = 40")
    code = "import threading\\nadded = base + 2\\nprint(threading.current_thread() is threading.main_thread())\\nadded"
    out = last_json(kernel.run(f'[r] = await call(free, "{code}"); show(r)'))
    assert "[stdout]\nTrue" in out["output"] and "[value]\n42" in out["output"]
    assert out["meta"]["names"] == {"created": ["added"], "changed": [], "deleted": []}
    assert kernel.run("print(added)").strip() == "42"


def test_a_frame_and_a_figure_come_back_as_content(kernel):
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    kernel.run(
        "import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's'], 'amount': [3.5, 7.25]})"
    )
    frame = last_json(kernel.run('[r] = await call(free, "sales"); show(r)'))
    assert (
        "DataFrame: 2 rows × 2 columns" in frame["output"] and "amount: float64" in frame["output"]
    )
    code = (
        "import matplotlib.pyplot as plt\\nplt.bar(sales.region, sales.amount)\\nplt.title('sales')"
    )
    figure = last_json(kernel.run(f'[r] = await call(free, "{code}"); show(r)'))
    assert figure["images"] == 1 and "[images] 1 image attached" in figure["output"]


def test_the_kernel_interrupt_stops_an_endless_loop_and_the_kernel_stays_usable(kernel, tmp_path):
    marker = tmp_path / "started"
    code = f"print('looping', flush=True)\\nopen({str(marker)!r}, 'w').close()\\nwhile True:\\n    pass"
    msg_id = kernel.send(f'[r] = await call(free, "{code}"); show(r)')
    wait_for(marker.exists, 60, "the loop to start")
    interrupted = time.monotonic()
    kernel.km.interrupt_kernel()
    text, error = kernel.wait(msg_id, timeout=60)
    took = time.monotonic() - interrupted
    print(f"\ninterrupt to the end of the run: {took:.3f} s")
    assert error is None, text
    out = last_json(text)
    assert out["meta"]["stopped"] == "interrupted"
    assert "[stdout]\nlooping" in out["output"] and "interrupted" in out["output"]
    assert kernel.run("print(1 + 1)").strip() == "2"  # the kernel goes on


def test_an_agent_turn_with_nobody_to_see_its_card_runs_nothing(kernel):
    script = json.dumps(
        [
            {"tool_calls": [{"name": "list_variables", "arguments": {}}]},
            {"tool_calls": [{"name": "run_python", "arguments": {"code": "RUNS.append(1)"}},
                            {"name": "run_python", "arguments": {"code": "RUNS.append(2)", "approve": True}}]},
            {"tool_calls": [{"name": "run_python", "arguments": {"code": "RUNS.append(3)"}}]},
            "Nothing ran: every run was denied.",
        ]
    )  # fmt: skip
    kernel.run(
        f"agent_model = iModel(provider='offline', model='scripted', responses=json.loads({script!r}))"
    )
    kernel.run("%%lion -b agent --agent -m agent_model -o agent_answer\nLook at the data.")
    facts = last_json(
        kernel.run(
            "from lion_nb import current_session\n"
            "b = current_session().get_branch('agent')\n"
            "print(json.dumps({'runs': RUNS, 'system': b.system.system_message[:40],"
            " 'approvals': [m.metadata.get('approval') for m in b.messages if m.kind == 'action_response'],"
            " 'answer': str(agent_answer)}))"
        )
    )
    assert facts["runs"] == []
    assert facts["approvals"] == [None, "denied by nobody", None, "denied by nobody"]
    assert facts["system"].startswith("You work inside the user's live Jupyter")
    assert facts["answer"] == "Nothing ran: every run was denied."


TOOL_CALL = {
    "id": "chatcmpl-agent",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "name": "run_python",
                            "arguments": '{"code": "RUNS.append(7)"}',
                        },
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
}

REPLAY = """\
RUNS.clear()
with cassette({tape!r}, mode="none"):
    b = Branch(chat_model=iModel(provider="openai", model="gpt-4o", base_url="http://127.0.0.1:9/v1",
                                 api_key="sk-test-0123456789"), tools=notebook_tools(approve={policy}))
    await b.operate("go", actions=True)
print(json.dumps({{"runs": RUNS, "approval": [m.metadata.get("approval") for m in b.messages
                                              if m.kind == "action_response"]}}))
"""


def test_a_replayed_call_asks_again_unless_the_replay_approves_it(kernel, tmp_path):
    from tests.fakes.http_server import FakeProvider

    tape = str(tmp_path / "agent.jsonl")
    with FakeProvider() as fake:
        fake.push_json(TOOL_CALL)
        recorded = kernel.run(
            # recording: CI forces every cassette to replay only (LION_NB_CASSETTE_MODE=none)
            "import os\nos.environ.pop('LION_NB_CASSETTE_MODE', None)\n"
            "from lion_nb.models.cassettes import cassette\nRUNS.clear()\n"
            f"with cassette({tape!r}, mode='all'):\n"
            f"    m = iModel(provider='openai', model='gpt-4o', base_url={fake.openai_url!r}, api_key='sk-test-0123456789')\n"
            "    await Branch(chat_model=m, tools=notebook_tools(approve=True)).operate('go', actions=True)\n"
            "print(RUNS)"
        )
    assert recorded.strip() == "[7]" and Path(tape).exists()
    asked = last_json(kernel.run(REPLAY.format(tape=tape, policy='"ask"')))
    assert asked == {"runs": [], "approval": ["denied by nobody"]}
    approved = last_json(kernel.run(REPLAY.format(tape=tape, policy="True")))
    assert approved == {"runs": [7], "approval": [None]}
