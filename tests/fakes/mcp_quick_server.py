"""A minimal MCP server over stdio, written by hand with `json` only, for tests that start
many servers (the connect/remove soak test).

The SDK's own server (`tests/fakes/mcp_server.py`) spends most of a second importing the SDK
before it answers; this one starts in tens of milliseconds, so a test of what connecting and
removing leaves behind measures lion_nb, not the server's imports. It is still a real child
process speaking the protocol's JSON-RPC on its stdin and stdout to the SDK's client.

It serves ``initialize`` (echoing the client's protocol version), ``ping``, ``tools/list``
and ``tools/call`` for its tools: ``add(a, b)``, ``big(size)`` (a text of ``size``
characters) and, with ``--tools NAME,NAME``, one ``NAME(text)`` each answering
``NAME: text`` (servers whose tool names collide). Notifications are read and ignored; any
other request is a JSON-RPC "method not found" error.

``--child PIDFILE`` first starts a child process in the server's process group (as a server
started by ``npx`` has its node process, or a server its helper) and writes ``LEADER CHILD``
(the two pids) to PIDFILE; the server still exits at once when its stdin closes, leaving the
child running unless its group is stopped.
"""

from __future__ import annotations

import json
import os
import subprocess
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


BIG = {
    "name": "big",
    "description": "A text of `size` characters.",
    "inputSchema": {
        "type": "object",
        "properties": {"size": {"type": "integer"}},
        "required": ["size"],
    },
}
NAMED: list[str] = []  # --tools


def named(name: str) -> dict:
    return {
        "name": name,
        "description": f"Answer `{name}: text`.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    }


def text(value: str) -> dict:
    return {"content": [{"type": "text", "text": value}], "isError": False}


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
        return {"tools": [ADD, BIG, *(named(n) for n in NAMED)]}
    args = params.get("arguments") or {}
    if method == "tools/call" and params.get("name") == "add":
        return text(str(int(args["a"]) + int(args["b"])))
    if method == "tools/call" and params.get("name") == "big":
        return text("x" * int(args["size"]))
    if method == "tools/call" and params.get("name") in NAMED:
        return text(f"{params['name']}: {args.get('text', '')}")
    raise LookupError(method)


def start_child(pidfile: str) -> None:
    child = subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL)
    with open(pidfile + ".part", "w", encoding="ascii") as f:
        f.write(f"{os.getpid()} {child.pid}")
    os.replace(pidfile + ".part", pidfile)


def main() -> None:
    argv = sys.argv[1:]
    while argv:
        flag, value, argv = argv[0], argv[1], argv[2:]
        if flag == "--child":
            start_child(value)
        elif flag == "--tools":
            NAMED.extend(value.split(","))
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
