"""``%%lion -m acp:offline``: a coding agent's permission requests on the turn view's card,
with the agent's own options, in a real in-process IPython shell against the bundled ACP
agent run as a subprocess (the turn runs in the background so the test can click).

Issue -> test
- "`%%lion -m acp:NAME`"; "permission requests become the approval card (allow once / always,
  reject once / always, as the agent offers them)"
    -> test_an_acp_turn_asks_its_view_with_the_agents_options
- "`session/cancel` on Stop ..., keeping what arrived"
    -> test_stop_in_the_turn_view_cancels_the_agents_turn_and_keeps_its_text
"""

from __future__ import annotations

import warnings

import pytest

from lion_nb import current_session
from tests.notebook.nbshell import run

pytestmark = pytest.mark.timeout(120)

WAIT = "while not turn.asks and turn.running:\n    await asyncio.sleep(0.01)"


def test_an_acp_turn_asks_its_view_with_the_agents_options(ip, tmp_path, monkeypatch):
    from ipywidgets import Widget

    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("# Shell demo\n", encoding="utf-8")
    assert run(ip, "import asyncio").error is None
    assert run(ip, "%config LionMagics.live_view = 'widget'").error is None
    started = run(ip, "%%lion --bg -m acp:offline -o answer\nLook at README.md")
    assert started.error is None, started
    model_id = started.outputs[0].data["application/vnd.jupyter.widget-view+json"]["model_id"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        widget = Widget.widgets[model_id]
    ip.user_ns["turn"] = widget
    assert run(ip, WAIT).error is None
    [ask] = widget.asks
    assert ask["tool"] == "python --version" and ask["server"] == "acp/offline"
    assert [o["kind"] for o in ask["options"]] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    assert widget.answer(ask["id"], "option:allow_once")
    ip.user_ns["first"] = ask["id"]
    next_ask = "while turn.running and [a['id'] for a in turn.asks] in ([], [first]):\n"
    assert run(ip, next_ask + "    await asyncio.sleep(0.01)").error is None
    [write] = widget.asks  # the write, with its diff, before it happens
    assert "+# Notes" in write["arguments"] and not (tmp_path / "notes.md").exists()
    assert widget.answer(write["id"], "option:allow_once")
    magics = ip.magics_manager.registry["LionMagics"]
    ip.user_ns["handle"] = list(magics.state.runs.values())[-1]
    done = run(ip, "await handle")
    assert done.error is None, done
    assert "turn 1 of this session" in ip.user_ns["answer"]
    assert (tmp_path / "notes.md").read_text().startswith("# Notes")
    branch = current_session().default_branch
    outcomes = [
        m.output["outcome"]
        for m in branch.messages
        if m.kind == "action_response" and m.function == "permission"
    ]
    assert outcomes == ["allow_once", "allow_once"]
    magics.state.stop_agents()
    assert not any(m.endpoint.running for m, _ in magics.state.models.values())


def test_stop_in_the_turn_view_cancels_the_agents_turn_and_keeps_its_text(
    ip, tmp_path, monkeypatch
):
    from ipywidgets import Widget

    monkeypatch.chdir(tmp_path)
    assert run(ip, "import asyncio").error is None
    assert run(ip, "%config LionMagics.live_view = 'widget'").error is None
    started = run(ip, "%%lion --bg -m acp:offline\nquick wait")
    assert started.error is None, started
    model_id = started.outputs[0].data["application/vnd.jupyter.widget-view+json"]["model_id"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        widget = Widget.widgets[model_id]
    ip.user_ns["turn"] = widget
    wait = (
        "while 'Waiting' not in turn.streamed_text and turn.running:\n    await asyncio.sleep(0.01)"
    )
    assert run(ip, wait).error is None
    magics = ip.magics_manager.registry["LionMagics"]
    [(model, _)] = list(magics.state.models.values())
    pid = model.endpoint.pid
    assert widget.stop()  # the Stop button
    ip.user_ns["handle"] = list(magics.state.runs.values())[-1]
    run(ip, "try:\n    await handle\nexcept BaseException:\n    pass")
    branch = current_session().default_branch
    [kept] = [m for m in branch.messages if m.kind == "assistant_response" and m.response]
    assert kept.response == "Waiting to be stopped. " and kept.metadata["incomplete"] is True
    assert widget.status.startswith("stopped")
    # the agent ended its turn as cancelled and is kept: the next turn says so
    assert run(ip, "%%lion -m acp:offline -o again\nquick next").error is None
    assert "Cancelled turns: 1." in ip.user_ns["again"]
    assert model.endpoint.pid == pid
    magics.state.stop_agents()
