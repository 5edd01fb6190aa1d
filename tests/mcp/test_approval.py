"""Approval of tool calls: ``approve=`` on the tool, on connect_mcp and as the branch default.

Issue "a human in the loop" -> test
- a callable returning False: the MCP server never receives the call; the model gets a
  denial result, recorded on the branch -> test_denying_callable_keeps_the_call_from_the_server
- sync and async callables; the tool's policy wins over the branch default
    -> test_sync_and_async_callables_and_precedence
- "ask" calls the asker; "approve from now on" stops asking for that tool
    -> test_ask_with_an_asker_and_approve_from_now_on
- "approve from now on" holds on the branch where it was given, not on a clone's source
  (nor on a clone of it) -> test_approve_from_now_on_holds_on_its_branch_only
- "ask" with nobody to ask denies -> test_ask_without_an_asker_denies
- a failing approval callable denies (fails closed) -> test_a_failing_callable_denies
- cancelled while a person is asked: recorded as denied, the tool never ran
    -> test_cancelled_while_asking_is_recorded_as_denied
"""

from __future__ import annotations

import json

import anyio
import pytest

from lion_nb import Branch, Tool, iModel
from lion_nb.protocols.approval import ALWAYS, asking

CALLED: list[str] = []


def delete(path: str) -> str:
    """Delete a file."""
    CALLED.append(path)
    return f"deleted {path}"


@pytest.fixture(autouse=True)
def _clear():
    CALLED.clear()


def test_denying_callable_keeps_the_call_from_the_server(mcp_command, mcp_log):
    seen = []

    def policy(name, arguments):
        seen.append((name, arguments))
        return False

    model = iModel(
        provider="offline",
        model="scripted",
        responses=[
            {"tool_calls": [{"name": "record", "arguments": {"note": "secret plan"}}]},
            json.dumps({"analysis": "it was denied", "extension_needed": False}),
            "I could not record it.",
        ],
    )

    async def main():
        branch = Branch(chat_model=model)
        await branch.connect_mcp("notes", command=mcp_command, approve=policy)
        try:
            answer = await branch.ReAct({"instruction": "record"}, max_extensions=0)
        finally:
            await branch.aclose()
        return branch, answer

    branch, answer = anyio.run(main)
    assert seen == [("record", {"note": "secret plan"})]
    assert not mcp_log.exists()  # the server never received the call
    [response] = [m for m in branch.messages if m.kind == "action_response"]
    assert response.is_error
    assert "was denied and did not run" in response.output["denied"]
    assert response.metadata["approval"] == "denied by callable"
    assert response.metadata["mcp_server"] == "notes"
    # the model received the denial as the tool result
    sent = model.endpoint.calls[1]
    tool_messages = [m for m in sent.messages if m.get("role") == "tool"]
    assert "was denied" in json.dumps(tool_messages)
    assert answer == "I could not record it."


def test_sync_and_async_callables_and_precedence():
    async def allow(name, arguments):
        return arguments["path"].startswith("/tmp/")

    async def main():
        branch = Branch(tools=[Tool(delete, approve=allow)], approve=False)
        ok = await branch.act({"function": "delete", "arguments": {"path": "/tmp/a"}})
        no = await branch.act(
            {"function": "delete", "arguments": {"path": "/etc/passwd"}}, suppress_errors=True
        )
        branch.tools["delete"].approve = None  # now the branch default (False) applies
        default = await branch.act(
            {"function": "delete", "arguments": {"path": "/tmp/b"}}, suppress_errors=True
        )
        branch.approve = lambda name, arguments: True
        sync_ok = await branch.act({"function": "delete", "arguments": {"path": "/tmp/c"}})
        return ok[0], no[0], default[0], sync_ok[0]

    ok, no, default, sync_ok = anyio.run(main)
    assert ok.output == "deleted /tmp/a" and ok.metadata["approval"] == "approved by callable"
    assert no.is_error and "denied" in no.output and no.metadata["approval"] == "denied by callable"
    assert default.is_error and default.metadata["approval"] == "denied by policy"
    assert sync_ok.output == "deleted /tmp/c"
    assert CALLED == ["/tmp/a", "/tmp/c"]


