"""MCP servers through cassettes: a recording against the fake stdio server (a real process)
replays with the server's command made unusable.

Issue acceptance -> test
- a recorded run replays without the server: the same tools (schemas), results and branch
  records; the server's side effect happened once, while recording
    -> test_a_recorded_run_replays_without_the_server
- ``none`` with a changed argument fails naming the server, the tool and the field
    -> test_none_with_a_changed_argument_names_server_tool_and_field
- a server whose tools were not recorded is not started under ``none``
    -> test_none_without_a_recorded_tool_list_names_the_server
- ``new`` starts the server for a call with no recording and appends it
    -> test_new_starts_the_server_for_a_call_with_no_recording
- resources and prompts replay too -> test_a_recorded_run_replays_without_the_server
- a hand-edited line fails on opening naming its field -> test_a_hand_edited_line_is_named
"""

from __future__ import annotations

import json

import anyio
import pytest

from lion_nb import Branch, iModel
from lion_nb.models.cassettes import CassetteError, cassette
from tests.fakes.mcp_fixtures import children, server_command
from tests.models.cassette_support import snapshot

pytestmark = pytest.mark.timeout(180)

UNUSABLE = ["/nonexistent/lion-nb-mcp-server"]  # no such command: a start would fail


def _records(branch):
    """The branch's records without ids and timestamps -- the offline model's ``created``
    (the second its answer was made) included."""

    def walk(value):
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items() if k != "created"}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(snapshot(branch))


def _scripted(*calls):
    responses = [{"tool_calls": [{"name": n, "arguments": a} for n, a in calls]}]
    responses.append(json.dumps({"analysis": "the tools answered", "extension_needed": False}))
    responses.append("done")
    return iModel(provider="offline", model="scripted", responses=responses)


async def _session(command, note="hello"):
    """A ReAct turn calling two tools of the server, then a resource and a prompt."""
    branch = Branch(chat_model=_scripted(("record", {"note": note}), ("add", {"a": 2, "b": 3})))
    server = await branch.connect_mcp("fake", command=command)
    try:
        schemas = [branch.tools[n].schema for n in sorted(branch.tools)]
        await branch.ReAct({"instruction": "note it and add"}, max_extensions=0)
        readme = await server.read_text("note://readme")
        prompt = await server.prompt_text("summarize", {"topic": "cassettes"})
        listed = ([str(r.uri) for r in await server.list_resources()], server.replaying)
    finally:
        await branch.aclose()
    return branch, schemas, (readme, prompt, listed)


def test_a_recorded_run_replays_without_the_server(mcp_command, mcp_log, tmp_path):
    path = tmp_path / "mcp.jsonl"
    with cassette(path):
        recorded, schemas, extras = anyio.run(_session, mcp_command)
    assert mcp_log.read_text().splitlines() == ["hello"]
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert {x["kind"] for x in lines} == {"mcp"}
    assert lines[0]["request"]["method"] == "tools/list"
    assert extras[2] == (["note://readme"], False)

    before = children()
    with cassette(path, mode="none") as tape:
        replayed, schemas_again, extras_again = anyio.run(_session, UNUSABLE)
    assert children() == before  # nothing was started
    assert mcp_log.read_text().splitlines() == ["hello"]  # the side effect happened once
    assert tape.recorded == 0 and tape.replayed == len(lines)
    assert schemas_again == schemas
    assert (
        extras_again[:2]
        == extras[:2]
        == (
            "The fake server's readme.",
            "Summarize cassettes in one sentence.",
        )
    )
    assert extras_again[2] == (["note://readme"], True)
    assert _records(replayed) == _records(recorded)
    outputs = [m.output for m in replayed.messages if m.kind == "action_response"]
    assert outputs == ["recorded hello", "5"]


