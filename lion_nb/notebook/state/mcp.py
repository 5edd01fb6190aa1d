"""The tools of the notebook's MCP servers (``%lion mcp add``) for one turn's branch
(``%%lion -t NAME``): named together with the turn's other tools, so every tool keeps a
distinct name (two servers' ``echo`` are ``echo`` and ``b_echo``; a notebook function keeps
its own name), and made once per branch, server and name, so "approve from now on" -- which
the branch remembers for the tool -- holds across turns."""

from __future__ import annotations

from typing import Any

__all__ = ["mcp_tools_for"]


def mcp_tools_for(state: Any, branch: Any, names: list[str], local: list[Any]) -> list[Any]:
    """The tools of the notebook's MCP servers ``names`` (``-t NAME``, in order; ``state``
    is the `NotebookState` holding them) for ``branch``, beside the turn's notebook functions ``local``."""
    from ...mcp.connect import build_tools
    from ...protocols.actions import Tool

    taken = {Tool(f).name if not isinstance(f, Tool) else f.name for f in local}
    tools: list[Any] = []
    for name in names:
        server = state.mcp[name]
        cache = server.__dict__.setdefault("_notebook_tools", {})
        for tool in build_tools(branch, server, getattr(server, "approve", None), taken):
            key = (str(branch.id), tool.remote_name, tool.name)
            tools.append(cache.setdefault(key, tool))
    return tools
