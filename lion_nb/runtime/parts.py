"""The run-time parts of a branch and of a session, and how the run-time floor sees them.

`Spend` is what a branch or a session has spent and may spend (its ledger, built when first
asked, and its budget). `Attachment` is a branch's tie to the session that owns it: the
session's id, its signal bus and hooks, and the message signals still being delivered.
Both are plain objects the owner creates on first use, so building a branch stays cheap.

`Spender` and `Attached` are the shapes of a branch and a session this floor works on, so
that it needs no import of `lion_nb.session` (which sits above it), not even for typing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

if TYPE_CHECKING:
    from ..protocols.signals import Signal
    from .observer import SignalBus

__all__ = ["Attached", "Attachment", "Spend", "Spender"]


class Spend:
    """A ledger (``None`` until first asked) and a budget (``None``: none)."""

    __slots__ = ("budget", "ledger")

    def __init__(self) -> None:
        # a `Ledger` and a `Budget`: their modules take the shapes below from this one, so
        # naming their classes here would make the two import each other
        self.ledger: Any = None
        self.budget: Any = None


class Attachment:
    """A branch's attachment to its session; a detached branch may still have an observer
    of its own (``branch.observe`` outside a session)."""

    __slots__ = ("hooks", "observer", "pending", "session_id")

    def __init__(self) -> None:
        self.session_id: Any = None  # the owning session's UUID (``None``: no session)
        self.observer: SignalBus | None = None
        self.hooks: Any = None  # the session's optional hook bus, passed through opaque
        self.pending: set[asyncio.Task[Any]] = set()

    # Any: the session's id and hook bus, kept opaque for it
    def attach(self, session_id: Any, observer: SignalBus, hooks: Any) -> None:
        self.session_id, self.observer, self.hooks = session_id, observer, hooks

    def detach(self) -> None:
        self.session_id = self.observer = self.hooks = None

    def dispatch(self, signal: Signal) -> None:
        """Hand ``signal`` to the observer; a delivery still running is kept for `drain`."""
        observer = self.observer
        if observer is not None:
            task = observer.dispatch(signal)
            if task is not None:
                pending = self.pending
                pending.add(task)
                task.add_done_callback(pending.discard)

    async def drain(self) -> None:
        """Wait until every signal dispatched so far has been delivered."""
        while self.pending:
            await asyncio.gather(*list(self.pending), return_exceptions=True)


class Spender(Protocol):
    """A branch as the ledger, the budgets and the lifecycle see it."""

    @property
    def id(self) -> UUID: ...
    @property
    def id_text(self) -> str: ...
    @property
    def name(self) -> str | None: ...
    # Any: the branch's messages, read by the token estimate
    @property
    def messages(self) -> Iterable[Any]: ...  # the branch's messages, oldest first
    @property
    def spend(self) -> Spend: ...
    @property
    def attachment(self) -> Attachment: ...


class Attached(Protocol):
    """A session as the ledger and the budgets see it."""

    @property
    def branches(self) -> Iterable[Spender]: ...
    @property
    def spend(self) -> Spend: ...
