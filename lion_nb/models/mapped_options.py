"""The request options only some endpoints map (``reasoning=``, ``citations=``): each is
checked (a one-line `ConfigurationError` before any request), then left out of a request
when it is unset (or False) or when its endpoint does not map it yet. Live calls
(`iModel.invoke`) and provider batch lines (`BatchService.body`) leave them out alike.

``tools=`` given as an option (``iModel(tools=[...])``, or per call) is the provider's own
tools (web search): `join_tools` offers them beside the request's functions, which would
otherwise replace them in the body."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..shapes import JsonObject
from .citations import check_citations
from .reasoning import check_reasoning

__all__ = ["MAPPED_OPTIONS", "join_tools", "leave_out_unmapped"]

#: (name, its check, the endpoint flag that says the endpoint maps it)
MAPPED_OPTIONS: tuple[tuple[str, Callable[[object], object], str], ...] = (
    ("reasoning", check_reasoning, "takes_reasoning"),
    ("citations", check_citations, "takes_citations"),
)


# Any: any endpoint; only its `mapped_options` is read
def leave_out_unmapped(endpoint: Any, options: JsonObject) -> list[str]:
    """Take out of ``options`` each mapped option that is unset or that ``endpoint`` (any
    endpoint: only its ``takes_*`` flags are read) does not map; the names of the latter."""
    unmapped = []
    for name, check, flag in MAPPED_OPTIONS:
        if not check(options.get(name)):
            options.pop(name, None)
        elif not getattr(endpoint, flag, False):
            del options[name]
            unmapped.append(name)
    return unmapped


# Any: a `ChatRequest` (endpoints import this module); its `tools` and `options` are read
def join_tools(request: Any) -> None:
    """Move a ``tools`` option of ``request`` (a list) after the tools it offers, once each,
    when it offers any (with none, the option is the body's ``tools`` as it is)."""
    extra = request.options.get("tools")
    if not request.tools or not isinstance(extra, list):
        return
    del request.options["tools"]
    request.tools = [*request.tools, *(t for t in extra if t not in request.tools)]
