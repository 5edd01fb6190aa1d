"""``%%lion --agent`` in a real in-process IPython shell: the notebook tools for several rounds,
the system prompt, approval through the turn's view, and a branch's own policy kept."""

from __future__ import annotations

import json
from typing import Any

from lion_nb import current_session
from lion_nb.notebook.cell.handle_view import HandleView, set_view_factory
from lion_nb.protocols.approval import ALWAYS
from tests.notebook.nbshell import run


def _script(ip: Any, *responses: Any) -> None:
    ip.user_ns["script"] = json.dumps(list(responses))
    assert run(ip, "from lion_nb import iModel\nimport json\nRUNS = []\n"
                   "agent = iModel(provider='offline', model='scripted', responses=json.loads(script))").error is None  # fmt: skip


def _call(code: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "run_python", "arguments": {"code": code}}]}


def test_an_agent_turn_runs_rounds_of_tools_then_answers(ip):
    asked: list[str] = []

    class Asking(HandleView):
        async def ask(self, ask: Any) -> Any:
            asked.append(ask.tool)
            return ALWAYS  # "approve for this tool from now on"

    _script(
        ip,
        _call("RUNS.append(1)"),
        _call("RUNS.append(2)"),
        "Two runs.",
        _call("RUNS.append(3)"),
        "One more.",
    )
    set_view_factory(Asking)
    try:
        first = run(ip, "%%lion -b work --agent -m agent -o first\nWork.")
        second = run(ip, "%%lion -b work --agent -o second\nAgain.")
    finally:
        set_view_factory(None)
    assert first.error is None and second.error is None, (first, second)
    assert ip.user_ns["RUNS"] == [1, 2, 3]
    assert ip.user_ns["first"] == "Two runs." and ip.user_ns["second"] == "One more."
    assert asked == ["run_python"]  # asked once: "from now on" held across the turns
    branch = current_session().get_branch("work")
    assert branch.system.system_message.startswith("You work inside the user's live Jupyter")
    assert "run_python" not in branch.acts.registry  # the turn's tools only


def test_a_branchs_own_notebook_tools_keep_their_policy(ip):
    _script(ip, _call("RUNS.append('ran')"), "Done.")
    setup = (
        "from lion_nb import current_session, notebook_tools\n"
        "b = current_session().new_branch(name='mine', chat_model=agent)\n"
        "b.acts.register_tools(notebook_tools(approve=lambda tool, arguments: 'RUNS' in arguments['code']))"
    )
    assert run(ip, setup).error is None
    turn = run(ip, "%%lion -b mine --agent\nGo.")
    assert turn.error is None, turn
    assert ip.user_ns["RUNS"] == ["ran"]  # nobody to ask here: the branch's policy decided


def test_with_nobody_to_ask_an_agent_turn_runs_nothing(ip):
    _script(ip, _call("RUNS.append(1)"), "Denied.")
    turn = run(ip, "%%lion -b idle --agent -m agent\nGo.")
    assert turn.error is None, turn
    assert ip.user_ns["RUNS"] == []
    [response] = [
        m for m in current_session().get_branch("idle").messages if m.kind == "action_response"
    ]
    assert response.metadata["approval"] == "denied by nobody"
