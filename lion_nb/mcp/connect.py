"""Connecting MCP servers to branches and sessions, and removing them.

- ``await branch.connect_mcp(name, command=[...] | url=..., approve=...)`` starts the server
  (once), lists its tools and registers them on the branch; the branch owns the server and
  stops it on `remove_mcp` and `aclose`.
- ``await session.connect_mcp(...)`` does the same for every branch of the session, now and
  later included (a removed branch loses the tools); the session owns the server.
- Connecting a name again with the same server (a cell run again) keeps the running one,
  under the approval policy given now; another server under a name in use is refused unless
  ``replace=True``, which stops the old one once the new one has started.

The tools are not serialized with the branch (tools never are): a branch loaded from a
store connects its servers again.
"""

from __future__ import annotations

from typing import Any

from ..errors import ItemExistsError, ItemNotFoundError
from .server import MCPServer
from .tools import MCPTool, tool_name_for

__all__ = ["attach_tools", "build_tools", "connect", "detach_tools", "disconnect", "servers_of"]


def servers_of(owner: Any) -> dict[str, MCPServer]:
    return owner.connected_mcp


def build_tools(
    branch: Any, server: MCPServer, approve: Any, taken: set[str] | None = None
) -> list[MCPTool]:
    """The server's tools for ``branch``, named so none takes the name of a tool the branch
    has from elsewhere, nor one in ``taken`` (its earlier tools from this server are
    replaced). The names used are added to ``taken``."""
    registry = branch.acts.registry
    if taken is None:
        taken = set()
    taken.update(n for n, t in registry.items() if getattr(t, "server", None) is not server)
    built = []
    for definition in server.tools:
        name = tool_name_for(server.name, definition.name, taken)
        taken.add(name)
        built.append(MCPTool(server, definition, name, approve))
    return built


def attach_tools(branch: Any, server: MCPServer, approve: Any) -> list[str]:
    """Register the server's tools on ``branch``; the names used."""
    built = build_tools(branch, server, approve)
    branch.acts.register_tools(built, update=True)
    return [t.name for t in built]


def detach_tools(branch: Any, server: MCPServer) -> None:
    registry = branch.acts.registry
    for name in [n for n, t in registry.items() if getattr(t, "server", None) is server]:
        del registry[name]


async def connect(
    owner: Any,
    name: str,
    *,
    command: list[str] | None = None,
    url: str | None = None,
    env: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    cwd: str | None = None,
    approve: Any = None,
    timeout: float = 30.0,
    replace: bool = False,
) -> MCPServer:
    """Start the server and give its tools to ``owner`` (a Branch, or every branch of a
    Session). See the module docstring."""
    from ..protocols.approval import check_policy

    check_policy(approve)
    server = MCPServer(
        name, command=command, url=url, env=env, headers=headers, cwd=cwd, timeout=timeout
    )
    servers = servers_of(owner)
    old = servers.get(name)
    if old is not None and old.same_as(server) and old.status not in ("failed", "closed"):
        old.approve = approve  # type: ignore[attr-defined]
        for branch in _branches(owner):
            attach_tools(branch, old, approve)
        return old
    if old is not None and not replace:
        raise ItemExistsError(
            f"An MCP server named `{name}` is already connected (`{old.target}`): pass "
            f"`replace=True` to replace it, or `remove_mcp({name!r})` first."
        )
    await server.start()
    if name in servers:
        await disconnect(owner, name)
    server.approve = approve  # type: ignore[attr-defined]  # given to branches included later
    servers[name] = server
    for branch in _branches(owner):
        attach_tools(branch, server, approve)
    return server


async def disconnect(owner: Any, name: str) -> MCPServer:
    """Remove the server's tools from the owner's branches and stop it."""
    servers = servers_of(owner)
    if name not in servers:
        known = ", ".join(f"`{n}`" for n in servers) or "none"
        raise ItemNotFoundError(f"No MCP server `{name}` is connected (connected: {known}).")
    server = servers.pop(name)
    for branch in _branches(owner):
        detach_tools(branch, server)
    await server.aclose()
    return server


async def disconnect_all(owner: Any) -> None:
    for name in list(servers_of(owner)):
        await disconnect(owner, name)


def kill_all(owner: Any) -> None:
    """Stop every stdio server of ``owner`` at once (a close from a running loop)."""
    for server in servers_of(owner).values():
        server.kill_now()


def _branches(owner: Any) -> list[Any]:
    branches = getattr(owner, "_branches", None)
    return list(branches) if branches is not None else [owner]
