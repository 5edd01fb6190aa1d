"""``%lion mcp``: connect MCP servers to the notebook, list them, remove them.

``%lion mcp add NAME -- CMD ARGS...`` starts a stdio server (once: later turns reuse it);
``%lion mcp add NAME --url URL`` connects a streamable-HTTP one, with ``--header-env
HEADER=VAR`` reading a header's value (a token) from an environment variable, so the secret
never sits in the notebook. ``--approve ask`` makes each call wait for Approve / Deny in the
turn view; ``--timeout S`` bounds each call (S > 0). Options go anywhere before the ``--``;
every word after it is the server's command. ``--env NAME=VALUE`` (repeatable) passes a
variable to a stdio server; its value is a secret: masked wherever lion_nb shows or keeps
text, like every other known secret, which a command line echoed by ``add`` and ``list``
shows as ``****`` too. A server added here is the notebook's: its tools are offered to a turn by naming
it, ``%%lion -t NAME`` (a connected server's name is looked up before notebook functions).
``%lion mcp list`` shows servers, status and tools; ``%lion mcp remove NAME`` stops one.
Adding a name again with the same server keeps the running one (re-running the cell is
safe); a different server under a name in use is refused unless ``--replace``. Under ``%lion
cassette`` the server's tools and answers are recorded, or replayed without starting it. ``{expr}`` and
``$name`` in the command and the URL are expanded from the notebook's namespace, as in any
line magic.

The line is awaited on the kernel's loop (like ``%lion ask``), where the server's connection
then lives; from synchronous code it is connected on a helper loop and started afresh on the
kernel's loop at its first call.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ..cell.output_formats import Table
from .registry import arg, awaited, command

if TYPE_CHECKING:
    from argparse import Namespace

    from .command_context import CommandContext

__all__: list[str] = []

_APPROVE = {"true": True, "false": False, "ask": "ask"}


@command(
    "mcp",
    "Connect MCP servers (their tools: `%%lion -t NAME`), list them, remove them.",
    arg("action", choices=("add", "list", "remove"), help="what to do"),
    arg("name", nargs="?", help="the server's name (add, remove)"),
    arg("--url", help="a streamable-HTTP server's URL (instead of `-- CMD ARGS`)"),
    arg(
        "--header-env",
        action="append",
        metavar="HEADER=VAR",
        help="send HEADER with the value of environment variable VAR (e.g. a token); repeatable",
    ),
    arg(
        "--env",
        action="append",
        metavar="NAME=VALUE",
        help="set NAME in a stdio server's environment; the value is kept secret; repeatable",
    ),
    arg("--approve", choices=tuple(_APPROVE), help="approval of its calls (default: true)"),
    arg("--timeout", type=float, default=30.0, help="seconds a call may take (default 30)"),
    arg("--replace", action="store_true", help="replace a server of that name"),
    arg("command", nargs="*", help="-- CMD ARGS: the stdio server to start (after `--`)"),
    trailing="command",
)
async def _mcp(ctx: CommandContext, args: Namespace) -> Any:
    servers = ctx.state.mcp
    if args.action == "list":
        return _listing(servers)
    if not args.name:
        raise UsageError(f"`%lion mcp {args.action}` needs the server's NAME.")
    if args.action == "remove":
        server = servers.pop(args.name, None)
        if server is None:
            raise UsageError(_unknown(args.name, servers))
        await server.aclose()
        print(f"MCP server `{args.name}` stopped and removed.")
        return None
    return await _add(ctx, args, servers)


@awaited("mcp")
async def _mcp_awaited(ctx: CommandContext, args: Namespace, *, assigned: bool = True) -> Any:
    """An awaited ``%lion mcp`` line: the connection then lives on the kernel's loop."""
    return await _mcp(ctx, args)