def test_none_with_a_changed_argument_names_server_tool_and_field(mcp_command, tmp_path):
    path = tmp_path / "mcp.jsonl"
    with cassette(path):
        anyio.run(_session, mcp_command)

    async def changed():
        branch = Branch()
        server = await branch.connect_mcp("fake", command=UNUSABLE)
        try:
            with pytest.raises(CassetteError) as raised:
                await server.call_tool("record", {"note": "goodbye"})
            [response] = await branch.act({"function": "record", "arguments": {"note": "goodbye"}})
        finally:
            await branch.aclose()
        return str(raised.value), response

    with cassette(path, mode="none"):
        message, response = anyio.run(changed)
    assert "the call of tool `record` on MCP server `fake`" in message
    assert 'arguments.note: recorded "hello", now "goodbye"' in message
    assert "mode `none`" in message and "make sure the server can start" in message
    # inside a turn the miss is the call's error result, which names the same field
    assert response.is_error and "arguments.note" in response.output["error"]


def test_none_without_a_recorded_tool_list_names_the_server(mcp_command, tmp_path):
    path = tmp_path / "mcp.jsonl"
    with cassette(path):
        anyio.run(_session, mcp_command)

    async def other():
        await Branch().connect_mcp("elsewhere", command=UNUSABLE)

    before = children()
    with cassette(path, mode="none"), pytest.raises(CassetteError) as raised:
        anyio.run(other)
    message = str(raised.value)
    assert "the tool list of MCP server `elsewhere`" in message
    assert 'server: recorded "fake", now "elsewhere"' in message
    assert children() == before


def test_new_starts_the_server_for_a_call_with_no_recording(mcp_command, mcp_log, tmp_path):
    path = tmp_path / "mcp.jsonl"
    with cassette(path):
        anyio.run(_session, mcp_command)

    async def more():
        branch = Branch()
        server = await branch.connect_mcp("fake", command=mcp_command)
        try:
            old = await branch.act({"function": "record", "arguments": {"note": "hello"}})
            replaying, started = server.replaying, children()
            new = await branch.act({"function": "record", "arguments": {"note": "again"}})
            assert not server.replaying  # the server runs now
            return replaying, started, old[0].output, new[0].output
        finally:
            await branch.aclose()

    before = children()
    with cassette(path, mode="new") as tape:
        replaying, started, old, new = anyio.run(more)
    assert replaying and started == before  # replayed while the recording answered
    assert (old, new) == ("recorded hello", "recorded again")
    assert mcp_log.read_text().splitlines() == ["hello", "again"]
    assert tape.recorded == 1
    last = json.loads(path.read_text().splitlines()[-1])
    assert last["request"] == {
        "arguments": {"note": "again"},
        "method": "tools/call",
        "server": "fake",
        "tool": "record",
    }


@pytest.mark.parametrize(
    ("result", "named"),
    [
        ({"tools": "add"}, "result.tools"),
        ({"tools": [{"description": "no name"}]}, "result.tools[0].name"),
    ],
)
def test_a_hand_edited_line_is_named(tmp_path, result, named):
    path = tmp_path / "mcp.jsonl"
    line = {"kind": "mcp", "request": {"server": "fake", "method": "tools/list"}, "result": result}
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(CassetteError) as raised:
        cassette(path, mode="none").__enter__()
    assert "line 1" in str(raised.value) and f"`{named}`" in str(raised.value)


def test_a_recording_holds_no_command_or_environment(tmp_path, mcp_log):
    path = tmp_path / "mcp.jsonl"
    command = server_command(mcp_log)

    async def main():
        branch = Branch()
        await branch.connect_mcp("fake", command=command, env={"FAKE_MODE": "recording-run"})
        try:
            await branch.act({"function": "add", "arguments": {"a": 1, "b": 1}})
        finally:
            await branch.aclose()

    with cassette(path):
        anyio.run(main)
    text = path.read_text()
    assert len(text.splitlines()) == 2
    assert command[1] not in text and str(mcp_log) not in text and "recording-run" not in text
