"""`Session`: a set of branches sharing one operation registry, one signal bus and,
optionally, one memory store (ADR-0017 of this project; ADR-0016 D4; ADR-0021 D2).

A Session is an `Element` (identity, ``name``, ``user``) whose coordination state lives in
private attributes, like `Branch`. It coordinates; it never owns conversation data.

Attaching (`include_branches`) sets on each branch, and detaching (`remove_branch`) undoes:

=================  ==========================================  ==============================
branch field       on inclusion                                on removal
=================  ==========================================  ==============================
owner              this session's id                           ``None``
operation registry this session's `OperationManager` (shared)  a fresh private one
observer           this session's `SignalBus`                  ``None``
hooks              this session's hook bus (may be ``None``)   ``None``
memory             the session store, only if unclaimed        kept
user               the session user, only if the branch has    kept
                   none (an identity may already be stamped
                   on its messages)
=================  ==========================================  ==============================

Memory is first-claim: a branch that was given a store, or whose ``memory`` was read (which
creates its private store), keeps it. A branch owned by another session is refused, never
taken; including a branch twice is a no-op. Messages, models, tools, logs, metadata, context
providers and capability grants always stay with the branch.

A Session starts with one default branch unless it is given one (``default_branch=``), so
``session.default_branch`` is usable at once; removing the default selects the next branch.

Named operations: a registered function is called as ``func(branch, **kwargs)``; a Branch
method as ``method(**kwargs)`` (see `lion_nb.operations.node`, shared with graph nodes).

Closing: ``await session.aclose()`` (or ``session.close()``) closes the connection pools of
the branches' models and stops CLI agent runs still going; nothing the session started is
left running. The session stays usable (`lion_nb.session.closing`).

Loading: `from_dict` treats its input as untrusted; any malformed field is a
`ConfigurationError` naming it (`lion_nb.untrusted`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast
from uuid import UUID

from pydantic import PrivateAttr

from ..errors import ConfigurationError, ItemNotFoundError
from ..operations.manager import OperationManager
from ..operations.node import call_operation, resolve_operation, unknown_operation_hint
from ..protocols.element import Element
from ..protocols.pile import Pile
from ..runtime._live import SESSIONS as _SESSIONS  # so that a refusal can name a branch's owner
from ..runtime.observer import SignalBus, Subscription
from ..runtime.parts import Spend
from .branch import Branch

if TYPE_CHECKING:
    from ..mcp.server import MCPServer

__all__ = ["Session"]

_NO_DEFAULT: Any = object()  # from_dict of a session that had no branches


def _label(branch: Branch) -> str:
    return f"`{branch.name}` ({branch.id})" if branch.name else f"`{branch.id}`"


class Session(Element):
    """Branches, a shared named-operation registry and a signal bus. See the module docstring."""

    name: str | None = None
    user: str | None = None

    _branches: Pile[Branch] = PrivateAttr(default_factory=lambda: Pile(item_type=Branch))
    _default_id: UUID | None = PrivateAttr(None)
    _operation_manager: OperationManager = PrivateAttr(default_factory=OperationManager)
    _observer: SignalBus = PrivateAttr(default_factory=SignalBus)
    _hooks: Any = PrivateAttr(None)
    _memory: Any = PrivateAttr(None)
    if TYPE_CHECKING:  # pydantic's `dict | None`: always the dict once built
        __pydantic_private__: dict[str, Any]
    _spend: Spend = PrivateAttr(default_factory=Spend)  # ledger and budget (`lion_nb.runtime`)
    _mcp_servers: dict = PrivateAttr(default_factory=dict)

    def __init__(
        self,
        *,
        name: str | None = None,
        user: Any = None,
        default_branch: Branch | None = None,
        memory: Any = None,
        hooks: Any = None,
        **kwargs: Any,
    ):
        if user is not None and not isinstance(user, str):
            user = str(getattr(user, "id", user))
        super().__init__(name=name, user=user, **kwargs)
        self._memory = memory
        self._hooks = hooks
        _SESSIONS[self.id] = self
        if default_branch is _NO_DEFAULT:
            return
        if default_branch is None:
            self.new_branch()
        else:
            self.include_branches(default_branch)

    # -- accessors ---------------------------------------------------------------------------------
    @property
    def branches(self) -> Pile[Branch]:
        """A snapshot of the member branches, in inclusion order. Change membership with
        `include_branches` / `remove_branch`, never by editing this Pile."""
        return Pile(self._branches, item_type=Branch)

    @property
    def default_branch(self) -> Branch | None:
        return self._branches.get(self._default_id) if self._default_id is not None else None

    @default_branch.setter
    def default_branch(self, ref: Branch | UUID | str) -> None:
        """Make ``ref`` the default; a Branch not yet in the session is included first."""
        if isinstance(ref, Branch) and ref not in self._branches:
            self.include_branches(ref)
        self._default_id = self.get_branch(ref).id

    @property
    def operations(self) -> list[str]:
        """Names of the operations registered on this session, sorted."""
        return sorted(self._operation_manager.registry)

    @property
    def memory(self) -> Any:
        """The store offered to branches that have not claimed one (``None``: none offered)."""
        return self._memory

    @property
    def hooks(self) -> Any:
        return self._hooks

    def __len__(self) -> int:
        return len(self._branches)

    def __contains__(self, ref: object) -> bool:
        return ref in self._branches

    def __repr__(self) -> str:
        label = f"{self.name!r}, " if self.name else ""
        default = self.default_branch
        shown = (default.name or str(default.id)[:8]) if default is not None else None
        return f"Session({label}branches={len(self._branches)}, default={shown!r})"

    # -- membership --------------------------------------------------------------------------------
    def new_branch(
        self,
        *,
        name: str | None = None,
        system: Any = None,
        chat_model: Any = None,
        tools: Any = None,
        **branch_kwargs: Any,
    ) -> Branch:
        """Create a branch (the session user is its user unless ``user=`` says otherwise)
        and include it."""
        branch_kwargs.setdefault("user", self.user)
        branch = Branch(
            name=name, system=system, chat_model=chat_model, tools=tools, **branch_kwargs
        )
        self.include_branches(branch)
        return branch

    def include_branches(self, branches: Branch | Iterable[Branch]) -> None:
        """Attach one branch or several (see the module docstring). All are checked before
        any is attached, so a refused branch leaves the session unchanged."""
        items = [branches] if isinstance(branches, Branch) else list(branches)
        for branch in items:
            if not isinstance(branch, Branch):
                raise TypeError(
                    f"`include_branches` takes Branch objects, got {type(branch).__name__}."
                )
            owner = branch.attachment.session_id
            if owner is not None and owner != self.id:
                other = cast("Session | None", _SESSIONS.get(owner))  # it holds Sessions
                other_label = _label_session(other) if other is not None else f"`{owner}`"
                raise ConfigurationError(
                    f"Branch {_label(branch)} belongs to session {other_label}; it cannot also "
                    f"join session {_label_session(self)}. Remove it from the other session "
                    "first (`other_session.remove_branch(branch)`), or include a copy made "
                    "with `branch.clone()`."
                )
        mine = self.__pydantic_private__  # see `_attach`
        members = mine["_branches"]
        for branch in items:
            if branch.id in members:
                continue  # already a member: nothing to redo
            self._attach(branch)
            members.append(branch)
            if mine["_default_id"] is None:
                mine["_default_id"] = branch.id

    def _attach(self, branch: Branch) -> None:
        # the private dict directly: pydantic's path for private attributes costs
        # microseconds per access, which a batch pays once per item
        mine = self.__pydantic_private__
        branch.attach_to(
            self.id, mine["_observer"], mine["_hooks"], mine["_operation_manager"], mine["_memory"]
        )
        if branch.user is None and self.user is not None:
            branch.user = self.user
        if mine["_mcp_servers"]:  # the session's MCP servers serve its new member too
            from ..mcp.connect import attach_tools

            for server in mine["_mcp_servers"].values():
                attach_tools(branch, server, getattr(server, "approve", None))

    def remove_branch(self, branch: Branch | UUID | str, *, delete: bool = False) -> Branch | None:
        """Detach a branch and return it, still holding its whole conversation (and any memory
        it adopted). ``delete=True`` also clears its messages (the system message stays) and
        logs, and returns ``None``."""
        target = self.get_branch(branch)
        self._branches.remove(target.id)
        target.detach()
        if self._mcp_servers:
            from ..mcp.connect import detach_tools

            for server in self._mcp_servers.values():
                detach_tools(target, server)
        if self._default_id == target.id:
            self._default_id = self._branches[0].id if len(self._branches) else None
        if delete:
            target.msgs.clear_messages()
            target.log_manager.clear()
            return None
        return target

    def split(self, branch: Branch | UUID | str | None = None) -> Branch:
        """Clone a member branch (the default when none is named) and include the clone."""
        source = self._resolve(branch)
        clone = source.clone()
        self.include_branches(clone)
        return clone

    def get_branch(self, ref: Branch | UUID | str) -> Branch:
        """A member branch by object, id, id string or name."""
        if isinstance(ref, Branch):
            if ref.id in self._branches:
                return self._branches[ref.id]
            raise ItemNotFoundError(
                f"Branch {_label(ref)} is not in session {_label_session(self)}; "
                "include it first with `session.include_branches(branch)`."
            )
        if isinstance(ref, UUID):
            found = self._branches.get(ref)
        elif isinstance(ref, str):
            found = self._branches.get(ref)
            if found is None:
                named = [b for b in self._branches if b.name == ref]
                if len(named) > 1:
                    ids = ", ".join(str(b.id) for b in named)
                    raise ConfigurationError(
                        f"{len(named)} branches are named `{ref}` ({ids}); refer to one by id."
                    )
                found = named[0] if named else None
        else:
            raise TypeError(
                f"A branch reference is a Branch, a UUID, an id string or a name; got "
                f"{type(ref).__name__}."
            )
        if found is None:
            known = ", ".join(_label(b) for b in self._branches) or "none"
            raise ItemNotFoundError(
                f"No branch `{ref}` in session {_label_session(self)}; its branches: {known}."
            )
        return found

    def _resolve(self, ref: Branch | UUID | str | None) -> Branch:
        if ref is not None:
            return self.get_branch(ref)
        default = self.default_branch
        if default is None:
            raise ConfigurationError(
                f"Session {_label_session(self)} has no branches; create one with "
                "`session.new_branch()` or name a branch explicitly."
            )
        return default

    # -- named operations --------------------------------------------------------------------------
    def register_operation(
        self, operation: str, func: Callable[..., Any], *, update: bool = False
    ) -> None:
        """Register an async ``func(branch, **kwargs)`` under ``operation`` for every member
        branch, present and future. A name that is a Branch attribute is registered but can
        never be reached (attribute-first lookup), so it draws a `UserWarning`."""
        if isinstance(operation, str) and _is_branch_attribute(operation):
            warnings.warn(
                f"`{operation}` is a Branch attribute, so `branch.get_operation({operation!r})` "
                f"and `run_operation({operation!r})` will always use `Branch.{operation}`, never "
                "the function registered here. Register it under another name.",
                UserWarning,
                stacklevel=2,
            )
        self._operation_manager.register(operation, func, update=update)

    def operation(
        self, name: str | Callable[..., Any] | None = None, *, update: bool = False
    ) -> Any:
        """Decorator: ``@session.operation`` or ``@session.operation("name")`` registers the
        function (under its ``__name__`` when no name is given) and returns it unchanged."""

        def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
            op_name = name if isinstance(name, str) else getattr(func, "__name__", None)
            if not op_name:
                raise ValueError(
                    "This callable has no `__name__`; give the operation a name: "
                    '`@session.operation("name")`.'
                )
            self.register_operation(op_name, func, update=update)
            return func

        if callable(name):  # used bare: @session.operation
            return decorate(name)
        return decorate

    async def run_operation(
        self, operation: str, *, branch: Branch | UUID | str | None = None, **kwargs: Any
    ) -> Any:
        """Run a Branch method or a registered operation on a member branch (the default
        branch when ``branch`` is not given) and return its result."""
        target = self._resolve(branch)
        func = resolve_operation(target, operation)
        if func is None:
            raise ValueError(
                f"Unknown operation: {operation}. " + unknown_operation_hint(target, operation)
            )
        return await call_operation(func, kwargs)

    # -- cost (lion_nb.runtime.ledger, lion_nb.runtime.budget) -----------------------------------
    def cost(self) -> Any:
        """What the model calls of this session's branches cost: a `Cost`."""
        from ..runtime.ledger import session_ledger

        return session_ledger(self).cost()

    def costs(self) -> Any:
        """One row per model call (``time``, ``branch``, ``model``, tokens, ``usd``), oldest
        first: a `CostRows` list; ``.to_dataframe()`` with the ``pandas`` extra."""
        from ..runtime.ledger import session_ledger

        names = {str(b.id): b.name for b in self._branches}
        return session_ledger(self).as_rows(names)

    @property
    def budget(self) -> Any:
        """The `Budget` over every call of the session's branches (``None``: none)."""
        return self.__pydantic_private__["_spend"].budget

    @budget.setter
    def budget(self, value: Any) -> None:
        from ..runtime.budget import Budget

        self.spend.budget = Budget.of(value)

    @property
    def spend(self) -> Spend:
        """What the session's branches spent and may spend: its ledger and budget."""
        return self.__pydantic_private__["_spend"]

    # -- batches (lion_nb.session.batch, batch_api) ------------------------------------------------
    def map(self, items: Any, instruction: Any = None, **kwargs: Any) -> Any:
        """Run one operation per item, each on its own clone of ``branch`` (the default
        branch), concurrently; returns a `BatchRun` at once -- ``await`` it for the results
        in input order. ``instruction``: a template with ``{item}`` (``{item[key]}``,
        ``{item.attr}``, ``{index}``) or a function ``item -> prompt``. Keywords:
        ``operation`` (default ``communicate``, ``run`` for a CLI agent; another verb, a
        registered name, or an async ``f(branch, prompt)``), ``branch``, ``model``,
        ``concurrency``, ``column``,
        ``price``, ``name``, ``via`` (``"live"`` or ``"batch"``: the provider's batch API,
        with ``poll_interval`` and ``poll_timeout``); the rest go to the operation."""
        from .batch_start import start_map

        return start_map(self, items, instruction, **kwargs)

    @property
    def runs(self) -> list[Any]:
        """The `map` / `compare` runs made in this session, oldest first: one entry each,
        however many items it has (their branches are the run's rows, made on demand)."""
        from .batch import runs_of

        return runs_of(self)

    def compare(self, instruction: Any, models: Iterable[Any], **kwargs: Any) -> Any:
        """Run ``instruction`` once per model, each on a sibling clone of ``branch``,
        concurrently; returns a `BatchRun` whose items are the models."""
        from .batch import compare

        return compare(self, instruction, list(models), **kwargs)

    def evaluate(self, cases: Any, prompt: Any = None, **kwargs: Any) -> Any:
        """Run every prompt × model × case (× ``repeat``) through `map`'s engine and check
        each answer; returns an `EvalRun` at once -- ``await`` it for the finished run.
        Each case is its own conversation (``branch``'s system prompt and the case); the
        cells' branches stay with the run, their calls (and the graders') in this
        session's budget and cost.
        Keywords: ``models``, ``checks``, ``repeat``, ``name`` (compare with the last run
        of that name and save under it), ``via``, ``concurrency``, ``price``, ``branch``,
        ``store``; the rest go to ``communicate``. See `lion_nb.evals`."""
        from .._lazy import upcall  # the evaluation layer sits above the core

        return upcall("evaluate")(self, cases, prompt, **kwargs)

    def resume_batch(self, batch_id: str, **kwargs: Any) -> Any:
        """Take up a provider batch submitted earlier (in this kernel or before a restart)
        by its id: polls it and records its results on its items' branches, rebuilt in this
        session when they are not here. Keywords: ``poll_interval``, ``poll_timeout``,
        ``response_format``."""
        from .batch_resume import resume_batch

        return resume_batch(self, batch_id, **kwargs)

    # -- signals -----------------------------------------------------------------------------------
    def observe(self, signal_type: type, callback: Callable[..., Any]) -> Subscription:
        """Subscribe ``callback`` (sync or async) to ``signal_type`` from every member branch.
        Call the returned subscription to unsubscribe. A failing callback is logged and
        never changes a run's result; one that cannot take the signal as its one argument
        is refused here with a ``TypeError``."""
        return self._observer.observe(signal_type, callback)

    # -- MCP servers ------------------------------------------------------------------------------
    async def connect_mcp(self, name: str, command: list[str] | None = None, **kw: Any) -> Any:
        """`Branch.connect_mcp` for the whole session: one server, its tools on every
        member branch (and on branches included later); the session stops it."""
        from ..mcp.connect import connect

        return await connect(self, name, command=command, **kw)

    async def remove_mcp(self, name: str) -> None:
        """Remove a session MCP server's tools from every branch and stop the server."""
        from ..mcp.connect import disconnect

        await disconnect(self, name)

    @property
    def connected_mcp(self) -> dict[str, MCPServer]:
        """The MCP servers started for this session, by name (`lion_nb.mcp.connect` keeps it)."""
        return self.__pydantic_private__["_mcp_servers"]

    @property
    def mcp_servers(self) -> dict[str, Any]:
        """The session's MCP servers by name."""
        return dict(self._mcp_servers)

    # -- closing ---------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Close what the branches' models hold -- HTTP connection pools, CLI agent
        processes still running -- and wait for signals still being delivered. The session
        stays usable (see `lion_nb.session.closing`)."""
        from .closing import aclose_session

        await aclose_session(self)

    def close(self) -> Any:
        """`aclose` from synchronous code. Inside a running event loop (a notebook cell) CLI
        processes are stopped at once and the rest is scheduled: the task is returned, and
        ``await session.aclose()`` is how to wait for all of it there."""
        from .closing import close_session

        return close_session(self)

    # -- serialization -----------------------------------------------------------------------------
    def to_dict(self, mode: str = "python", **branch_kw: Any) -> dict[str, Any]:
        """Identity, name, user, every branch's ``to_dict`` and the default branch id.
        Registry, observers, hooks and memory are live objects and are not saved."""
        from ..protocols.jsonsafe import dump_safely

        wire = "json" if mode != "python" else "python"
        data = dump_safely(self, wire)  # never fails on what `metadata` holds
        data["branches"] = [b.to_dict(mode=mode, **branch_kw) for b in self._branches]
        data["default_branch_id"] = str(self._default_id) if self._default_id else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, memory: Any = None, hooks: Any = None) -> Session:
        """Rebuild a session and its branches from ``to_dict`` output (``data`` unchanged).
        Operations must be registered again; observers subscribed again."""
        if not isinstance(data, dict) or not isinstance(data.get("branches", []), list):
            raise ConfigurationError(
                "`Session.from_dict` takes the dict from `Session.to_dict()` (with a "
                f"`branches` list); got {type(data).__name__}."
            )
        from ..untrusted import loading, short_repr

        what = "A serialized session"
        fields = {k: v for k, v in data.items() if k in cls.model_fields}
        if "node_metadata" in data and "metadata" not in fields:
            fields["metadata"] = data["node_metadata"]
        for key in ("user", "name"):  # the constructor would str() anything else
            value = fields.get(key)
            if value is not None and not isinstance(value, str):
                raise ConfigurationError(
                    f"{what} has a malformed `{key}`: a string or None is needed, got "
                    f"{type(value).__name__} {short_repr(value)}."
                )
        branches = []
        for i, item in enumerate(data.get("branches", [])):
            with loading(what, f"`branches[{i}]`"):
                branches.append(Branch.from_dict(item))
        ids = [b.id for b in branches]
        if len(set(ids)) != len(ids):
            twice = next(i for i in ids if ids.count(i) > 1)
            raise ConfigurationError(
                f"{what} has a malformed `branches`: two of them have the id {twice}; each "
                "saved branch must be a different branch."
            )
        default_id = data.get("default_branch_id")
        if default_id is not None and not isinstance(default_id, str):
            raise ConfigurationError(
                f"{what} has a malformed `default_branch_id`: an id string is needed, got "
                f"{type(default_id).__name__} {short_repr(default_id)}."
            )
        with loading(what, "identity (`id`, `created_at`, `metadata`, `user`, `name`)"):
            session = cls(default_branch=_NO_DEFAULT, memory=memory, hooks=hooks, **fields)
        with loading(what, "`branches`"):
            session.include_branches(branches)  # two branches with one id are refused here
        if default_id:
            with loading(what, "`default_branch_id`"):
                session.default_branch = default_id
        return session


def _label_session(session: Session) -> str:
    return f"`{session.name}` ({session.id})" if session.name else f"`{session.id}`"


def _is_branch_attribute(name: str) -> bool:
    """Whether ``name`` is a Branch attribute -- checked on the class, so that no lazy
    property (``memory``) is triggered."""
    return (
        hasattr(Branch, name)
        or name in Branch.model_fields
        or name in (Branch.__private_attributes__ or {})
    )
