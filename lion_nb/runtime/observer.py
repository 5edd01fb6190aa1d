"""`SignalBus`: subscribe callbacks by signal type; deliver without letting them break a run.

A subscription to a `Signal` subclass matches that class and its subclasses; a subscription
to a payload type (``CapabilityViolation``) matches signals whose ``payload`` is one.
Every callback is called through `deliver` (`lion_nb.protocols.signals`), which isolates it.
Synchronous callbacks run at once when a signal is dispatched; asynchronous ones run as
tasks that the branch drains before it reports a run's end. A callback that cannot be
called with the signal as its one argument (``def cb(signal, ctx)``) is refused with a
``TypeError`` when it is registered, not left to fail on every signal.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import Any

from ..protocols.signals import Signal, deliver, emit_safely, settle

__all__ = ["Observers", "SignalBus", "Subscription"]

logger = logging.getLogger("lion_nb.signals")


class Observers(list[Callable[..., Any]]):
    """The callbacks called on every change of a run (`BatchRun.on_progress`,
    `EvalRun.on_change`); one that fails is logged to ``log`` as ``failure``, never breaks the
    run."""

    def __init__(self, log: logging.Logger, failure: str):
        super().__init__()
        self._log, self._failure = log, failure

    # Any: a callback's result is ignored (sync) or awaited (async)
    def add(self, callback: Callable[[Any], Any]) -> Callable[[], None]:
        """Add ``callback``; returns a function that removes it."""
        self.append(callback)

        def cancel() -> None:
            if callback in self:
                self.remove(callback)

        return cancel

    def notify(self, run: object) -> None:
        for callback in list(self):
            deliver(callback, run, self._log, self._failure)


class Subscription:
    """What `observe` returns: call it (or ``.cancel()``) to unsubscribe."""

    __slots__ = ("_bus", "_entry")

    # Any: the callback's result is ignored, or awaited when async
    def __init__(self, bus: SignalBus, entry: tuple[type, Callable[..., Any]]):
        self._bus, self._entry = bus, entry

    def cancel(self) -> None:
        try:
            self._bus._subscribers.remove(self._entry)
        except ValueError:
            pass

    __call__ = cancel

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()


class SignalBus:
    def __init__(self) -> None:
        self._subscribers: list[tuple[type, Callable[..., Any]]] = []

    # Any: the callback's result is ignored, or awaited when async
    def observe(self, signal_type: type, callback: Callable[..., Any]) -> Subscription:
        if not isinstance(signal_type, type):
            raise TypeError(f"`observe` takes a signal class, got {signal_type!r}.")
        if not callable(callback):
            raise TypeError(f"`observe` takes a callable, got {callback!r}.")
        _check_takes_one(callback)
        entry = (signal_type, callback)
        self._subscribers.append(entry)
        return Subscription(self, entry)

    def __len__(self) -> int:
        return len(self._subscribers)

    def _matching(self, signal: Signal) -> list[Callable[..., Any]]:
        payload = signal.payload
        return [
            cb
            for kind, cb in list(self._subscribers)
            if isinstance(signal, kind) or (payload is not None and isinstance(payload, kind))
        ]

    async def emit(self, signal: Signal) -> None:
        """Deliver ``signal`` and wait for every callback (errors logged, swallowed)."""
        await emit_safely(self._matching(signal), signal)

    def dispatch(self, signal: Signal) -> asyncio.Task[None] | None:
        """Deliver now to sync callbacks; start a task for async ones (returned, to drain)."""
        pending = []
        for callback in self._matching(signal):
            result = deliver(callback, signal)
            if inspect.isawaitable(result):
                pending.append((result, callback))
        if not pending:
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            for awaitable, _ in pending:  # no loop: nothing can run it; do not leak a warning
                close = getattr(awaitable, "close", None)
                if close:
                    close()
            logger.warning("async observers skipped for %s: no running event loop", signal.kind)
            return None
        return loop.create_task(_await_all(pending, signal))


def _check_takes_one(callback: Callable[..., Any]) -> None:
    """Refuse, at registration, a callback that cannot be called with the one signal: it
    would otherwise be accepted and then fail -- logged, unseen -- on every signal. A
    callable whose signature cannot be read is given the benefit of the doubt."""
    try:
        signature = inspect.signature(callback)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(object())
    except TypeError as exc:
        name = getattr(callback, "__qualname__", None) or repr(callback)
        raise TypeError(
            f"Observer `{name}{signature}` cannot be called with one argument ({exc}): an "
            "observer receives the signal alone, `callback(signal)`. The signal carries "
            "`branch_id`, `branch_name` and, for run signals, `run_id` and `operation`."
        ) from None


async def _await_all(pending: list[tuple[Any, Any]], signal: Signal) -> None:
    for awaitable, callback in pending:
        await settle(awaitable, callback, signal)
