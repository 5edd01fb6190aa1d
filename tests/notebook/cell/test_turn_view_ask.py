"""A ``%%lion`` turn shown as a widget asks its turn view about ``approve="ask"`` calls, in a
real in-process IPython shell (the turn runs in the background so the test can click).

Issue -> test
- "`ask` calls the asker in effect: a `%%lion` turn with a widget view sets it to the turn
  view, which shows Approve / Deny" -> test_a_widget_turn_asks_its_view_and_approve_runs_the_call
"""

from __future__ import annotations

import warnings

from lion_nb import current_session
from tests.notebook.nbshell import run

SETUP = """
import asyncio
from lion_nb import iModel, current_session
wiped = []
def wipe(path: str) -> str:
    '''Wipe a path.'''
    wiped.append(path)
    return f"wiped {path}"
asker = iModel(provider="offline", model="scripted", responses=[
    {"tool_calls": [{"name": "wipe", "arguments": {"path": "/a"}}]}, "Wiped /a."])
current_session().default_branch.approve = "ask"
"""


def test_a_widget_turn_asks_its_view_and_approve_runs_the_call(ip):
    from ipywidgets import Widget

    assert run(ip, SETUP).error is None
    assert run(ip, "%config LionMagics.live_view = 'widget'").error is None
    started = run(ip, "%%lion --bg -m asker -t wipe -o answer\nWipe /a.")
    assert started.error is None, started
    model_id = started.outputs[0].data["application/vnd.jupyter.widget-view+json"]["model_id"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        widget = Widget.widgets[model_id]
    ip.user_ns["turn"] = widget
    waited = run(ip, "while not turn.asks and turn.running:\n    await asyncio.sleep(0.01)")
    assert waited.error is None, waited
    [ask] = widget.asks  # the turn view asked; nobody to ask would have denied the call
    assert ask["tool"] == "wipe" and widget.status == "waiting for approval"
    widget._on_front_end(widget, {"type": "approval", "id": ask["id"], "decision": "approve"}, [])
    magics = ip.magics_manager.registry["LionMagics"]
    ip.user_ns["handle"] = list(magics.state.runs.values())[-1]
    done = run(ip, "await handle")
    assert done.error is None, done
    assert ip.user_ns["wiped"] == ["/a"] and ip.user_ns["answer"] == "Wiped /a."
    branch = current_session().default_branch
    [response] = [m for m in branch.messages if m.kind == "action_response"]
    assert response.output == "wiped /a" and response.metadata["approval"] == "approved by user"