def test_ask_with_an_asker_and_approve_from_now_on():
    asked = []

    async def asker(ask):
        asked.append((ask.tool, ask.arguments, ask.server))
        return ALWAYS if ask.arguments["path"] == "/tmp/1" else False

    async def main():
        branch = Branch(tools=[delete], approve="ask")
        with asking(asker):
            first = await branch.act({"function": "delete", "arguments": {"path": "/tmp/1"}})
            second = await branch.act({"function": "delete", "arguments": {"path": "/tmp/2"}})
        return branch, first[0], second[0]

    branch, first, second = anyio.run(main)
    assert asked == [("delete", {"path": "/tmp/1"}, None)]  # not asked the second time
    assert first.metadata["approval"] == "approved by user"
    assert second.output == "deleted /tmp/2"
    assert branch.tools["delete"] in branch.acts.approved
    assert branch.tools["delete"].approve is None  # the tool itself is unchanged
    assert CALLED == ["/tmp/1", "/tmp/2"]


def test_approve_from_now_on_holds_on_its_branch_only():
    asked = []

    async def asker(ask):
        asked.append((ask.call_id, ask.arguments["path"]))
        return ALWAYS if ask.arguments["path"].startswith("/clone") else False

    async def call(branch, path):
        [out] = await branch.act({"function": "delete", "arguments": {"path": path}})
        return out

    async def main():
        source = Branch(tools=[Tool(delete, approve="ask")])
        clone = source.clone()
        assert clone.tools["delete"] is source.tools["delete"]  # clones share tool objects
        with asking(asker):
            first = await call(clone, "/clone/1")  # approved from now on, on the clone
            again = await call(clone, "/clone/2")  # not asked
            source_call = await call(source, "/source/1")  # asked: denied
            grandchild = await call(clone.clone(), "/other/1")  # asked: denied
        return first, again, source_call, grandchild

    first, again, source_call, grandchild = anyio.run(main)
    assert [p for _, p in asked] == ["/clone/1", "/source/1", "/other/1"]
    assert not first.is_error and not again.is_error
    assert source_call.is_error and source_call.metadata["approval"] == "denied by user"
    assert grandchild.is_error
    assert CALLED == ["/clone/1", "/clone/2"]


def test_ask_without_an_asker_denies():
    async def main():
        branch = Branch(tools=[Tool(delete, approve="ask")])
        return (await branch.act({"function": "delete", "arguments": {"path": "x"}},
                                 suppress_errors=True))[0]  # fmt: skip

    response = anyio.run(main)
    assert response.is_error and "nobody was asked" in response.output["denied"]
    assert CALLED == []


def test_a_failing_callable_denies():
    def broken(name, arguments):
        raise RuntimeError("policy bug")

    async def main():
        branch = Branch(tools=[Tool(delete, approve=broken)])
        return (await branch.act({"function": "delete", "arguments": {"path": "x"}},
                                 suppress_errors=True))[0]  # fmt: skip

    response = anyio.run(main)
    assert "approval check failed (RuntimeError)" in response.output["denied"]
    assert CALLED == []


def test_cancelled_while_asking_is_recorded_as_denied():
    waiting = anyio.Event()

    async def asker(ask):
        waiting.set()
        await anyio.sleep_forever()

    async def main():
        branch = Branch(tools=[delete], approve="ask")
        async with anyio.create_task_group() as tg:

            async def turn():
                with asking(asker):
                    await branch.act({"function": "delete", "arguments": {"path": "x"}})

            tg.start_soon(turn)
            await waiting.wait()
            tg.cancel_scope.cancel()  # what Stop and the kernel interrupt do to a turn
        return branch

    branch = anyio.run(main)
    [response] = [m for m in branch.messages if m.kind == "action_response"]
    assert "denied" in response.output and "stopped before approval" in response.output["denied"]
    assert response.metadata["approval"].startswith("denied")
    assert CALLED == []


def test_invalid_policies_are_refused():
    with pytest.raises(TypeError, match="not an approval policy"):
        Tool(delete, approve="sometimes")
    with pytest.raises(TypeError, match="not an approval policy"):
        Branch(approve=3)
