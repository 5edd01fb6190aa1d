"""What a Session's public seams hold at one moment: to roll an extension back, or to say
what it added.

The seams an extension may use are the session's named operations and observers, its
branches (membership and the default), its offered memory store, and on each member branch
the context providers, the tools and the memory store. `SeamSnapshot` copies the *contents*
of each (the registries themselves are shared objects that branches hold by identity, so
they are refilled, never replaced) and can put them back or compare them with the present.
So that a rolled-back session is truly the one before, it also keeps the session's and each
member branch's name, user and metadata (a deep copy) and which messages each branch holds,
in order (a message edited in place stays edited).

This module reads and writes private slots of `Session`, `Branch`, `OperationManager`,
`SignalBus`, `ContextProviderRegistry` and `ActionManager`, in one place, so that the loader
in `lion_nb.extensions` does not. Anything else an extension changes (files, globals, a
message's fields) is outside the snapshot and is not rolled back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["SeamChanges", "SeamSnapshot"]


@dataclass(frozen=True)
class SeamChanges:
    """What was added (or replaced) since a snapshot, by name."""

    operations: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    branches: tuple[str, ...] = ()
    observers: int = 0

    def __bool__(self) -> bool:
        return bool(
            self.operations or self.providers or self.tools or self.branches or self.observers
        )

    def describe(self) -> str:
        """``operations a, b · providers c · 1 observer`` (empty when nothing changed)."""
        parts = [
            f"{label} {', '.join(names)}"
            for label, names in (
                ("operations" if len(self.operations) > 1 else "operation", self.operations),
                ("providers" if len(self.providers) > 1 else "provider", self.providers),
                ("tools" if len(self.tools) > 1 else "tool", self.tools),
                ("branches" if len(self.branches) > 1 else "branch", self.branches),
            )
            if names
        ]
        if self.observers:
            parts.append(f"{self.observers} observer" + ("s" if self.observers > 1 else ""))
        return " · ".join(parts)


def _identity(obj: Any) -> tuple[Any, Any, dict[str, Any]]:
    import copy

    try:
        metadata = copy.deepcopy(obj.metadata)
    except Exception:  # a value that cannot be copied: keep the references at least
        metadata = dict(obj.metadata)
    return obj.name, obj.user, metadata


def _restore_identity(obj: Any, identity: tuple[Any, Any, dict[str, Any]]) -> None:
    name, user, metadata = identity
    if obj.name != name:
        obj.name = name
    if obj.user != user:
        obj.user = user
    if obj.metadata != metadata:
        obj.metadata.clear()
        obj.metadata.update(metadata)


class _BranchState:
    __slots__ = (
        "branch",
        "budget",
        "entries",
        "identity",
        "memory",
        "messages",
        "providers",
        "tools",
    )

    def __init__(self, branch: Any):
        self.branch = branch
        self.identity = _identity(branch)
        self.messages = list(branch.messages)
        providers = self.providers = branch.context.providers
        self.entries = list(providers._entries) if providers is not None else []
        self.budget = providers.budget if providers is not None else None
        self.tools = dict(branch.acts.registry)
        self.memory = branch.memory_claim

    def restore(self) -> None:
        branch = self.branch
        branch.context.providers = self.providers
        if self.providers is not None:
            self.providers._entries[:] = self.entries
            self.providers.budget = self.budget
        registry = branch.acts.registry
        registry.clear()
        registry.update(self.tools)
        branch.memory_claim = self.memory
        _restore_identity(branch, self.identity)
        pile = branch.messages
        if [m.id for m in pile] != [m.id for m in self.messages]:
            pile.clear()
            for message in self.messages:
                pile.append(message)
            manager = branch.msgs
            manager._invalidate()
            manager._order_changed()

    def added_providers(self) -> list[str]:
        current = self.branch.context.providers
        if current is None:
            return []
        before = {id(e) for e in self.entries} if current is self.providers else set()
        return [e.name for e in current._entries if id(e) not in before]

    def added_tools(self) -> list[str]:
        return [n for n, t in self.branch.acts.registry.items() if self.tools.get(n) is not t]


class SeamSnapshot:
    """The seams of ``session`` now; `restore` puts them back, `changes` says what is new."""

    def __init__(self, session: Any):
        self.session = session
        self.operations = dict(session._operation_manager.registry)
        self.subscribers = list(session._observer._subscribers)
        self.members = list(session._branches)
        self.default_id = session._default_id
        self.memory = session._memory
        self.identity = _identity(session)
        self.branches = [_BranchState(b) for b in self.members]

    def changes(self) -> SeamChanges:
        session = self.session
        ops = session._operation_manager.registry
        before = {id(s) for s in self.subscribers}
        known = {b.id for b in self.members}
        providers: list[str] = []
        for state in self.branches:
            providers += [n for n in state.added_providers() if n not in providers]
        tools: list[str] = []
        for state in self.branches:
            tools += [n for n in state.added_tools() if n not in tools]
        return SeamChanges(
            operations=tuple(n for n, f in ops.items() if self.operations.get(n) is not f),
            providers=tuple(providers),
            tools=tuple(tools),
            branches=tuple(b.name or str(b.id) for b in session._branches if b.id not in known),
            observers=sum(1 for s in session._observer._subscribers if id(s) not in before),
        )

    def restore(self) -> None:
        """Put every seam back as it was; new branches are removed, removed ones return."""
        session = self.session
        registry = session._operation_manager.registry
        registry.clear()
        registry.update(self.operations)
        session._observer._subscribers[:] = self.subscribers
        known = {b.id for b in self.members}
        for branch in list(session._branches):
            if branch.id not in known:
                session.remove_branch(branch)
        gone = [b for b in self.members if b.id not in session._branches]
        if gone:
            session.include_branches(gone)
        session._default_id = self.default_id
        session._memory = self.memory
        _restore_identity(session, self.identity)
        for state in self.branches:
            state.restore()
