"""`OperationManager`: the named-operation registry a Session shares with its branches.

Registration rules (ADR-0021 D2): a name already registered is refused unless
``update=True``; a callable that is not a coroutine function is refused (it is not wrapped).
Lookup precedence is the branch's business (`Branch.get_operation` is attribute-first), so a
registered name can never shadow a built-in Branch attribute. The registry is not serialized.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._callables import is_async_callable
from ..errors import ItemExistsError

__all__ = ["OperationManager", "is_coro_func"]


is_coro_func = is_async_callable  # the name this module has always exported


class OperationManager:
    """Name → async callable."""

    def __init__(self) -> None:
        self.registry: dict[str, Callable[..., Any]] = {}

    # Any: an operation's own keywords and result
    def register(self, operation: str, func: Callable[..., Any], update: bool = False) -> None:
        if not isinstance(operation, str) or not operation:
            raise ValueError("An operation needs a non-empty string name.")
        if operation in self.registry and not update:
            raise ItemExistsError(
                f"Operation `{operation}` is already registered; pass `update=True` to replace it."
            )
        if not is_coro_func(func):
            raise ValueError(
                f"Operation `{operation}` must be an async function (`async def`); "
                f"{getattr(func, '__name__', type(func).__name__)!s} is not."
            )
        self.registry[operation] = func

    # Any: an operation's own keywords and result
    def get(self, operation: str) -> Callable[..., Any] | None:
        return self.registry.get(operation)

    def __contains__(self, operation: object) -> bool:
        return operation in self.registry

    def __len__(self) -> int:
        return len(self.registry)

    def __repr__(self) -> str:
        return f"OperationManager({sorted(self.registry)})"
