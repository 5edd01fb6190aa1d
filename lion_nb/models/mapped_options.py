"""The request options only some endpoints map (``reasoning=``, ``citations=``): each is
checked (a one-line `ConfigurationError` before any request), then left out of a request
when it is unset (or False) or when its endpoint does not map it yet. Live calls
(`iModel.invoke`) and provider batch lines (`BatchService.body`) leave them out alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..shapes import JsonObject
from .citations import check_citations
from .reasoning import check_reasoning

__all__ = ["MAPPED_OPTIONS", "leave_out_unmapped"]

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
