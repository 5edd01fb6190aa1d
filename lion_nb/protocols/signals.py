"""Typed signals a branch emits to whoever observes it (a Session, a widget, a test).

Signals are plain, cheap objects: a run's lifecycle (`RunStart`, then exactly one of `RunEnd`
or `RunFailed`), every recorded message (`MessageAdded`), and what capability extraction
finds in assistant text (`StructuredOutput`, or a plain `Signal` whose payload is a
`CapabilityViolation` / `EmissionRejected`). Observers subscribe by type; a subscription to a
payload type (``CapabilityViolation``) matches signals carrying that payload.

`deliver` is the only way signals (and a run's changes, `Observers`) reach observers, and
`emit_safely` the way to deliver one signal to many: each callback's error is logged and
swallowed, so an observer can never change an operation's result nor keep the next observer
from its signal.

A Session keeps no history of its signals; whoever records them (the notebook layer, for its
Session) can offer them with `keep_history`, so that a view built later (`SignalLog`) starts
with the recent ones (`recent_signals`) instead of an empty table.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Iterable
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
    "deliver",
    "emit_safely",
    "keep_history",
    "recent_signals",
    "settle",
]

logger = logging.getLogger("lion_nb.signals")

_HISTORIES: Any = None  # WeakKeyDictionary: an observed object -> what returns its signals


# Any: any object views record signals of; `recorded` returns them
def keep_history(owner: Any, recorded: Any) -> None:
    """Offer ``recorded()`` (the signals recorded of ``owner``, oldest first) to views of
    ``owner`` built later; ``None`` withdraws it."""
    global _HISTORIES
    import weakref

    if _HISTORIES is None:
        _HISTORIES = weakref.WeakKeyDictionary()
    if recorded is None:
        _HISTORIES.pop(owner, None)
    else:
        _HISTORIES[owner] = recorded


# Any: any object views record signals of
def recent_signals(owner: Any) -> list[Signal]:
    """The signals recorded of ``owner`` so far, oldest first (none when nobody records)."""
    recorded = _HISTORIES.get(owner) if _HISTORIES is not None else None
    if recorded is None:
        return []
    try:
        return list(recorded())
    except Exception:  # a view must open even if the recorder is broken
        logger.warning("the recorded signals could not be read", exc_info=True)
        return []


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
    block: dict[str, Any] | None = None


class CapabilityViolation(BaseModel):
    """A block that mixes granted and ungranted keys."""

    offending: list[str]
    allowed: list[str]
    block: dict[str, Any] | None = None


class EmissionRejected(BaseModel):
    """A wholly granted block that failed validation."""

    branch_name: str = ""
    error: str
    block: dict[str, Any] | None = None


def deliver(
    # Any: any callback and subject; its result, awaitable or not
    callback: Any,
    subject: Any,
    log: logging.Logger = logger,
    failure: str | None = None,
) -> Any:
    """``callback(subject)``, its error logged to ``log`` (as ``failure`` when given) and
    swallowed. Returns what the callback returned: an awaitable goes to `settle`."""
    try:
        return callback(subject)
    except Exception:
        _failed(callback, subject, log, failure)
        return None


async def settle(
    # Any: an async callback's result and the callback, any subject
    awaitable: Any,
    callback: Any,
    subject: Any,
    log: logging.Logger = logger,
    failure: str | None = None,
) -> None:
    """Await what an async ``callback`` returned, its error logged and swallowed."""
    try:
        await awaitable
    except Exception:
        _failed(callback, subject, log, failure)


def _failed(callback: Any, subject: Any, log: logging.Logger, failure: str | None) -> None:
    if failure is not None:
        log.warning(failure, exc_info=True)
    else:
        kind = getattr(subject, "kind", None) or type(subject).__name__
        log.warning("observer %r failed on %s", callback, kind, exc_info=True)


async def emit_safely(callbacks: Iterable[Callable[..., object]], signal: Signal) -> None:
    """Call each callback (sync or async) with ``signal``; log and swallow their errors."""
    for callback in list(callbacks):
        result = deliver(callback, signal)
        if inspect.isawaitable(result):
            await settle(result, callback, signal)
