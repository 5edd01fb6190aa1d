"""`Branch`: the aggregate that owns one conversation (ADR-0016).

A branch assembles five managers -- messages (`msgs`), tools (`acts`), models (`mdls`),
logs and named operations -- and is the facade for every operation verb (the verbs live in
`_verbs.BranchVerbs`, each importing its implementation lazily, ADR-0021 D1).

What is conversation state and what is not (ADR-0016 D2, D4):

- serialized by ``to_dict``: identity, user, name, messages (always), logs (when asked and
  non-empty), the system message, log config (when asked), chat model, parse model (only
  when it is a distinct object);
- branch-scoped but never serialized: tools, the approval default, MCP servers connected
  to it, memory, context providers and their last report, the capability grant, named
  operations;
- session attachments (detached on removal, never serialized or cloned): observer, hooks,
  owning session, the shared operation registry, an adopted memory store.

``from_dict`` does not mutate its input (the original popped keys off the caller's dict).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from pydantic import PrivateAttr

from ..errors import ConfigurationError
from ..protocols.element import Element
from ..protocols.jsonsafe import dump_safely
from ..untrusted import short_repr
from ._verbs import BranchVerbs

if TYPE_CHECKING:  # imported where used, so that importing Branch stays cheap
    from ..mcp.server import MCPServer
    from ..models.imodel import iModel, iModelManager
    from ..operations.manager import OperationManager
    from ..protocols.actions import ActionManager, Tool
    from ..protocols.capabilities import CapabilityGrant
    from ..protocols.context_providers import BranchContext
    from ..protocols.logs import DataLogger, DataLoggerConfig, Log
    from ..protocols.message_manager import MessageManager
    from ..protocols.messages import RoledMessage, System
    from ..protocols.pile import Pile
    from ..protocols.signals import Signal
    from ..runtime.parts import Attachment, Spend

__all__ = ["Branch"]

_SERIALIZED_KEYS = ("messages", "logs", "chat_model", "parse_model", "system", "log_config")
_INIT_KEYWORDS = (
    "messages", "system", "system_sender", "chat_model", "parse_model", "tools", "log_config",
    "system_datetime", "system_template", "system_template_context", "logs",
    "use_lion_system_message", "memory", "approve",
)  # fmt: skip


def _as_model(value: Any, what: str) -> iModel:
    from ..models.imodel import iModel

    if isinstance(value, iModel):
        return value
    if isinstance(value, dict):
        return iModel.from_dict(value)
    if isinstance(value, str):
        return iModel(model=value)
    raise ConfigurationError(
        f"`{what}` takes an iModel, a dict from `iModel.to_dict()` or a "
        f'"provider/model" string; got {type(value).__name__}.'
    )


@functools.cache
def _parts() -> SimpleNamespace:
    """The classes a branch is built from, imported on first use (importing Branch stays
    cheap) and looked up once, not on every construction."""
    from ..models.imodel import iModel, iModelManager
    from ..operations.manager import OperationManager
    from ..protocols.actions import ActionManager
    from ..protocols.logs import DataLogger, DataLoggerConfig
    from ..protocols.message_manager import MessageManager

    return SimpleNamespace(
        iModel=iModel,
        iModelManager=iModelManager,
        OperationManager=OperationManager,
        ActionManager=ActionManager,
        DataLogger=DataLogger,
        DataLoggerConfig=DataLoggerConfig,
        MessageManager=MessageManager,
    )


class Branch(BranchVerbs, Element):
    """One conversation: messages, tools, models, logs and the operation verbs."""

    user: str | None = None
    name: str | None = None

    if TYPE_CHECKING:  # pydantic's `dict | None`: always the dict once built (`_init_private`)
        __pydantic_private__: dict[str, Any]
    _message_manager: MessageManager | None = PrivateAttr(None)
    _action_manager: ActionManager | None = PrivateAttr(None)
    _imodel_manager: iModelManager | None = PrivateAttr(None)
    _log_manager: DataLogger | None = PrivateAttr(None)
    _operation_manager: OperationManager | None = PrivateAttr(None)
    _memory: Any = PrivateAttr(None)
    _context: BranchContext | None = PrivateAttr(None)  # made on first use, see `context`
    _capability_grant: CapabilityGrant | None = PrivateAttr(None)
    _attachment: Attachment | None = PrivateAttr(None)  # made on first use, see `attachment`
    _spend: Spend | None = PrivateAttr(None)  # made on first use, see `spend`
    _prefix_print: Any = PrivateAttr(None)  # the last request's system prompt and tools
    _mcp_servers: dict = PrivateAttr(default_factory=dict)
    _id_text: Any = PrivateAttr(None)  # (the id, its text): see `id_text`

    def __init__(
        self,
        *,
        user: Any = None,
        name: str | None = None,
        messages: Pile[RoledMessage] | Iterable[RoledMessage] | None = None,
        system: System | Any = None,
        system_sender: Any = None,
        chat_model: iModel | dict | str | None = None,
        parse_model: iModel | dict | str | None = None,
        tools: Any = None,
        log_config: DataLoggerConfig | dict | None = None,
        system_datetime: bool | str | None = None,
        system_template: Any = None,
        system_template_context: dict | None = None,
        logs: Pile[Log] | Iterable[Log] | None = None,
        use_lion_system_message: bool = False,
        memory: Any = None,
        approve: Any = None,
        **kwargs: Any,
    ):
        if user is not None and not isinstance(user, str):
            user = str(getattr(user, "id", user))
        unknown = sorted(set(kwargs) - set(type(self).model_fields))
        if unknown:
            import difflib

            known = [*_INIT_KEYWORDS, *type(self).model_fields]
            hints = [difflib.get_close_matches(k, known, n=1) for k in unknown]
            hint = "".join(f" Did you mean `{h[0]}`?" for h in hints if h)
            raise TypeError(
                f"`Branch()` got unknown keyword{'s' * (len(unknown) > 1)} "
                f"{', '.join(f'`{k}`' for k in unknown)}.{hint}"
            )
        super().__init__(user=user, name=name, **kwargs)
        if system_template is not None or system_template_context is not None:
            warnings.warn(
                "`system_template` and `system_template_context` have no effect and will be "
                "removed; render the template yourself and pass the text as `system=`.",
                DeprecationWarning,
                stacklevel=2,
            )

        parts = _parts()
        # managers go into the private dict directly (see the hot accessors below): a batch
        # builds one branch per item, and pydantic's private-attribute path costs microseconds
        private = self.__pydantic_private__
        manager = private["_message_manager"] = parts.MessageManager(messages)
        if system or system_datetime or use_lion_system_message:
            manager.set_system(
                self._build_system(system, system_sender, system_datetime, use_lion_system_message)
            )
        manager.on_message_added.append(self._schedule_emit)

        chat = _as_model(chat_model, "chat_model") if chat_model is not None else parts.iModel()
        parse = _as_model(parse_model, "parse_model") if parse_model is not None else chat
        private["_imodel_manager"] = parts.iModelManager(chat, parse)

        actions = private["_action_manager"] = parts.ActionManager(approve=approve)
        if tools is not None:
            many = isinstance(tools, (list, tuple, set, frozenset))
            tools = list(tools) if many else [tools]
            actions.register_tools(tools)

        DataLoggerConfig = parts.DataLoggerConfig
        if isinstance(log_config, DataLoggerConfig):
            config = log_config
        elif log_config:  # a truthy dict; None or {} means the default
            try:
                config = DataLoggerConfig.model_validate(log_config)
            except ValueError as exc:
                fields = ", ".join(f"`{f}`" for f in DataLoggerConfig.model_fields)
                raise ConfigurationError(
                    f"`log_config` is not a valid logger configuration ({exc.errors()[0]['msg']} "
                    f"at `{'.'.join(map(str, exc.errors()[0]['loc']))}`). Its fields are: {fields}."
                ) from exc
        else:
            config = DataLoggerConfig()
        private["_log_manager"] = parts.DataLogger(config=config, logs=logs)
        private["_operation_manager"] = parts.OperationManager()
        private["_memory"] = memory

    @staticmethod
    def _build_system(
        system: Any, sender: Any, system_datetime: bool | str | None, use_lion: bool
    ) -> System:
        import datetime as _dt

        from ..protocols.messages import System
        from .prompts import LION_SYSTEM_MESSAGE

        if isinstance(system, System):
            base = system.model_copy()
        else:
            text = "" if system in (None, False) else system
            if not isinstance(text, str):
                import json

                text = json.dumps(text, ensure_ascii=False, default=str)
            base = System(system_message=text)
        if use_lion:
            body = base.system_message
            base.system_message = LION_SYSTEM_MESSAGE + ("\n\n" + body if body else "")
        if system_datetime:
            base.system_datetime = (
                system_datetime
                if isinstance(system_datetime, str)
                else _dt.datetime.now().isoformat(timespec="minutes")
            )
        if sender is not None:
            base.sender = str(getattr(sender, "id", sender))
        return base

    # -- managers and accessors -------------------------------------------------------------------
    # Hot accessors read ``__pydantic_private__`` directly: pydantic's ``__getattr__`` path for
    # private attributes costs microseconds, which adding a message must not pay.
    @property
    def id_text(self) -> str:
        """The id as text, made once per id: ``str(uuid)`` costs a microsecond, and a turn
        needs it for its messages' sender and recipient, its signals and its ledger row."""
        private = self.__pydantic_private__
        made = private["_id_text"]
        if made is None or made[0] is not self.id:
            made = private["_id_text"] = (self.id, str(self.id))
        return made[1]

    @property
    def msgs(self) -> MessageManager:
        return self.__pydantic_private__["_message_manager"]

    @property
    def acts(self) -> ActionManager:
        return self.__pydantic_private__["_action_manager"]

    @property
    def mdls(self) -> iModelManager:
        return self.__pydantic_private__["_imodel_manager"]

    @property
    def logs(self) -> Pile[Log]:
        return self.__pydantic_private__["_log_manager"].logs

    @property
    def log_manager(self) -> DataLogger:
        return self.__pydantic_private__["_log_manager"]

    @property
    def messages(self) -> Pile[RoledMessage]:
        return self.__pydantic_private__["_message_manager"].messages

    @property
    def system(self) -> System | None:
        return self.__pydantic_private__["_message_manager"].system

    @property
    def tools(self) -> dict[str, Tool]:
        return self._action_manager.registry

    @property
    def approve(self) -> Any:
        """The default approval policy of this branch's tools (``True``, ``False``, ``"ask"``
        or a callable; ``None``: calls run). A tool's own ``approve=`` wins over it."""
        return self._action_manager.approve

    @approve.setter
    def approve(self, value: Any) -> None:
        from ..protocols.approval import check_policy

        self._action_manager.approve = check_policy(value)

    @property
    def chat_model(self) -> iModel:
        return self.__pydantic_private__["_imodel_manager"].chat

    @chat_model.setter
    def chat_model(self, value: iModel | dict | str) -> None:
        """Set the chat model. A parse model that was the chat model (the default) follows
        it, so parsing never silently stays on the previous model."""
        manager = self._imodel_manager
        follows = manager.parse_is_chat
        manager.chat = _as_model(value, "chat_model")
        if follows:
            manager.parse = manager.chat

    @property
    def parse_model(self) -> iModel:
        return self.__pydantic_private__["_imodel_manager"].parse

    @parse_model.setter
    def parse_model(self, value: iModel | dict | str) -> None:
        self._imodel_manager.parse = _as_model(value, "parse_model")

    @property
    def memory(self) -> Any:
        """The branch's memory store. The first claim wins: an explicit store, a store a
        session supplied, or -- on first access of a standalone branch -- a private
        `InMemoryStore`. There is no setter."""
        if self._memory is None:
            from ..protocols.memory import InMemoryStore

            self._memory = InMemoryStore()
        return self._memory

    @property
    def memory_claim(self) -> Any:
        """The memory store claimed so far (``None``: none yet, `memory` would make one);
        setting it puts back an earlier claim (`lion_nb._seams` restores a snapshot)."""
        return self.__pydantic_private__["_memory"]

    @memory_claim.setter
    def memory_claim(self, store: Any) -> None:
        self.__pydantic_private__["_memory"] = store

    @property
    def providers(self) -> Any:
        """The context-provider registry, created on first access."""
        context = self.context
        if context.providers is None:
            from ..protocols.context_providers import ContextProviderRegistry

            context.providers = ContextProviderRegistry()
        return context.providers

    @property
    def context(self) -> BranchContext:
        """The context this branch injects: its providers, their last report, the text
        waiting for the next request (`lion_nb.protocols.context_providers`)."""
        private = self.__pydantic_private__
        part = private["_context"]
        if part is None:
            from ..protocols.context_providers import BranchContext

            part = private["_context"] = BranchContext()
        return part

    async def take_context(self, instruction: Any) -> str | None:
        """The providers' text for the request about to be made, handed over once."""
        part = self.__pydantic_private__["_context"]
        if part is None or not part.providers:  # the common case: no providers, no work
            return None
        return await part.take_for(self, instruction)

    # the context as the private fields it once was (older callers and tests read them)
    @property
    def _providers(self) -> Any:
        part = self.__pydantic_private__["_context"]
        return None if part is None else part.providers

    @_providers.setter
    def _providers(self, value: Any) -> None:
        self.context.providers = value

    @property
    def _context_injection(self) -> str | None:
        part = self.__pydantic_private__["_context"]
        return None if part is None else part.injection

    @property
    def _last_context_report(self) -> Any:
        part = self.__pydantic_private__["_context"]
        return None if part is None else part.last_report

    @property
    def capability_grant(self) -> CapabilityGrant | None:
        """The capabilities granted to this branch (``None``: none); see `grant_capabilities`."""
        return self.__pydantic_private__["_capability_grant"]

    @capability_grant.setter
    def capability_grant(self, grant: CapabilityGrant | None) -> None:
        self.__pydantic_private__["_capability_grant"] = grant

    # -- parts -----------------------------------------------------------------------------------
    @property
    def spend(self) -> Spend:
        """What this branch spent and may spend: its ledger and budget (`lion_nb.runtime`)."""
        private = self.__pydantic_private__
        part = private["_spend"]
        if part is None:
            from ..runtime.parts import Spend

            part = private["_spend"] = Spend()
        return part

    @property
    def attachment(self) -> Attachment:
        """This branch's tie to its session: the owner's id, its observer and hooks, and the
        message signals still being delivered."""
        private = self.__pydantic_private__
        part = private["_attachment"]
        if part is None:
            from ..runtime.parts import Attachment

            part = private["_attachment"] = Attachment()
        return part

    def attach_to(
        self, session_id: Any, observer: Any, hooks: Any, operations: Any, memory: Any
    ) -> None:
        """Join a session: its id, signal bus, hooks and operation registry become this
        branch's; its memory store too, unless the branch has one (the first claim wins)."""
        self.attachment.attach(session_id, observer, hooks)
        private = self.__pydantic_private__
        private["_operation_manager"] = operations
        if private["_memory"] is None and memory is not None:
            private["_memory"] = memory

    def detach(self) -> None:
        """Leave the session: no owner, observer or hooks, an operation registry of its own."""
        self.attachment.detach()
        self.__pydantic_private__["_operation_manager"] = _parts().OperationManager()

    # the attachment as the private fields it once was (older callers and tests read them)
    @property
    def _observer(self) -> Any:
        part = self.__pydantic_private__["_attachment"]
        return None if part is None else part.observer

    @property
    def _owning_session_id(self) -> Any:
        part = self.__pydantic_private__["_attachment"]
        return None if part is None else part.session_id

    @property
    def _hooks(self) -> Any:
        part = self.__pydantic_private__["_attachment"]
        return None if part is None else part.hooks

    @_hooks.setter
    def _hooks(self, value: Any) -> None:
        self.attachment.hooks = value

    @property
    def _pending_signals(self) -> set[Any]:
        return self.attachment.pending

    # -- cost (lion_nb.runtime.ledger, lion_nb.runtime.budget) ---------------------------------
    def cost(self) -> Any:
        """What this branch's model calls cost: a `Cost` (``usd`` is ``None`` when any call
        is unpriced)."""
        from ..runtime.ledger import branch_ledger

        return branch_ledger(self).cost()

    @property
    def budget(self) -> Any:
        """The `Budget` over this branch's calls (``None``: none)."""
        part = self.__pydantic_private__["_spend"]
        return None if part is None else part.budget

    @budget.setter
    def budget(self, value: Any) -> None:
        from ..runtime.budget import Budget

        self.spend.budget = Budget.of(value)

    def note_prefix(self, mark: Any) -> Any:
        """Remember ``mark``, the print of a request's cacheable prefix (system prompt and
        tools); returns the one before (``None``: the first request)."""
        private = self.__pydantic_private__
        before, private["_prefix_print"] = private["_prefix_print"], mark
        return before

    @property
    def last_context_report(self) -> Any:
        return self._last_context_report

    def __repr__(self) -> str:
        label = f"{self.name!r}, " if self.name else ""
        return f"Branch({label}messages={len(self.messages)}, model={self.chat_model.provider}/{self.chat_model.model})"

    # -- capabilities ----------------------------------------------------------------------------
    def grant_capabilities(self, operable: Any, prompt: bool = True) -> None:
        from ..protocols.capabilities import grant_capabilities

        grant_capabilities(self, operable, prompt=prompt)

    def revoke_capabilities(self) -> None:
        from ..protocols.capabilities import revoke_capabilities

        revoke_capabilities(self)

    # -- signals ---------------------------------------------------------------------------------
    def observe(self, signal_type: type, callback: Callable[..., Any]) -> Any:
        """Subscribe to this branch's signals. Inside a session, this is the session's bus."""
        attachment = self.attachment
        if attachment.observer is None:
            from ..runtime.observer import SignalBus

            attachment.observer = SignalBus()
        return attachment.observer.observe(signal_type, callback)

    def _schedule_emit(self, message: RoledMessage) -> None:
        """The message manager's callback: project an added message onto the observer."""
        attachment = self.__pydantic_private__["_attachment"]
        if attachment is None or attachment.observer is None:
            return
        from ..protocols.messages import AssistantResponse
        from ..protocols.signals import MessageAdded

        signals: list[Signal] = [
            MessageAdded(branch_id=self.id_text, branch_name=self.name, message=message)
        ]
        if self._capability_grant is not None and isinstance(message, AssistantResponse):
            from ..protocols.capabilities import extract_capability_signals

            try:  # model output is untrusted: extraction must never break recording
                signals.extend(extract_capability_signals(self, message))
            except Exception:
                import logging

                logging.getLogger("lion_nb.signals").warning(
                    "capability extraction failed on message %s", message.id, exc_info=True
                )
        for signal in signals:
            attachment.dispatch(signal)

    def _emit_nowait(self, signal: Signal) -> None:
        self.attachment.dispatch(signal)

    async def _drain_signals(self) -> None:
        """Wait until every message signal scheduled so far has been delivered."""
        await self.attachment.drain()

    # -- named operations ------------------------------------------------------------------------
    def get_operation(self, operation: str) -> Callable[..., Any] | None:
        """Attribute first, then the (session-shared) registry: a registered name can never
        shadow a built-in Branch attribute."""
        if hasattr(self, operation):
            return getattr(self, operation)
        return self._operation_manager.registry.get(operation)

    # -- serialization ---------------------------------------------------------------------------
    def to_dict(
        self,
        mode: str = "python",
        db_meta_key: str | None = None,
        include_request_options: bool = False,
        include_logs: bool = True,
        include_log_config: bool = False,
        include_processor_config: bool = False,
        **kw: Any,
    ) -> dict[str, Any]:
        """The conversation projection of ADR-0016 D2 (see the module docstring)."""
        if mode not in ("python", "json", "db"):
            raise ValueError(f"`mode` is 'python', 'json' or 'db', not {mode!r}.")
        wire = "json" if mode != "python" else "python"
        data = dump_safely(self, wire)
        if mode == "db":
            data[db_meta_key or "node_metadata"] = data.pop("metadata")
        from ..protocols.messages import dump_messages

        pile = self.messages
        try:
            collections = dump_messages(list(pile), wire)
        except Exception:  # bytes or an unknown object in some message's metadata
            collections = [dump_safely(m, wire) for m in pile]
        data["messages"] = {
            "collections": collections,
            "progression": pile.progression.to_dict(),
        }
        if include_logs and len(self.logs):
            data["logs"] = self._log_manager.to_dict(mode)["logs"]
        if self.system is not None:
            data["system"] = dump_safely(self.system, wire)
        if include_log_config:
            data["log_config"] = self._log_manager.config.model_dump(mode=wire)
        options = {
            "include_request_options": include_request_options,
            "include_processor_config": include_processor_config,
        }
        data["chat_model"] = self.chat_model.to_dict(**options)
        if not self._imodel_manager.parse_is_chat:
            data["parse_model"] = self.parse_model.to_dict(**options)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Branch:
        """Rebuild a standalone branch from ``to_dict`` output. ``data`` is left unchanged."""
        if not isinstance(data, dict):
            raise ConfigurationError(
                f"`Branch.from_dict` takes the dict from `Branch.to_dict()`, got {type(data).__name__}."
            )
        from ..protocols.logs import Log
        from ..protocols.messages import load_message
        from ..protocols.pile import Pile

        data = dict(data)  # never pop keys off the caller's dict
        serialized = {k: data.pop(k) for k in _SERIALIZED_KEYS if k in data}
        if "node_metadata" in data:
            data["metadata"] = data.pop("node_metadata")
        kwargs: dict[str, Any] = {k: v for k, v in data.items() if k in cls.model_fields}
        for key in ("user", "name"):  # the constructor would str() anything else
            value = kwargs.get(key)
            if value is not None and not isinstance(value, str):
                raise ConfigurationError(
                    f"A serialized branch has a malformed `{key}`: a string or None is "
                    f"needed, got {type(value).__name__} {short_repr(value)}."
                )
        if "messages" in serialized:
            with _malformed("messages"):
                kwargs["messages"] = _load_message_pile(serialized["messages"])
            serialized.pop("system", None)  # already the first message of the pile
        with _malformed("system"):
            if "system" in serialized:
                system = load_message(serialized["system"])
                if system.kind != "system":
                    raise ValueError(f"it is a `{system.kind}` message, not a `system` one")
                kwargs["system"] = system
        with _malformed("logs"):
            if "logs" in serialized:
                kwargs["logs"] = Pile.from_dict(
                    serialized["logs"], Log.model_validate, item_type=Log
                )
        if "log_config" in serialized:
            log_config = serialized["log_config"]
            if log_config is not None and not isinstance(log_config, dict):
                raise ConfigurationError(
                    "A serialized branch has a malformed `log_config`: a dict is needed, got "
                    f"{type(log_config).__name__} {short_repr(log_config)}."
                )
            kwargs["log_config"] = log_config or None
        for key in ("chat_model", "parse_model"):
            if key in serialized:
                with _malformed(f"`{key}`"):
                    kwargs[key] = _as_model(serialized[key], key)
        with _malformed("identity fields (`id`, `created_at`, `metadata`, `user`, `name`)"):
            return cls(**kwargs)

    # -- cloning -----------------------------------------------------------------------------------
    def clone(self, sender: Any = None) -> Branch:
        """A new branch with copies of the messages (ADR-0016 D5 subset; see the module
        docstring for what is deliberately not copied)."""
        sender_id = str(getattr(sender, "id", sender)) if sender is not None else str(self.id)
        models = self.mdls
        chat = models.chat.copy() if models.chat.is_cli else models.chat
        if models.parse_is_chat:
            parse = chat
        else:
            parse = models.parse.copy() if models.parse.is_cli else models.parse
        clone_from = {
            "id": str(self.id),
            "user": self.user,
            "created_at": self.created_at,
            "progression": [str(i) for i in self.messages.progression],
        }
        new_id = uuid4()  # known before the copies are made, so each is made addressed
        recipient = str(new_id)
        return Branch(
            id=new_id,
            user=self.user,
            messages=[m.clone(sender=sender_id, recipient=recipient) for m in self.messages],
            tools=list(self.acts.registry.values()) or None,
            chat_model=chat,
            parse_model=parse,
            metadata={"clone_from": clone_from},
        )

    # -- connect -------------------------------------------------------------------------------------
    def connect(
        self,
        provider: str | None = None,
        base_url: str | None = None,
        endpoint: str = "chat",
        api_key: str | None = None,
        queue_capacity: int = 100,
        capacity_refresh_time: float = 60,
        limit_requests: int | None = None,
        limit_tokens: int | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        imodel: iModel | None = None,
        update: bool = False,
        **kwargs: Any,
    ) -> Tool:
        """Expose a model as a tool on this branch, so another model can consult it.

        ``queue_capacity`` requests per ``capacity_refresh_time`` seconds become the model's
        request rate limit (100 per 60 s by default), unless ``limit_requests`` is given:
        lion_nb's rate limiter is where the original's queue settings belong. Only chat
        endpoints can be connected (``endpoint="chat"``).
        """
        if endpoint != "chat":
            raise ConfigurationError(
                f"`connect(endpoint={endpoint!r})`: only chat endpoints can be connected as a "
                'tool; use `endpoint="chat"`.'
            )
        if imodel is None:
            from ..models.imodel import iModel

            per_minute = limit_requests or max(
                1, round(queue_capacity * 60 / capacity_refresh_time)
            )
            extra = {"base_url": base_url} if base_url else {}
            if api_key is not None:
                extra["api_key"] = api_key
            imodel = iModel(
                provider=provider,
                limit_requests=per_minute,
                limit_tokens=limit_tokens,
                **extra,
                **kwargs,
            )
        tool_name = name or f"ask_{imodel.provider}".replace("-", "_")
        consulted = imodel

        async def consult(instruction: str) -> str:
            from ..models.endpoints import ChatRequest

            call = await consulted.invoke(
                ChatRequest(messages=[{"role": "user", "content": instruction}])
            )
            if call.status != "completed":
                raise call.error or RuntimeError("the model call failed")
            return call.response.text

        consult.__name__ = tool_name
        consult.imodel = consulted  # type: ignore[attr-defined]  # lets callers find the model
        consult.__doc__ = description or f"Ask the `{imodel.provider}/{imodel.model}` model."
        from ..protocols.actions import Tool

        tool = Tool(consult, name=tool_name, description=consult.__doc__)
        self._action_manager.register_tool(tool, update=update)
        return tool

    # -- MCP servers ------------------------------------------------------------------------------
    async def connect_mcp(
        self,
        name: str,
        command: list[str] | None = None,
        *,
        url: str | None = None,
        env: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        cwd: str | None = None,
        approve: Any = None,
        timeout: float = 30.0,
        replace: bool = False,
    ) -> Any:
        """Start an MCP server (``command=[...]``: a child process over stdio; ``url=``: a
        streamable-HTTP server, ``headers`` kept secret) and make its tools this branch's.
        ``approve`` is the policy of its tools (`lion_nb.protocols.approval`). A name in use
        is refused unless it is the same server (kept) or ``replace=True``. Returns the
        `MCPServer`; see `lion_nb.mcp`."""
        from ..mcp.connect import connect

        return await connect(
            self, name, command=command, url=url, env=env, headers=headers, cwd=cwd,
            approve=approve, timeout=timeout, replace=replace,
        )  # fmt: skip

    async def remove_mcp(self, name: str) -> None:
        """Remove a connected MCP server's tools and stop the server."""
        from ..mcp.connect import disconnect

        await disconnect(self, name)

    @property
    def connected_mcp(self) -> dict[str, MCPServer]:
        """The MCP servers started for this branch, by name (`lion_nb.mcp.connect` keeps it)."""
        return self.__pydantic_private__["_mcp_servers"]

    @property
    def mcp_servers(self) -> dict[str, Any]:
        """The MCP servers this branch can call, by name: its own and its session's."""
        found: dict[str, Any] = {}
        for tool in self._action_manager.registry.values():
            server = getattr(tool, "server", None)
            if server is not None:
                found.setdefault(server.name, server)
        return {**found, **self._mcp_servers}

    async def aclose(self) -> None:
        """Stop the MCP servers this branch started. The conversation is untouched."""
        from ..mcp.connect import disconnect_all

        await disconnect_all(self)


