"""MCP tool calls in the views, and "ask" approval in the turn view (widget state).

Issue -> test
- tool calls from MCP show their server in the turn view, the SignalLog and BranchView
    -> test_the_server_shows_in_the_turn_view_signal_log_and_branch_view
- "ask" shows the call with Approve / Deny / always; the turn waits without blocking the
  loop; Approve runs it, Deny records the denial, Stop denies
    -> test_ask_in_the_turn_view_approve_deny_always, test_stop_while_asking_denies
"""

from __future__ import annotations

import asyncio

from lion_nb import ActionRequest, ActionResponse, Branch, Session
from lion_nb.protocols.approval import asking
from lion_nb.widgets import BranchView, SignalLog, TurnWidget

CALLED: list[str] = []


def wipe(path: str) -> str:
    """Wipe a path."""
    CALLED.append(path)
    return f"wiped {path}"


def _mcp_call():
    request = ActionRequest(function="record", arguments={"note": "x"})
    request.metadata["mcp_server"] = "notes"
    response = ActionResponse(
        function="record",
        arguments={"note": "x"},
        output="recorded x",
        action_request_id=str(request.id),
        metadata={"mcp_server": "notes"},
    )
    return request, response


def test_the_server_shows_in_the_turn_view_signal_log_and_branch_view():
    turn = TurnWidget("t")
    turn.start()
    request, response = _mcp_call()
    turn.message(request)
    turn.message(response)
    turn._throttle.flush()
    (step,) = turn.steps
    assert step["server"] == "notes" and step["function"] == "record"

    session = Session()
    branch = session.default_branch
    log = SignalLog(session)
    branch.msgs.add_message(action_request=request)
    branch.msgs.add_message(action_response=response)
    asyncio.run(branch._drain_signals())
    summaries = [row["summary"] for row in log.rows]
    assert any(s.startswith("action_request · notes:") for s in summaries), summaries
    assert any(s.startswith("action_response · notes:") for s in summaries), summaries

    view = BranchView(branch)
    (entry,) = [e for e in view.entries if e["kind"] == "action"]
    assert entry["server"] == "notes"
    assert "notes/record" in view.static_html()


def test_ask_in_the_turn_view_approve_deny_always():
    CALLED.clear()
    turn = TurnWidget("t")
    turn.start()

    async def main():
        branch = Branch(tools=[wipe], approve="ask")
        decisions = iter(["deny", "approve", "always"])
        shown = []

        async def click_when_asked():
            # the front end: wait for a new call to be shown, then click (a comm message)
            answered: set[str] = set()
            for _ in range(3):
                while not [a for a in turn.asks if a["id"] not in answered]:
                    await asyncio.sleep(0.01)
                ask = next(a for a in turn.asks if a["id"] not in answered)
                answered.add(ask["id"])
                shown.append((ask["tool"], ask["arguments"], turn.status))
                message = {"type": "approval", "id": ask["id"], "decision": next(decisions)}
                turn._on_front_end(turn, message, [])

        clicker = asyncio.create_task(click_when_asked())
        with asking(turn.ask):
            out = []
            for path in ("/a", "/b", "/c", "/d"):
                out += await branch.act(
                    {"function": "wipe", "arguments": {"path": path}}, suppress_errors=True
                )
        await clicker
        return branch, out, shown

    _branch, out, shown = asyncio.run(main())
    assert [s[0] for s in shown] == ["wipe"] * 3  # /d was not asked: approved from now on
    assert '"/a"' in shown[0][1] and shown[0][2] == "waiting for approval"
    assert out[0].is_error and out[0].metadata["approval"] == "denied by user"
    assert out[1].output == "wiped /b" and out[2].output == "wiped /c"
    assert out[3].output == "wiped /d" and "approval" not in out[3].metadata
    assert CALLED == ["/b", "/c", "/d"]
    assert turn.asks == [] and turn.status == "running"


def test_stop_while_asking_denies():
    CALLED.clear()

    async def main():
        branch = Branch(tools=[wipe], approve="ask")
        turn = TurnWidget("t")

        async def run_turn():
            with asking(turn.ask):
                await branch.act({"function": "wipe", "arguments": {"path": "/x"}})

        task = asyncio.create_task(run_turn())
        turn.start(stop=task.cancel)
        while not turn.asks:
            await asyncio.sleep(0.01)
        turn._on_front_end(turn, {"type": "stop"}, [])
        try:
            await task
        except asyncio.CancelledError:
            pass
        return branch, turn

    branch, turn = asyncio.run(main())
    [response] = [m for m in branch.messages if m.kind == "action_response"]
    assert "stopped before approval" in response.output["denied"]
    assert CALLED == [] and turn.asks == []
