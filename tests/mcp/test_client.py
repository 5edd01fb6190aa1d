"""The MCP client against the fake server run as a real process (stdio and streamable HTTP).

Issue "Tools from MCP servers" acceptance -> test
- a ReAct turn with a scripted model calls a server tool; the side effect happened once and
  the result is on the branch -> test_react_turn_calls_a_stdio_server_tool_once,
  test_http_server_tool_with_secret_headers
- the server's tools become the branch's, with schemas and descriptions; a colliding name is
  prefixed -> test_tools_keep_schema_and_description_and_collisions_are_prefixed
- resources and prompts are listed and read -> test_resources_and_prompts
- a server that exits mid-call, never answers, or answers malformed: a tool error, the turn
  goes on, the next call restarts it once -> test_crash_hang_and_malformed_are_tool_errors,
  test_restart_happens_once
- stopped on remove and close; a command that does not start is a clear error
  -> test_session_close_stops_servers, test_a_command_that_does_not_start
- headers never appear in reprs, describe or errors -> test_http_server_tool_with_secret_headers
"""

from __future__ import annotations

import json
import sys

import anyio
import pytest

from lion_nb import Branch, MCPError, Session, iModel
from tests.fakes.mcp_fixtures import TOKEN, children, server_command

pytestmark = pytest.mark.timeout(180)


def _scripted(*calls, final="done"):
    """A model that asks for ``calls`` in one round, then analyses and answers."""
    responses = [{"tool_calls": [{"name": n, "arguments": a} for n, a in calls]}]
    responses.append(json.dumps({"analysis": "the tool answered", "extension_needed": False}))
    responses.append(final)
    return iModel(provider="offline", model="scripted", responses=responses)


def test_react_turn_calls_a_stdio_server_tool_once(mcp_command, mcp_log):
    async def main():
        branch = Branch(chat_model=_scripted(("record", {"note": "hello"})))
        server = await branch.connect_mcp("notes", command=mcp_command)
        try:
            answer = await branch.ReAct({"instruction": "note hello"}, max_extensions=0)
        finally:
            await branch.aclose()
        return branch, server, answer

    branch, server, answer = anyio.run(main)
    assert answer == "done"
    assert mcp_log.read_text().splitlines() == ["hello"]
    responses = [m for m in branch.messages if m.kind == "action_response"]
    assert [(r.function, r.output, r.is_error) for r in responses] == [
        ("record", "recorded hello", False)
    ]
    assert responses[0].metadata["mcp_server"] == "notes"
    requests = [m for m in branch.messages if m.kind == "action_request"]
    assert requests[0].metadata["mcp_server"] == "notes"
    assert server.status == "closed" and "record" not in branch.tools
    assert server.calls == 1


def test_tools_keep_schema_and_description_and_collisions_are_prefixed(mcp_command):
    def add(x: str) -> str:
        """A local add."""
        return x

    async def main():
        branch = Branch(tools=[add])
        await branch.connect_mcp("calc", command=mcp_command)
        try:
            schema = branch.acts.get_tool_schema("calc_add")[0]["function"]
            local = branch.tools["add"]
            out = await branch.act({"function": "calc_add", "arguments": {"a": 2, "b": 5}})
            return schema, local, out, sorted(branch.tools)
        finally:
            await branch.aclose()

    schema, local, out, names = anyio.run(main)
    assert schema["description"] == "Add two whole numbers."
    assert schema["parameters"]["required"] == ["a", "b"]
    assert schema["parameters"]["properties"]["a"]["type"] == "integer"
    assert local.description == "A local add."
    assert out[0].output == "7" and not out[0].is_error
    assert {"add", "calc_add", "record", "crash", "hang"} <= set(names)


def test_resources_and_prompts(mcp_command):
    async def main():
        branch = Branch()
        server = await branch.connect_mcp("docs", command=mcp_command)
        try:
            resources = await server.list_resources()
            text = await server.read_text("note://readme")
            prompts = await server.list_prompts()
            prompt = await server.prompt_text("summarize", {"topic": "cats"})
            return resources, text, prompts, prompt
        finally:
            await branch.aclose()

    resources, text, prompts, prompt = anyio.run(main)
    assert [str(r.uri) for r in resources] == ["note://readme"]
    assert text == "The fake server's readme."
    assert [p.name for p in prompts] == ["summarize"]
    assert prompt == "Summarize cats in one sentence."


