"""A real MCP server for the tests, written with the SDK's server API (`MCPServer`).

Run as a process: ``python tests/fakes/mcp_server.py [--http PORT] [--token T] [--log FILE]``
serves over stdio, or over streamable HTTP on 127.0.0.1:PORT (then every request must carry
``Authorization: Bearer T`` when ``--token`` is given).

Tools:

- ``add(a, b)``: the sum;
- ``record(note)``: appends the note as one line to the ``--log`` file (the side effect a
  test counts) and returns ``"recorded <note>"``;
- ``crash()``: the process exits in the middle of the call;
- ``hang()``: never answers;
- ``malformed()``: answers with a result that is not a valid tool result (stdio only: it is
  written on the wire by hand, as a broken server would);
- ``fail()``: the tool raises, so the result is an MCP tool error;
- ``leak(env, header)``: the value of the server's environment variable ``env``, or of the
  HTTP request's header ``header`` (a server that echoes its secrets back).

A resource ``note://readme`` and a prompt ``summarize(topic)``. ``--exit-at-start`` exits
before serving (a command that does not start a server).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import anyio
from mcp.server.mcpserver import Context, MCPServer

ARGS = argparse.Namespace(log=None)
RAW_OUT: list = []  # the wire, when the server serves stdio on explicit streams

server = MCPServer("fake")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@server.tool()
def record(note: str) -> str:
    """Record a note in the server's log."""
    if ARGS.log:
        with open(ARGS.log, "a", encoding="utf-8") as f:
            f.write(note + "\n")
    return f"recorded {note}"


@server.tool()
def crash() -> str:
    """Exit in the middle of the call."""
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answer."""
    await anyio.sleep_forever()
    return "never"


@server.tool()
async def malformed(ctx: Context) -> str:
    """Answer with something that is not a tool result."""
    if RAW_OUT:
        bad = {"jsonrpc": "2.0", "id": ctx.request_id, "result": {"content": "not a list"}}
        RAW_OUT[0].write(json.dumps(bad) + "\n")
        RAW_OUT[0].flush()
    await anyio.sleep_forever()
    return "never"


@server.tool()
def fail() -> str:
    """Raise inside the tool."""
    raise RuntimeError("the fake tool failed")


@server.tool()
def leak(ctx: Context, env: str = "", header: str = "") -> str:
    """Echo a secret of the server's back."""
    if env:
        return f"env {os.environ.get(env, '(unset)')}"
    headers = {k.lower(): v for k, v in (ctx.headers or {}).items()}
    return f"header {headers.get(header.lower(), '(none)')}"


@server.resource("note://readme")
def readme() -> str:
    """The server's readme."""
    return "The fake server's readme."


@server.prompt()
def summarize(topic: str) -> str:
    """Ask for a summary of a topic."""
    return f"Summarize {topic} in one sentence."


async def _serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    raw_out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    RAW_OUT.append(raw_out)
    stdin = anyio.wrap_file(os.fdopen(os.dup(0), "r", encoding="utf-8"))
    stdout = anyio.wrap_file(raw_out)
    low = server._lowlevel_server
    async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):
        await low.run(read, write, low.create_initialization_options())


def _serve_http(port: int, token: str | None) -> None:
    import uvicorn

    app = server.streamable_http_app()

    async def guarded(scope, receive, send):
        if scope["type"] == "http" and token:
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None)
    parser.add_argument("--token", default=None)
    parser.add_argument("--log", default=None)
    parser.add_argument("--exit-at-start", action="store_true")
    parser.parse_args(namespace=ARGS)
    if ARGS.exit_at_start:
        print("fake: refusing to start", file=sys.stderr)
        sys.exit(2)
    if ARGS.http is not None:
        _serve_http(ARGS.http, ARGS.token)
    else:
        anyio.run(_serve_stdio)


if __name__ == "__main__":
    time.sleep(0)
    main()
