"""`Operation`: a graph node that runs one named operation on a branch (ADR-0021 D2).

A node stores only an operation name and keyword parameters, and settles to one value.
Names resolve exactly as `Session.run_operation` resolves them, through the shared helpers
below -- one name, one contract, whether it is run directly or from a graph:

- lookup is `Branch.get_operation`: a Branch attribute first, then the session registry;
- a Branch method is called bound, ``method(**parameters)``; a registered function receives
  the branch first, ``func(branch, **parameters)``;
- an awaitable result is awaited, and an async generator (``ReActStream``, ``run``) is
  consumed into a list, because a node settles to one value.

Failure: a missing operation becomes `OperationError("Unsupported operation type: <name>")`;
it and any other exception are recorded on the node (``status="failed"``, ``error``) and
re-raised, so a direct caller sees the real exception and a flow sees the record.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from ..errors import OperationError
from ..protocols.element import Element
from ..shapes import Keywords

if TYPE_CHECKING:
    from ..session.branch import Branch

__all__ = [
    "BranchOperations",
    "Operation",
    "OperationStatus",
    "call_operation",
    "resolve_operation",
]

OperationStatus = Literal["pending", "running", "completed", "failed", "skipped"]

#: The operation names ADR-0021 D1 lists, as a typing aid for ``Operation.operation``: not a
#: closed registry. It names ``select`` (no Branch method; it resolves only when a session
#: registers it) and omits ``run`` and ``chat_and_record`` (Branch methods, so they resolve),
#: which is why the field is ``BranchOperations | str``.
BranchOperations = Literal[
    "chat",
    "operate",
    "communicate",
    "parse",
    "ReAct",
    "select",
    "interpret",
    "act",
    "ReActStream",
]


# Any: an operation's own keywords and result
def resolve_operation(branch: Branch, operation: str) -> Callable[..., Any] | None:
    """What runs ``operation`` on ``branch`` given keyword arguments only, or ``None``.

    Built-in attributes come back bound; a registered function is bound to the branch as its
    first argument. A non-callable attribute (``messages``, ``name``) is not an operation.
    """
    found = branch.get_operation(operation)
    if found is None or not callable(found):
        return None
    if hasattr(branch, operation):  # attribute-first, as get_operation decided
        return found
    return functools.partial(found, branch)


def unknown_operation_hint(branch: Branch, operation: str) -> str:
    """The fix to suggest when ``operation`` does not resolve on ``branch``."""
    if hasattr(branch, operation):
        return f"`{operation}` is a Branch attribute, not something a branch can run."
    if branch.attachment.session_id is None:
        return (
            f"`{operation}` is not a Branch method and this branch belongs to no session; "
            "include it in the session that registered the operation."
        )
    return (
        f"`{operation}` is neither a Branch method nor registered in this session; register "
        f"it with `session.register_operation({operation!r}, func)`."
    )


# Any: an operation's own keywords and result
async def call_operation(func: Callable[..., Any], kwargs: Keywords) -> Any:
    """Call a resolved operation and settle its outcome to one value."""
    outcome = func(**kwargs)
    if inspect.isasyncgen(outcome):
        try:
            return [item async for item in outcome]
        finally:
            await outcome.aclose()
    if inspect.isawaitable(outcome):
        return await outcome
    return outcome


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Operation(Element):
    """One named operation with its keyword parameters, runnable on a branch.

    ``branch_id`` says which branch a flow should run it on (``None``: the flow's default).
    After `invoke`, ``status``, ``result``, ``error`` and the timing fields tell what happened.
    """

    operation: BranchOperations | str
    parameters: dict[str, Any] = Field(default_factory=dict)
    branch_id: str | None = None
    name: str | None = None
    status: OperationStatus = "pending"
    result: Any = None
    error: str | None = None
    started_at: float | None = None
    ended_at: float | None = None

    @field_validator("operation")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value:
            raise ValueError(
                "`operation` needs the name of a Branch method or registered operation."
            )
        return value

    @field_validator("branch_id", mode="before")
    @classmethod
    def _branch_ref(cls, value: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        return str(getattr(value, "id", value))  # a Branch or a UUID

    @property
    def label(self) -> str:
        """How errors and flow results name this node: its ``name`` or operation and id."""
        return self.name or f"{self.operation}#{self.id.hex[:8]}"

    @property
    def duration(self) -> float | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return self.ended_at - self.started_at

    def reset(self) -> None:
        """Back to ``pending`` with no result, so the node can run again."""
        self.status, self.result, self.error = "pending", None, None
        self.started_at = self.ended_at = None

    async def _invoke(self, branch: Branch, parameters: dict[str, Any]) -> Any:
        func = resolve_operation(branch, self.operation)
        if func is None:
            raise OperationError(
                f"Unsupported operation type: {self.operation}. "
                + unknown_operation_hint(branch, self.operation)
            )
        return await call_operation(func, parameters)

    # Any: the operation's result, of its own type
    async def invoke(self, branch: Branch, *, parameters: Keywords | None = None) -> Any:
        """Run on ``branch``, record the outcome and return the result (or re-raise).
        ``parameters`` replaces the node's own for this call only (a flow passes upstream
        results this way without editing the node)."""
        if self.status == "running":
            raise OperationError(
                f"Operation `{self.label}` is already running; wait for it, or run a copy."
            )
        self.reset()
        self.status = "running"
        self.started_at = time.time()
        try:
            result = await self._invoke(
                branch, dict(self.parameters if parameters is None else parameters)
            )
        except BaseException as exc:
            self.status = "failed"
            self.error = _describe(exc) if isinstance(exc, Exception) else "cancelled"
            raise
        finally:
            self.ended_at = time.time()
        self.result = result
        self.status = "completed"
        return result

    def __repr__(self) -> str:
        return f"Operation({self.label!r}, status={self.status!r})"
