"""Calls from the core into a layer above it, wired by the package root.

`Session.evaluate` runs the evaluation layer (`lion_nb.evals`), which sits above the session
it drives. Rather than import upward, the session asks for the function by name here, and
`lion_nb/__init__.py` -- which every import of lion_nb runs first -- registers it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["register", "upcall"]

#: name -> the function an upper layer provides (a reason for ``Any``: each has its own
#: signature, checked where it is defined)
_REGISTERED: dict[str, Callable[..., Any]] = {}


def register(name: str, function: Callable[..., Any]) -> None:
    _REGISTERED[name] = function


def upcall(name: str) -> Callable[..., Any]:
    """The function registered under ``name``; a `LookupError` names one never wired."""
    try:
        return _REGISTERED[name]
    except KeyError:
        raise LookupError(f"`{name}` is not wired: `lion_nb/__init__.py` registers it.") from None
