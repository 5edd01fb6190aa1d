"""Run lifecycle: who emits RunStart / RunEnd / RunFailed, and when (ADR-0021 D4).

`observed_run` wraps one awaited operation (``communicate``, ``operate``, ...): it emits
`RunStart`, awaits, drains the branch's pending message signals, then emits exactly one
terminal signal. Generators (``run``) use `RunLifecycle` directly, because their work happens
during iteration.

Nested turns are suppressed through a task-scoped context variable holding the ids of the
branches whose run is in progress in this task: while an observed run is active, operations it
calls on *the same branch* through the facade (a custom Middle calling
``branch.communicate``, ReAct's rounds) do not announce runs of their own. A turn on another
branch (a tool that consults a second branch) is that branch's own run and is reported. Because
it is a ContextVar, concurrent tasks on one branch never suppress each other.

Observer errors are logged and swallowed; emission is shielded from cancellation so a
cancelled run still reports its one terminal signal.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ..protocols.element import new_id
from ..protocols.signals import RunEnd, RunFailed, RunStart, Signal

if TYPE_CHECKING:
    from .parts import Spender as Branch

__all__ = ["RunLifecycle", "in_nested_turn", "nested_turns", "observed_run"]

T = TypeVar("T")

_ALL = "*"
_NESTED: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "lion_nb_nested_turn", default=frozenset()
)


def in_nested_turn(branch: Branch | None = None) -> bool:
    """Whether a turn on ``branch`` (on any branch, when not given) is nested in this task."""
    active = _NESTED.get()
    if branch is None:
        return bool(active)
    return _ALL in active or branch.id_text in active


class nested_turns:
    """Mark turns on ``branch`` (on every branch, when not given) inside as nested: no
    lifecycle of their own."""

    __slots__ = ("_key", "_token")

    def __init__(self, branch: Branch | None = None):
        self._key = _ALL if branch is None else branch.id_text

    def __enter__(self) -> None:
        self._token = _NESTED.set(_NESTED.get() | {self._key})

    def __exit__(self, *exc: object) -> None:
        _NESTED.reset(self._token)


class RunLifecycle:
    """One start and at most one terminal signal for one run on one branch."""

    __slots__ = ("active", "branch", "operation", "run_id", "started", "terminated")

    def __init__(self, branch: Branch, operation: str):
        self.branch = branch
        self.operation = operation
        self.run_id = new_id().hex
        self.active = branch.attachment.observer is not None and not in_nested_turn(branch)
        self.started = 0.0
        self.terminated = False

    def _base(self) -> dict[str, Any]:
        return {
            "branch_id": str(self.branch.id),
            "branch_name": self.branch.name,
            "run_id": self.run_id,
            "operation": self.operation,
        }

    async def start(self) -> None:
        self.started = time.perf_counter()
        if self.active:
            await _emit(self.branch, RunStart(**self._base()))

    async def end(self, result: object = None) -> None:
        await self._terminal(RunEnd, result=result)

    async def fail(self, error: BaseException) -> None:
        await self._terminal(RunFailed, error=error)

    async def _terminal(self, cls: type[Signal], **extra: Any) -> None:
        if self.terminated:
            return
        self.terminated = True
        if not self.active:
            return
        duration = time.perf_counter() - self.started
        with anyio.CancelScope(shield=True):
            await self.branch.attachment.drain()
            # ``cls`` is RunEnd or RunFailed, both with a ``duration``
            signal = cls(**self._base(), duration=duration, **extra)  # type: ignore[call-arg]
            await _emit(self.branch, signal)


async def _emit(branch: Branch, signal: Signal) -> None:
    observer = branch.attachment.observer
    if observer is not None:
        try:
            await observer.emit(signal)
        except Exception:  # the bus already contains callback errors; this is belt and braces
            import logging

            logging.getLogger("lion_nb.signals").warning("observer failed", exc_info=True)


async def observed_run(branch: Branch, awaitable: Awaitable[T], operation: str) -> T:
    """Await ``awaitable`` as one observed run of ``operation`` on ``branch``."""
    if branch.attachment.observer is None or in_nested_turn(branch):
        return await awaitable
    life = RunLifecycle(branch, operation)
    await life.start()
    token = _NESTED.set(_NESTED.get() | {branch.id_text})
    try:
        result = await awaitable
    except BaseException as exc:
        await life.fail(exc)
        raise
    finally:
        _NESTED.reset(token)
    await life.end(result)
    return result
