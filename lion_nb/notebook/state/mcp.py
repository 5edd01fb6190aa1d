"""The tools of the notebook's MCP servers (``%lion mcp add``) for one turn's branch
(``%%lion -t NAME``): made once per branch and server, so "approve from now on" is remembered
across turns."""

from __future__ import annotations

from typing import Any

__all__ = ["mcp_tools_for"]


def mcp_tools_for(magics: Any, branch: Any, name: str) -> list[Any] | None:
    """The tools of the notebook's MCP server ``name`` for ``branch`` (``-t NAME``), or
    ``None`` when no server has that name."""
    server = magics.state.mcp.get(name)
    if server is None:
        return None
    from ...mcp.connect import build_tools

    cache = server.__dict__.setdefault("_notebook_tools", {})
    key = str(branch.id)
    if key in cache:  # the same tools every turn: "approve from now on" is remembered
        return cache[key]
    tools = build_tools(branch, server, getattr(server, "approve", None))
    cache[key] = tools
    return tools
