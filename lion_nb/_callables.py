"""Whether a callable is asynchronous: the one test that tools, the offline function model
and named operations use to decide between awaiting a callable and running it in a thread."""

from __future__ import annotations

import functools
import inspect
from typing import Any

__all__ = ["is_async_callable"]


def is_async_callable(func: Any) -> bool:
    """True for ``async def`` functions, also behind ``functools.partial`` or as an object's
    ``__call__``."""
    while isinstance(func, functools.partial):
        func = func.func
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004 - a callable object's own __call__
    )