def _private_defaults(cls: type) -> tuple[dict[str, Any], dict[str, Any]]:
    """``cls``'s private attributes split into plain ``None`` defaults (copied at once) and
    the rest (each asked for its default, as pydantic does)."""
    plain, other = {}, {}
    for name, attr in cls.__private_attributes__.items():
        if attr.default_factory is None and attr.default is None:
            plain[name] = None
        else:
            other[name] = attr
    return plain, other


_PLAIN_PRIVATE, _OTHER_PRIVATE = _private_defaults(Branch)


def _init_private(self: Branch, context: Any, /) -> None:
    """Branch's private attributes at their defaults, without pydantic's look-up of each of
    its fourteen defaults (a batch builds one branch per item). A subclass gets pydantic's
    own initialisation first, which this then leaves alone."""
    if getattr(self, "__pydantic_private__", None) is None:
        private = _PLAIN_PRIVATE.copy()
        for name, attr in _OTHER_PRIVATE.items():
            private[name] = attr.get_default(call_default_factory=True)
        object.__setattr__(self, "__pydantic_private__", private)


Branch.model_post_init = _init_private  # pydantic calls it by name after validation


@contextmanager
def _malformed(what: str) -> Iterator[None]:
    """Turn any failure to load a serialized branch's ``what`` into one `ConfigurationError`
    that names it, with a bounded message (see `lion_nb.untrusted`)."""
    from ..untrusted import LOAD_ERRORS, bounded, validation_detail

    try:
        yield
    except ConfigurationError as exc:
        text = str(exc)
        if what in text or "serialized branch" in text:
            if len(text) <= 600:
                raise
            raise ConfigurationError(bounded(text)) from exc
        raise ConfigurationError(bounded(f"A serialized branch's {what}: {text}")) from exc
    except LOAD_ERRORS as exc:
        raise ConfigurationError(
            bounded(
                f"A serialized branch has malformed {what}: {validation_detail(exc)}. Pass the "
                "dict from `Branch.to_dict()` unchanged."
            )
        ) from exc


