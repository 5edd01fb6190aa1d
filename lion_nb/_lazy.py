"""Lazy re-exports: a package names what it exports and where it lives; each name is
imported on first access and then cached on the package, so importing the package is cheap.

Upcalls, the other wiring the package root does: a function of an upper layer the core calls
(`Session.evaluate` runs `lion_nb.evals`, which sits above the session it drives). Rather
than import upward, the core asks for it by name (`upcall`), and `lion_nb/__init__.py` --
which every import of lion_nb runs first -- registers it (`register_upcall`). Kept here, as
importing lion_nb loads this module and no other."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports", "register_upcall", "upcall"]

#: name -> the function an upper layer provides (``Any``: each has its own signature,
#: checked where it is defined)
_UPCALLS: dict[str, Callable[..., Any]] = {}


def register_upcall(name: str, function: Callable[..., Any]) -> None:
    _UPCALLS[name] = function


def upcall(name: str) -> Callable[..., Any]:
    """The function registered under ``name``; a `LookupError` names one never wired."""
    try:
        return _UPCALLS[name]
    except KeyError:
        raise LookupError(f"`{name}` is not wired: `lion_nb/__init__.py` registers it.") from None


def lazy_exports(
    package: str, exports: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` for ``package``."""
    module = sys.modules[package]

    def __getattr__(name: str) -> Any:
        source = exports.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        setattr(module, name, value)  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(module), *exports})

    return __getattr__, __dir__
