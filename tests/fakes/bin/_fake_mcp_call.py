"""The fake `claude` calling one tool of the MCP server its ``--mcp-config`` names.

Like Claude Code, it reads the file's first server (``type: http``, ``url``, ``headers``),
calls the tool with the MCP SDK's client over streamable HTTP, and reports the run as
stream-json lines: the init (with the server), the ``tool_use``, its ``tool_result`` and an
answer that quotes the result.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any


async def _call(
    url: str, headers: dict[str, str], tool: str, arguments: dict[str, Any]
) -> tuple[str, bool]:
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx.AsyncClient(headers=headers, timeout=120) as client:
        async with streamable_http_client(url, http_client=client) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool(tool, arguments)
    text = "".join(getattr(part, "text", "") for part in result.content)
    return text, bool(result.is_error)


def mcp_run(argv: list[str], call: dict[str, Any]) -> list[str]:
    if "--mcp-config" not in argv:
        sys.stderr.write("fake claude: FAKE_CLI_MCP_CALL needs --mcp-config PATH\n")
        sys.exit(2)
    with open(argv[argv.index("--mcp-config") + 1], encoding="utf-8") as f:
        name, server = next(iter(json.load(f)["mcpServers"].items()))
    tool, arguments = call["tool"], call.get("arguments", {})
    text, is_error = asyncio.run(_call(server["url"], server.get("headers", {}), tool, arguments))
    session = "fake-mcp-session-1"
    use_id = "toolu_fake_mcp_1"
    answer = f"The notebook answered: {text}"
    events = [
        {"type": "system", "subtype": "init", "session_id": session, "model": "claude-sonnet-4-5",
         "mcp_servers": [{"name": name, "status": "connected"}], "tools": [f"mcp__{name}__{tool}"]},
        {"type": "assistant", "session_id": session, "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": use_id, "name": f"mcp__{name}__{tool}", "input": arguments}]}},
        {"type": "user", "session_id": session, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": use_id, "content": text, "is_error": is_error}]}},
        {"type": "assistant", "session_id": session, "message": {"role": "assistant", "content": [
            {"type": "text", "text": answer}]}},
        {"type": "result", "subtype": "success", "is_error": False, "result": answer,
         "session_id": session, "num_turns": 2},
    ]  # fmt: skip
    return [json.dumps(event) for event in events]