def _load_message_pile(data: Any) -> Pile[RoledMessage]:
    from pydantic import ValidationError

    from ..protocols.messages import RoledMessage, load_messages
    from ..protocols.pile import Pile

    if not isinstance(data, dict) or not isinstance(data.get("collections"), list):
        raise ConfigurationError(
            'A serialized branch stores `messages` as {"collections": [...], '
            '"progression": {"order": [...]}}; this one does not. Pass the dict from '
            "`Branch.to_dict()` unchanged."
        )
    try:
        items = load_messages(data["collections"])
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise ConfigurationError(
            f"A serialized branch has a malformed message at `messages.collections.{where}`: "
            f"{first.get('msg')}. Each message needs a `kind` (system, instruction, "
            "assistant_response, action_request, action_response) and that kind's fields."
        ) from exc
    try:
        pile = Pile.of_loaded(items, item_type=RoledMessage, progression=data.get("progression"))
    except ValueError as exc:
        raise ConfigurationError(
            "A serialized branch's message progression does not match its messages "
            f"(`messages.progression`): {str(exc).rstrip('.')}."
        ) from exc
    # the loaded list, not the pile: walking a pile looks each id up (a Python hash call)
    systems = [m for m in items if m.kind == "system"]
    if systems and (len(systems) > 1 or next(iter(pile)) is not systems[0]):
        at = next(i for i, m in enumerate(pile) if m.kind == "system")
        raise ConfigurationError(
            "A serialized branch's messages have a system message "
            + ("more than once" if len(systems) > 1 else f"at position {at}")
            + "; it must be the first message, once. Pass the dict from `Branch.to_dict()` "
            "unchanged."
        )
    return pile
