"""A minimal MCP server over stdio, written by hand with `json` only, for tests that start
many servers (the connect/remove soak test).

The SDK's own server (`tests/fakes/mcp_server.py`) spends most of a second importing the SDK
before it answers; this one starts in tens of milliseconds, so a test of what connecting and
removing leaves behind measures lion_nb, not the server's imports. It is still a real child
process speaking the protocol's JSON-RPC on its stdin and stdout to the SDK's client.

It serves ``initialize`` (echoing the client's protocol version), ``ping``, ``tools/list``
with one tool, ``add(a, b)``, and ``tools/call``; notifications are read and ignored; any
other request is a JSON-RPC "method not found" error.
"""

from __future__ import annotations

import json
import sys

ADD = {
    "name": "add",
    "description": "Add two whole numbers.",
    "inputSchema": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}


def answer(method: str, params: dict) -> dict:
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "quick", "version": "1.0"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [ADD]}
    if method == "tools/call" and params.get("name") == "add":
        args = params.get("arguments") or {}
        total = int(args["a"]) + int(args["b"])
        return {"content": [{"type": "text", "text": str(total)}], "isError": False}
    raise LookupError(method)


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message:  # a notification
            continue
        reply: dict = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            reply["result"] = answer(message.get("method", ""), message.get("params") or {})
        except LookupError:
            reply["error"] = {"code": -32601, "message": f"no method {message.get('method')}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
