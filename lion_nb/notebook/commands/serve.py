"""``%lion serve``: the notebook's tools for outside agents, as an MCP server (ADR-0114 D12).

``%lion serve`` starts `lion_nb.notebook.agent.endpoint.NotebookEndpoint` on 127.0.0.1 (a
free port) behind a random bearer token and shows its card: each call an agent makes waits
there for Approve / Deny (``--approve ask``, the default) with its code and risk flags, runs
on the kernel's main thread and is recorded on the branch ``served`` (``--branch NAME``). The
line prints the URL and the path of an MCP configuration file holding the token (mode
0600), which Claude Code takes as ``--mcp-config PATH``; the token itself is never printed.
``endpoint = %lion serve`` gives the endpoint (``.url``, ``.token``, ``.config_path``).
``%lion serve --stop`` stops it, as does the card's Stop and the kernel's exit. The line is
awaited on the kernel's loop, where the calls then run.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from .registry import arg, awaited, command

if TYPE_CHECKING:
    from .command_context import CommandContext

__all__: list[str] = []

_APPROVE = {"true": True, "false": False, "ask": "ask"}
_RUNNING: dict[int, Any] = {}  # id(notebook state) -> its endpoint


@command(
    "serve",
    "Serve the notebook's tools to outside agents over MCP (127.0.0.1, a bearer token).",
    arg("--stop", action="store_true", help="stop the server"),
    arg(
        "--approve",
        choices=tuple(_APPROVE),
        default="ask",
        help="approval of run_python calls (default: ask, in the server's card)",
    ),
    arg("--branch", default="served", help="the branch its calls are recorded on"),
)
def _serve(ctx: CommandContext, args: Any) -> Any:
    key = id(ctx.state)
    running = _RUNNING.get(key)
    if args.stop:
        if running is None:
            print("No MCP server is running.")
            return None
        _RUNNING.pop(key, None)
        running.stop()
        print("The notebook's MCP server is stopped.")
        return None
    if running is not None and running.running:
        raise UsageError(
            f"The notebook's MCP server already runs at {running.url}; `%lion serve --stop` first."
        )
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise UsageError(
            "`%lion serve` needs the kernel's running loop: run it in a notebook (a kernel)."
        ) from None
    return _start(ctx, args, loop, key)


def _start(ctx: CommandContext, args: Any, loop: asyncio.AbstractEventLoop, key: int) -> Any:
    from IPython.display import display

    from ...widgets.turn import TurnWidget
    from ..agent.endpoint import NotebookEndpoint

    session = ctx.state.session
    branch = next((b for b in session.branches if b.name == args.branch), None)
    if branch is None:
        branch = session.new_branch(name=args.branch)
    card = TurnWidget("MCP server · notebook tools", markdown=False)
    endpoint = NotebookEndpoint(
        branch, loop=loop, approve=_APPROVE[args.approve], shell=ctx.shell, card=card
    )
    try:
        endpoint.start()
    except Exception as exc:
        raise UsageError(f"`%lion serve`: the server could not start ({exc}).") from None
    _RUNNING[key] = endpoint

    def stop() -> bool:
        _RUNNING.pop(key, None)
        endpoint.stop()
        card.finish()
        card.status = "stopped"
        return True

    card.start(stop=stop)
    card.status = f"serving at {endpoint.url}"
    display(card)
    path = endpoint.write_config()
    print(f"MCP server at {endpoint.url} (127.0.0.1 only; every request needs its token).")
    print(f"MCP configuration with the token: {path} (e.g. claude --mcp-config {path}).")
    print(f"Calls are recorded on branch `{branch.name}`; run_python: approve={args.approve}.")
    return endpoint


@awaited("serve")
async def _serve_awaited(ctx: CommandContext, args: Any, *, assigned: bool = True) -> Any:
    """An awaited ``%lion serve``: on the kernel's loop, where the calls then run."""
    result = _serve(ctx, args)
    return result if assigned else None
