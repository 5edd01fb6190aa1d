"""An MCP server's answers through a cassette, so a notebook replays without the server.

The cassette is the one in force when the server is connected (``connect_mcp``, ``%lion mcp
add``): ``with cassette(...)`` around the connect, or the process-wide one of ``%lion
cassette``. The server keeps it for as long as it is connected, so its calls go through it
from any later cell or turn. With no cassette in force the server runs live, whatever
``LION_NB_CASSETTE_MODE`` says: it is the notebook's own process, not a provider.

Each exchange with the server is one cassette line of kind ``mcp``: the request is the
server's name, the protocol method and its parameters (``tools/call`` with ``tool`` and
``arguments``; ``tools/list``; ``resources/read`` with ``uri``; ``prompts/get`` with
``name`` and ``arguments``; the resource and prompt lists), the response is the server's
result as JSON (``result``). Where the server runs -- its command, URL, headers, environment
-- is never part of a line, so a recording replays for a server started anywhere, and no
secret is written: every string passes through `redact`, which masks the server's headers
and its secret-named environment values too (`MCPServer` registers them as secrets).

Connecting under a cassette that replays takes the tool list from it and starts nothing;
each call then takes its recorded result, matched by server, tool and arguments in recorded
order (the rule of every cassette, `Cassette.take`). In mode ``new`` a call with no
recording starts the server then and is recorded; in ``none`` it is a `CassetteError`
naming the server, the tool and the differing field (``arguments.text``).
"""

from __future__ import annotations

from typing import Any

import anyio.lowlevel

from ..models.cassettes._format import clean
from ..models.cassettes.recording import Cassette, CassetteError, Recording

__all__ = ["exchange", "record_tools", "replays_tools", "tape_in_force"]

#: the SDK's result type of each method recorded
_RESULTS = {
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/read": "ReadResourceResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
}


def tape_in_force() -> Cassette | None:
    """The cassette a server connected now records in or replays from."""
    from ..models.cassettes.scope import current_cassette

    return current_cassette()


def _request(server: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return clean({"server": server.name, "method": method, **params})


def _label(server: Any, method: str, params: dict[str, Any]) -> str:
    """What a no-recording message says was asked."""
    on = f"MCP server `{server.name}`"
    if method == "tools/call":
        return f"the call of tool `{params['tool']}` on {on}"
    if method == "tools/list":
        return f"the tool list of {on} (connecting it)"
    return f"`{method}` on {on}"


def _result(entry: Recording, method: str) -> Any:
    """The recorded result as the SDK's type, as a live call returns it."""
    import mcp.types
    from pydantic import ValidationError

    kind = getattr(mcp.types, _RESULTS[method])
    try:
        return kind.model_validate(entry.data()["result"])
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "result" + "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]
        )
        raise CassetteError(
            f"Cassette line {entry.number} is not a `{method}` result (`{where}`: "
            f"{first['msg']}). Fix the line, or re-record the file with mode `all`."
        ) from None


async def exchange(server: Any, method: str, params: dict[str, Any], live: Any) -> Any:
    """The SDK result of ``method``: replayed from the server's cassette, or from ``live()``
    (an awaitable factory) and recorded; ``live()`` alone with no cassette."""
    tape = server.cassette
    if tape is None:
        return await live()
    request = _request(server, method, params)
    entry = tape.take("mcp", request, _label(server, method, params))
    if entry is not None:
        await anyio.lowlevel.checkpoint()  # a replay is a call: it yields, and can be cancelled
        return _result(entry, method)
    result = await live()
    payload = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    tape.record("mcp", request, {"result": payload})
    return result


async def replays_tools(server: Any) -> list[Any] | None:
    """The recorded tool list when connecting ``server`` replays (no process starts); else
    ``None``: the server is started live (and its list recorded, under a cassette)."""
    tape = server.cassette
    if tape is None:
        return None
    entry = tape.take("mcp", _request(server, "tools/list", {}), _label(server, "tools/list", {}))
    if entry is None:
        return None
    await anyio.lowlevel.checkpoint()
    return list(_result(entry, "tools/list").tools)


def record_tools(server: Any, listed: Any) -> None:
    """Record the tool list of a server connected live under a cassette."""
    if server.cassette is not None and listed is not None:
        payload = listed.model_dump(mode="json", by_alias=True, exclude_none=True)
        server.cassette.record("mcp", _request(server, "tools/list", {}), {"result": payload})
