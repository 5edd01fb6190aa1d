"""``%lion serve`` in a real ipykernel: the notebook's tools as an MCP server on 127.0.0.1.

The test process is the outside agent: without the token (or with a wrong one) every request
is a 401; with it, lion_nb's own MCP client lists the four tools and calls ``run_python``,
which runs in the kernel's namespace and is recorded on the ``served`` branch. Under the
default ``--approve ask`` a call waits in the server's card until a cell answers it (what a
click does: the front end's messages are played to the card), Deny runs nothing, and nobody
there denies. The server listens on 127.0.0.1 only and stops with the kernel.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from typing import Any

import httpx
import pytest

from tests.notebook.agent.kernel import Kernel, last_json, wait_for

pytestmark = pytest.mark.kernel


@pytest.fixture
def kernel(tmp_path):
    k = Kernel(str(tmp_path))
    k.run("%load_ext lion_nb\nimport json\nRUNS = []")
    try:
        yield k
    finally:
        k.close()


def _serve(kernel: Kernel, approve: str) -> dict[str, Any]:
    kernel.run(f"ep = %lion serve --approve {approve}")
    path = last_json(kernel.run("print(json.dumps([str(ep.config_path)]))"))[0]
    with open(path, encoding="utf-8") as f:
        return dict(json.load(f)["mcpServers"]["notebook"])


async def _client(config: dict[str, Any], *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    from lion_nb.mcp.server import MCPServer

    server = MCPServer("nb", url=config["url"], headers=config["headers"], timeout=120)
    await server.start()
    try:
        found: list[Any] = [
            sorted(t["name"] if isinstance(t, dict) else t.name for t in server.tools)
        ]
        for name, arguments in calls:
            try:
                result = await server.call_tool(name, arguments)
                text = "".join(getattr(c, "text", "") for c in result.content)
                found.append(f"ERROR: {text}" if result.is_error else text)
            except Exception as exc:  # a denied or failed call is the tool's error
                found.append(exc)
        return found
    finally:
        await server.aclose()


def test_without_the_token_every_request_is_refused(kernel):
    config = _serve(kernel, "true")
    url = config["url"]
    assert url.startswith("http://127.0.0.1:")
    assert (
        httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 401
    )
    wrong = {"Authorization": "Bearer not-the-token"}
    assert httpx.post(url, json={}, headers=wrong).status_code == 401
    assert httpx.get(url.replace("/mcp", "/anything")).status_code == 401
    token = config["headers"]["Authorization"].removeprefix("Bearer ")
    printed = kernel.run("print(repr(ep))")
    assert token not in printed and len(token) >= 32


def test_with_the_token_an_agent_lists_and_calls_the_tools(kernel):
    config = _serve(kernel, "true")
    kernel.run("base = 20")
    names, listed, ran = asyncio.run(
        _client(
            config, ("list_variables", {}), ("run_python", {"code": "RUNS.append(base)\nbase * 2"})
        )
    )
    assert names == ["inspect", "list_variables", "propose_cell", "run_python"]
    assert "base" in str(listed)
    assert "[value]\n40" in str(ran)
    facts = last_json(
        kernel.run(
            "from lion_nb import current_session\n"
            "b = current_session().get_branch('served')\n"
            "print(json.dumps({'runs': RUNS, 'calls': [m.function for m in b.messages if m.kind == 'action_response']}))"
        )
    )
    assert facts == {"runs": [20], "calls": ["list_variables", "run_python"]}


def test_the_server_listens_on_127_0_0_1_only_and_stops_with_the_kernel(kernel):
    config = _serve(kernel, "true")
    port = int(config["url"].rsplit(":", 1)[1].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.2", port), timeout=5)  # another loopback address
    kernel.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=5)


def test_each_call_waits_in_the_card_approve_runs_it_and_deny_does_not(kernel):
    config = _serve(kernel, "ask")
    results: list[Any] = []
    calls = [
        ("run_python", {"code": "RUNS.append('approved')"}),
        ("run_python", {"code": "RUNS.append('denied')"}),
    ]
    agent = threading.Thread(target=lambda: results.extend(asyncio.run(_client(config, *calls))))
    agent.start()
    kernel.run("ep.card._on_front_end(ep.card, {'type': 'shown'}, [])")  # as a front end does
    for decision in ("approve", "deny"):
        wait_for(lambda: "1" in kernel.run("print(len(ep.card.asks))"), 60, "the call in the card")
        shown = last_json(kernel.run("print(json.dumps(ep.card.asks[0]))"))
        assert shown["tool"] == "run_python" and "RUNS.append" in shown["code"]
        kernel.run(
            f"ep.card._on_front_end(ep.card, {{'type': 'approval', 'id': {shown['id']!r}, 'decision': {decision!r}}}, [])"
        )
    agent.join(60)
    assert not agent.is_alive()
    _, approved, denied = results
    assert approved == "(no output)\n[names] changed: RUNS"
    assert denied.startswith("ERROR: ") and "was denied and did not run" in denied
    facts = last_json(
        kernel.run(
            "from lion_nb import current_session\n"
            "b = current_session().get_branch('served')\n"
            "print(json.dumps({'runs': RUNS, 'approval': [m.metadata.get('approval') for m in b.messages if m.kind == 'action_response']}))"
        )
    )
    assert facts == {"runs": ["approved"], "approval": ["approved by user", "denied by user"]}


def test_with_nobody_to_see_the_card_a_call_is_denied(kernel):
    kernel.run("from lion_nb.widgets.turn import TurnWidget\nTurnWidget.unseen_grace = 0.3")
    config = _serve(kernel, "ask")
    _, denied = asyncio.run(_client(config, ("run_python", {"code": "RUNS.append(1)"})))
    assert denied.startswith("ERROR: ") and "nobody could be asked" in denied
    assert kernel.run("print(RUNS)").strip() == "[]"


def test_stop_and_a_second_start(kernel):
    config = _serve(kernel, "true")
    assert "stopped" in kernel.run("%lion serve --stop")
    with pytest.raises(httpx.HTTPError):
        httpx.post(config["url"], json={}, timeout=5)
    again = _serve(kernel, "true")
    assert again["url"] != config["url"] or again["headers"] != config["headers"]


def test_claude_code_given_the_configuration_calls_run_python_approved_in_the_card(
    kernel, monkeypatch, tmp_path
):
    from lion_nb import Branch, iModel
    from tests.fakes.cli import fake_cli_on_path

    _serve(kernel, "ask")
    path = last_json(kernel.run("print(json.dumps([str(ep.config_path)]))"))[0]
    kernel.run("ep.card._on_front_end(ep.card, {'type': 'shown'}, [])")  # as a front end does
    kernel.run("numbers = [3, 4, 5]")
    fake = fake_cli_on_path(monkeypatch, tmp_path)
    fake.set(
        mcp_call=json.dumps(
            {"tool": "run_python", "arguments": {"code": "total = sum(numbers)\ntotal"}}
        )
    )
    agent = Branch(chat_model=iModel(provider="claude_code", model="sonnet", mcp_config=path))
    answers: list[Any] = []

    async def ask_claude() -> None:
        answers.extend([chunk async for chunk in agent.run("Add up the numbers.")])

    worker = threading.Thread(target=lambda: asyncio.run(ask_claude()))
    worker.start()
    wait_for(lambda: "1" in kernel.run("print(len(ep.card.asks))"), 60, "Claude's call in the card")
    shown = last_json(kernel.run("print(json.dumps(ep.card.asks[0]))"))
    assert shown["code"] == "total = sum(numbers)\ntotal"
    kernel.run(
        f"ep.card._on_front_end(ep.card, {{'type': 'approval', 'id': {shown['id']!r}, 'decision': 'approve'}}, [])"
    )
    worker.join(120)
    assert not worker.is_alive()
    [record] = fake.records()
    assert record["argv"][record["argv"].index("--mcp-config") + 1] == path
    answer = [m for m in agent.messages if m.kind == "assistant_response"][-1]
    assert "The notebook answered: [value]\n12" in answer.rendered
    assert kernel.run("print(total)").strip() == "12"