def test_crash_hang_and_malformed_are_tool_errors(mcp_command, mcp_log):
    async def main():
        branch = Branch()
        server = await branch.connect_mcp("flaky", command=mcp_command, timeout=3)
        outs = {}
        try:
            # each failure is a tool error and the turn goes on: a hung or crashed server is
            # restarted at the next call (which then succeeds)
            for name in ("malformed", "hang", "add", "crash", "fail"):
                arguments = {"a": 1, "b": 2} if name == "add" else {}
                [outs[name]] = await branch.act(
                    {"function": name, "arguments": arguments}, suppress_errors=True
                )
            [outs["record"]] = await branch.act({"function": "record", "arguments": {"note": "x"}})
            return server, outs, children()
        finally:
            await branch.aclose()

    before = children()
    _server, outs, during = anyio.run(main)
    assert "malformed result" in outs["malformed"].output["error"]
    assert "did not answer" in outs["hang"].output["error"]
    assert "within 3 s" in outs["hang"].output["error"]
    assert "restarted at the next call" in outs["hang"].output["error"]
    assert outs["add"].output == "3" and not outs["add"].is_error
    assert "restarted at the next call" in outs["crash"].output["error"]
    assert "Error executing tool fail" in outs["fail"].output["error"]
    assert all(outs[n].is_error for n in ("malformed", "hang", "crash", "fail"))
    assert outs["record"].output == "recorded x" and not outs["record"].is_error
    assert mcp_log.read_text().splitlines() == ["x"]
    assert len(during - before) == 1  # one live server, the restarted one
    assert children() == before


def test_restart_happens_once(mcp_command):
    async def main():
        branch = Branch()
        await branch.connect_mcp("dies", command=mcp_command)
        try:
            first = await branch.act({"function": "crash", "arguments": {}}, suppress_errors=True)
            second = await branch.act({"function": "crash", "arguments": {}}, suppress_errors=True)
            third = await branch.act(
                {"function": "add", "arguments": {"a": 1, "b": 1}}, suppress_errors=True
            )
            return first[0], second[0], third[0], branch.mcp_servers["dies"].status
        finally:
            await branch.aclose()

    first, second, third, status = anyio.run(main)
    assert "restarted at the next call" in first.output["error"]
    assert second.is_error  # ran on the restarted server, which crashed again
    assert "failed again after a restart" in third.output["error"]
    assert status == "failed"


def test_http_server_tool_with_secret_headers(mcp_http):
    url, log = mcp_http

    async def main():
        branch = Branch(chat_model=_scripted(("record", {"note": "over http"})))
        server = await branch.connect_mcp(
            "web", url=url, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        try:
            await branch.ReAct({"instruction": "note"}, max_extensions=0)
        finally:
            await branch.aclose()
        refused = None
        try:
            await Branch().connect_mcp("web", url=url, headers={"Authorization": "Bearer no"})
        except MCPError as exc:
            refused = exc
        return branch, server, refused

    branch, server, refused = anyio.run(main)
    assert log.read_text().splitlines() == ["over http"]
    shown = " ".join(
        [repr(server), json.dumps(server.describe()), json.dumps(branch.to_dict(mode="json"))]
    )
    assert TOKEN not in shown
    assert refused is not None and "did not start" in str(refused)
    assert "Bearer" not in str(refused)


def test_session_close_stops_servers(mcp_command):
    async def main():
        session = Session()
        first = session.default_branch
        await session.connect_mcp("shared", command=mcp_command)
        late = session.new_branch(name="late")
        has = ("add" in first.tools, "add" in late.tools)
        [out] = await late.act({"function": "add", "arguments": {"a": 2, "b": 2}})
        during = children()
        await session.aclose()
        return has, out, during, session

    before = children()
    has, out, during, session = anyio.run(main)
    assert has == (True, True)
    assert out.output == "4"
    assert len(during - before) == 1  # one process for the whole session
    assert children() == before
    assert session.mcp_servers == {} and "add" not in session.default_branch.tools


def test_a_command_that_does_not_start(tmp_path):
    async def main(command):
        try:
            await Branch().connect_mcp("broken", command=command, timeout=5)
        except MCPError as exc:
            return str(exc)
        return None

    missing = anyio.run(main, [str(tmp_path / "no-such-server")])
    assert "did not start" in missing and "cannot be run" in missing
    exits = anyio.run(main, server_command(None, "--exit-at-start"))
    assert "did not start" in exits and "refusing to start" in exits


def test_bad_arguments_are_clear():
    async def main(**kw):
        await Branch().connect_mcp(**kw)

    with pytest.raises(ValueError, match="either `command"):
        anyio.run(lambda: main(name="x"))
    with pytest.raises(ValueError, match="not a valid MCP server name"):
        anyio.run(lambda: main(name="a b", command=[sys.executable]))
    with pytest.raises(TypeError, match="not an approval policy"):
        anyio.run(lambda: main(name="x", command=[sys.executable], approve="maybe"))
