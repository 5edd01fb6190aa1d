"""An ACP agent that misbehaves on purpose, one way per mode (``argv[1]``), for the client's
robustness tests. Built on the SDK's agent side; the broken bytes are written to stdout raw.

Modes (what its first prompt does):

- ``malformed``: a message chunk, then a line that is not JSON, then nothing;
- ``flood``: 20,000 one-character message chunks in one burst, then a normal end;
- ``huge``: one ``session/update`` line of 50 MB;
- ``unsupported``: asks the client for a terminal (``terminal/create``) and an extension
  method, reports both answers as text, ends normally;
- ``nan``: a ``usage_update`` whose cost is NaN and a prompt answer whose usage is NaN;
- ``exit``: a message chunk, then the process exits with code 3;
- ``deaf``: a message chunk, then ignores ``session/cancel`` and never answers.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import acp
from acp.schema import InitializeResponse, NewSessionResponse

MODE = sys.argv[1] if len(sys.argv) > 1 else "malformed"


def write(data: bytes) -> None:
    """Write all of ``data`` to stdout, which the SDK made non-blocking."""
    os.set_blocking(1, True)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(1, view) :]
    finally:
        os.set_blocking(1, False)


def raw(message: dict) -> None:
    write((json.dumps(message) + "\n").encode())


def chunk(session_id: str, text: str) -> dict:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": session_id,
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text},
            },
        },
    }


class Hostile:
    def on_connect(self, conn):
        self.conn = conn

    async def initialize(self, protocol_version, client_capabilities=None, **kw):
        return InitializeResponse(protocol_version=acp.PROTOCOL_VERSION)

    async def new_session(self, cwd, mcp_servers=None, **kw):
        return NewSessionResponse(session_id="hostile-1")

    async def cancel(self, session_id, **kw):
        return None

    async def prompt(self, prompt, session_id, **kw):
        say = self.conn.session_update
        if MODE == "malformed":
            await say(session_id=session_id, update=acp.update_agent_message_text("partial "))
            write(b"{this is not json\n")
            await asyncio.sleep(3600)
        if MODE == "flood":
            lines = "".join(json.dumps(chunk(session_id, "x")) + "\n" for _ in range(20_000))
            write(lines.encode())
            return {"stopReason": "end_turn"}
        if MODE == "huge":
            raw(chunk(session_id, "y" * (50 * 1024 * 1024)))
            await asyncio.sleep(3600)
        if MODE == "unsupported":
            said = []
            try:
                await self.conn.create_terminal(session_id=session_id, command="ls")
                said.append("terminal: created")
            except acp.RequestError as exc:
                said.append(f"terminal: {exc.code}")
            except Exception as exc:
                said.append(f"terminal: {type(exc).__name__}")
            try:
                await self.conn.ext_method("lion/secret", {})
                said.append("ext: answered")
            except acp.RequestError as exc:
                said.append(f"ext: {exc.code}")
            except Exception as exc:
                said.append(f"ext: {type(exc).__name__}")
            await say(session_id=session_id, update=acp.update_agent_message_text("; ".join(said)))
            return {"stopReason": "end_turn"}
        if MODE == "nan":
            await say(session_id=session_id, update=acp.update_agent_message_text("counted"))
            raw(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {
                        "sessionId": session_id,
                        "update": {
                            "sessionUpdate": "usage_update",
                            "used": 10,
                            "size": 100,
                            "cost": {"amount": float("nan"), "currency": "USD"},
                        },
                    },
                }
            )
            nan = float("nan")
            usage = {"inputTokens": nan, "outputTokens": nan, "totalTokens": nan}
            return {"stopReason": "end_turn", "usage": usage}
        if MODE == "exit":
            await say(session_id=session_id, update=acp.update_agent_message_text("bye "))
            await asyncio.sleep(0.05)
            os._exit(3)
        if MODE == "deaf":
            await say(session_id=session_id, update=acp.update_agent_message_text("busy "))
            await asyncio.sleep(3600)
        return {"stopReason": "end_turn"}


if __name__ == "__main__":
    asyncio.run(acp.run_agent(Hostile()))
