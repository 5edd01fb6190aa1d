"""An MCP server's tools as a branch's `Tool`s, and its results as tool output.

A server's tool keeps its name, description and input schema as the server gives them (the
schema goes to the model unchanged; the server validates the arguments). A name that
collides with a tool already on the branch is prefixed with the server's name
(``files_read``), and numbered when that is taken too (``files_read_2``): every tool keeps a
distinct name, and a server's tool never takes the place of a tool from elsewhere. The output a model sees is the result's text content (what the protocol
meant for a model), joined; other content is listed by type. A result the server marks as an
error raises, so the call is a tool error like any other.
"""

from __future__ import annotations

import re
from typing import Any

from ..protocols.actions import Tool
from .server import MCPError, MCPServer

__all__ = ["MCPTool", "result_output", "tool_name_for"]

_INVALID = re.compile(r"[^A-Za-z0-9_-]")


class MCPTool(Tool):
    """One tool of an MCP server, called through the server's connection."""

    __test__ = False

    def __init__(self, server: MCPServer, definition: Any, name: str, approve: Any = None):
        from ..protocols.approval import check_policy

        self.approve = check_policy(approve)
        self.server = server
        self.server_name = server.name
        self.remote_name: str = definition.name
        self.name = name
        self.description = definition.description or ""
        self.run_in_thread = False
        self._is_model = False
        schema = dict(definition.input_schema or {"type": "object", "properties": {}})
        schema.pop("title", None)
        self.schema = {
            "type": "function",
            "function": {"name": name, "description": self.description, "parameters": schema},
        }

        async def call_remote(**arguments: Any) -> Any:
            return result_output(await server.call_tool(self.remote_name, arguments), self)

        call_remote.__name__ = name
        self.func_callable = call_remote

    def validate(self, arguments: dict[str, Any] | str | None) -> dict[str, Any]:  # type: ignore[override]
        """A JSON object; the server checks the rest against its schema."""
        return self.json_object(arguments)

    async def call(self, arguments: dict[str, Any] | str | None = None) -> Any:
        return await self.func_callable(**self.validate(arguments))

    def __repr__(self) -> str:
        return f"MCPTool(name={self.name!r}, server={self.server_name!r})"


def tool_name_for(server: str, remote: str, taken: Any) -> str:
    """The remote name, else ``server_remote``, else ``server_remote_2``, ``_3``...: the
    first not in ``taken`` (each made a valid tool name)."""
    name = _INVALID.sub("_", remote)[:64]
    if name not in taken:
        return name
    prefixed = f"{server}_{name}"
    name, n = prefixed[:64], 2
    while name in taken:
        suffix = f"_{n}"
        name, n = prefixed[: 64 - len(suffix)] + suffix, n + 1
    return name


def result_output(result: Any, tool: Any) -> Any:
    """The output of a ``CallToolResult``; `MCPError` when the server marks it an error."""
    parts: list[Any] = []
    for item in result.content or []:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {getattr(item, 'mime_type', '')}]")
        elif kind == "resource":
            inner = item.resource
            parts.append(getattr(inner, "text", None) or f"[resource {inner.uri}]")
        else:
            parts.append(f"[{kind or 'content'}]")
    text = "\n".join(p for p in parts if isinstance(p, str))
    if result.is_error:
        raise MCPError(
            f"`{tool.remote_name}` on MCP server `{tool.server_name}`: {text or 'failed'}"
        )
    if not parts and result.structured_content is not None:
        return result.structured_content
    return text
