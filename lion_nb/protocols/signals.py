"""Typed signals a branch emits to whoever observes it (a Session, a widget, a test).

Signals are plain, cheap objects: a run's lifecycle (`RunStart`, then exactly one of `RunEnd`
or `RunFailed`), every recorded message (`MessageAdded`), and what capability extraction
finds in assistant text (`StructuredOutput`, or a plain `Signal` whose payload is a
`CapabilityViolation` / `EmissionRejected`). Observers subscribe by type; a subscription to a
payload type (``CapabilityViolation``) matches signals carrying that payload.

`emit_safely` is the only way signals reach observers: each callback's error is logged and
swallowed, so an observer can never change an operation's result.
"""

from __future__ import annotations

import inspect
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

__all__ = [
    "CapabilityViolation",
    "EmissionRejected",
    "MessageAdded",
    "RunEnd",
    "RunFailed",
    "RunStart",
    "Signal",
    "StructuredOutput",
    "emit_safely",
]

logger = logging.getLogger("lion_nb.signals")


@dataclass(slots=True, kw_only=True)
class Signal:
    """Something that happened on a branch. ``payload`` carries a typed body when needed."""

    branch_id: str | None = None
    branch_name: str | None = None
    payload: Any = None
    timestamp: float = field(default_factory=time.time)

    @property
    def kind(self) -> str:
        return type(self).__name__


@dataclass(slots=True, kw_only=True)
class RunStart(Signal):
    run_id: str
    operation: str


@dataclass(slots=True, kw_only=True)
class RunEnd(Signal):
    run_id: str
    operation: str
    duration: float = 0.0
    result: Any = None


@dataclass(slots=True, kw_only=True)
class RunFailed(Signal):
    run_id: str
    operation: str
    duration: float = 0.0
    error: BaseException | None = None


@dataclass(slots=True, kw_only=True)
class MessageAdded(Signal):
    message: Any = None


@dataclass(slots=True, kw_only=True)
class StructuredOutput(Signal):
    """A fenced JSON block whose keys are all granted, validated into ``data``."""

    data: Any = None
    block: dict | None = None


class CapabilityViolation(BaseModel):
    """A block that mixes granted and ungranted keys."""

    offending: list[str]
    allowed: list[str]
    block: dict | None = None


class EmissionRejected(BaseModel):
    """A wholly granted block that failed validation."""

    branch_name: str = ""
    error: str
    block: dict | None = None


async def emit_safely(callbacks: list[Any], signal: Signal) -> None:
    """Call each callback (sync or async) with ``signal``; log and swallow their errors."""
    for callback in list(callbacks):
        try:
            result = callback(signal)
            if inspect.isawaitable(result):
                await result
        except Exception:
            logger.warning("observer %r failed on %s", callback, signal.kind, exc_info=True)