async def _add(ctx: CommandContext, args: Namespace, servers: dict[str, Any]) -> Any:
    from ...errors import MCPError
    from ...mcp.server import MCPServer
    from ...models.cassettes import CassetteError

    expand = ctx.shell.var_expand  # `{python}`, `$TOKEN_FILE`: as in any line magic
    command = [expand(w) for w in args.command] if args.command else None
    if args.url:
        args.url = expand(args.url)
    if bool(command) == bool(args.url):
        raise UsageError(
            f"`%lion mcp add {args.name}` needs a server: `-- CMD ARGS` (stdio) or "
            "`--url URL` (streamable HTTP), not both."
        )
    env = _env(args.env or [], args.name, expand)
    if env and not command:
        raise UsageError(
            f"`%lion mcp add {args.name}`: `--env` sets a stdio server's environment; an HTTP "
            "server takes its token from `--header-env HEADER=VAR`."
        )
    headers = _headers(args.header_env or [], args.name)
    try:
        server = MCPServer(
            args.name, command=command, url=args.url, env=env, headers=headers,
            timeout=args.timeout,
        )  # fmt: skip
    except ValueError as exc:
        raise UsageError(f"`%lion mcp add`: {exc}") from None
    approve = _APPROVE.get(args.approve) if args.approve else None
    old = servers.get(args.name)
    if old is not None and old.same_as(server) and old.status not in ("failed", "closed"):
        if getattr(old, "approve", None) != approve:  # new tools, under the new policy
            old.approve = approve
            old.__dict__.pop("_notebook_tools", None)
        print(f"MCP server `{args.name}` is already connected: kept.")
        return _listing({args.name: old})
    if old is not None and not args.replace:
        raise UsageError(
            f"`%lion mcp add {args.name}`: a server named `{args.name}` is already connected "
            f"(`{old.target}`). Add `--replace` to replace it, or `%lion mcp remove "
            f"{args.name}` first."
        )
    server.approve = approve  # type: ignore[attr-defined]
    try:
        await server.start()
    except (MCPError, CassetteError) as exc:  # cannot start, or no recording of its tools
        raise UsageError(" ".join(str(exc).split())) from None
    old = servers.pop(args.name, None)
    if old is not None:
        await old.aclose()
    servers[args.name] = server
    return _listing({args.name: server})


def _env(pairs: list[str], name: str, expand: Any) -> dict[str, str] | None:
    """``--env NAME=VALUE`` pairs, each value registered as a secret (masked wherever lion_nb
    shows or keeps text); the error for a malformed pair never repeats its value."""
    from ...models.secrets import Secret

    env = {}
    for pair in pairs:
        var, eq, value = pair.partition("=")
        if not eq or not var.replace("_", "").isalnum() or var[0].isdigit():
            raise UsageError(
                f"`%lion mcp add {name}`: write `--env NAME=VALUE` (NAME letters, digits and "
                "`_`), e.g. `--env API_TOKEN=$token`."
            )
        value = expand(value)
        Secret(value)
        env[var] = value
    return env or None


def _headers(pairs: list[str], name: str) -> dict[str, str] | None:
    headers = {}
    for pair in pairs:
        header, _, var = pair.partition("=")
        if not header or not var:
            raise UsageError(
                f"`--header-env {pair}`: write HEADER=VAR, e.g. `--header-env "
                "Authorization=MY_TOKEN_VAR` (the variable holds `Bearer ...`)."
            )
        value = os.environ.get(var)
        if value is None:
            raise UsageError(
                f"`%lion mcp add {name}`: environment variable `{var}` (for header `{header}`) "
                "is not set. Set it before starting the kernel, or with `%env`."
            )
        headers[header] = value
    return headers or None


def _listing(servers: dict[str, Any]) -> Table:
    rows = [
        {
            "server": s.name,
            "status": s.status,
            "transport": s.transport,
            "target": s.target,
            "tools": ", ".join(s.tool_names),
        }
        for s in servers.values()
    ]
    return Table(["server", "status", "transport", "target", "tools"], rows, title="MCP servers")


def _unknown(name: str, servers: dict[str, Any]) -> str:
    known = ", ".join(f"`{n}`" for n in servers) or "none"
    return (
        f"`%lion mcp`: no MCP server named `{name}` (connected: {known}). Add it with "
        f"`%lion mcp add {name} -- CMD ARGS` or `--url URL`."
    )
