"""MCP servers as a branch's tools, on the official ``mcp`` SDK (``pip install lion-nb[mcp]``).

An adapter beside `lion_nb.models`: `server` holds one server's connection and lifecycle,
`tools` turns its tools and results into lion_nb's, `connect` attaches them to branches and
sessions (``branch.connect_mcp`` / ``session.connect_mcp``). The SDK is imported only when a
server is started, never by ``import lion_nb`` or ``%load_ext lion_nb``.
"""

from __future__ import annotations

from .server import MCPServer

__all__ = ["MCPServer"]
