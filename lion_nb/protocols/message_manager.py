"""`MessageManager`: a branch's messages, their order, its system message, and request rendering.

The system message, when there is one, is the first item of the message Pile. Every
addition calls the synchronous ``on_message_added`` callbacks (the branch uses one to emit
`MessageAdded`); every removal or reorder (``remove_message``, ``clear_messages``,
``set_system``) calls the ``on_order_changed`` callbacks with no argument (the session store's
autosave uses them, so an undo is saved at once; removals send no signal).

Rendering for requests is incremental: ``chat_messages()`` keeps the OpenAI-style list for
the whole progression and only renders messages added since the last call, so preparing a
request costs the same at message 20 and message 2,000. Removal, reordering or a change to an
already-rendered message (seen through each message's revision) rebuilds the list once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, cast

from ..shapes import JsonObject
from ..tokens import RenderedMessage
from .element import IDLike
from .messages import (
    MUTATIONS,
    ActionRequest,
    ActionResponse,
    AssistantResponse,
    Instruction,
    RoledMessage,
    System,
)
from .pile import Pile
from .progression import Progression

__all__ = ["MessageManager"]

_KINDS: dict[str, type[RoledMessage]] = {
    "instruction": Instruction,
    "assistant_response": AssistantResponse,
    "system": System,
    "action_request": ActionRequest,
    "action_response": ActionResponse,
}
_KIND_ORDER = tuple(_KINDS)  # the order of `add_message`'s keywords
_TEXT_FIELD = {
    "instruction": "instruction",
    "assistant_response": "response",
    "system": "system_message",
}


class MessageManager:
    """Messages in progression order, the system message, and the added-message callbacks."""

    def __init__(
        self,
        messages: Pile[RoledMessage] | Iterable[RoledMessage] | None = None,
        system: System | None = None,
    ):
        if isinstance(messages, Pile):
            self.messages: Pile[RoledMessage] = messages
            if messages.item_type is None:
                messages.item_type = RoledMessage
        else:
            self.messages = Pile(messages or (), item_type=RoledMessage)
        self.on_message_added: list[Callable[[RoledMessage], None]] = []
        self.on_order_changed: list[Callable[[], None]] = []
        self._rendered: list[dict[str, Any]] = []
        self._rendered_msgs: list[tuple[RoledMessage, int]] = []
        self._seen_mutations = MUTATIONS[0]
        self._seen_version = -1
        if system is not None:
            self.set_system(system)

    # -- reading -------------------------------------------------------------------------------
    @property
    def progression(self) -> Progression:
        return self.messages.progression

    @property
    def system(self) -> System | None:
        first = self.messages[0] if self.messages else None
        return first if isinstance(first, System) else None

    def _of(self, kind: type) -> list[Any]:
        return [m for m in self.messages if isinstance(m, kind)]

    @property
    def instructions(self) -> list[Instruction]:
        return self._of(Instruction)

    @property
    def assistant_responses(self) -> list[AssistantResponse]:
        return self._of(AssistantResponse)

    @property
    def action_requests(self) -> list[ActionRequest]:
        return self._of(ActionRequest)

    @property
    def action_responses(self) -> list[ActionResponse]:
        return self._of(ActionResponse)

    @property
    def last_response(self) -> AssistantResponse | None:
        for message in reversed(self.messages[:]):
            if isinstance(message, AssistantResponse):
                return message
        return None

    def __len__(self) -> int:
        return len(self.messages)

    def __repr__(self) -> str:
        return f"MessageManager(messages={len(self.messages)}, system={self.system is not None})"

    # -- writing -------------------------------------------------------------------------------
    def set_system(self, system: System | None) -> None:
        """Replace the system message (``None`` removes it); it always sits first."""
        current = self.system
        if current is not None:
            self.messages.remove(current.id)
        if system is not None:
            self.messages.insert(0, system)
        self._invalidate()
        self._order_changed()

    def add_message(
        self,
        *,
        # Any: each kind as text, data or its message object; `fields` are the message's own fields
        instruction: Any = None,
        assistant_response: Any = None,
        system: Any = None,
        action_request: Any = None,
        action_response: Any = None,
        sender: Any = None,
        recipient: Any = None,
        metadata: JsonObject | None = None,
        **fields: Any,
    ) -> RoledMessage:
        """Record one message, given as exactly one of the five kinds (text or object)."""
        values = (instruction, assistant_response, system, action_request, action_response)
        given = [(kind, v) for kind, v in zip(_KIND_ORDER, values, strict=True) if v is not None]
        if len(given) != 1:
            named = sorted(kind for kind, _ in given) or "none"
            raise ValueError(
                "`add_message` takes exactly one of `instruction=`, `assistant_response=`, "
                f"`system=`, `action_request=`, `action_response=` (got {named})."
            )
        ((kind, value),) = given
        message = self._build(kind, value, sender, recipient, metadata, fields)
        if kind == "system":  # `_build` made a System (an isinstance check costs more)
            self.set_system(cast(System, message))
        else:
            self.messages.append(message)
        for callback in self.on_message_added:
            callback(message)
        return message

    # Any: the keywords of `add_message`, passed on
    async def a_add_message(self, **kwargs: Any) -> RoledMessage:
        """The same as `add_message`, for callers on the async path."""
        return self.add_message(**kwargs)

    def remove_message(self, ref: IDLike) -> RoledMessage:
        message = self.messages.remove(ref)
        self._invalidate()
        self._order_changed()
        return message

    def clear_messages(self) -> None:
        """Remove every message but the system message."""
        system = self.system
        self.messages.clear()
        if system is not None:
            self.messages.append(system)
        self._invalidate()
        self._order_changed()

    def _order_changed(self) -> None:
        for callback in list(self.on_order_changed):
            callback()

    @staticmethod
    def _build(
        kind: str,
        value: Any,
        sender: Any,
        recipient: Any,
        metadata: dict[str, Any] | None,
        fields: dict[str, Any],
    ) -> RoledMessage:
        cls = _KINDS[kind]
        if isinstance(value, RoledMessage):
            if not isinstance(value, cls):
                raise TypeError(f"`{kind}=` takes a {cls.__name__}, got {type(value).__name__}.")
            if sender is not None:
                value.sender = sender
            if recipient is not None:
                value.recipient = recipient
            if metadata:
                value.metadata.update(metadata)
            return value
        data: dict[str, Any] = dict(fields)
        if isinstance(value, dict) and kind not in _TEXT_FIELD:
            data.update(value)
        elif kind in _TEXT_FIELD:
            data[_TEXT_FIELD[kind]] = value
        else:
            raise TypeError(f"`{kind}=` takes a {cls.__name__} or a dict of its fields.")
        if sender is not None:
            data["sender"] = sender
        if recipient is not None:
            data["recipient"] = recipient
        if metadata:
            data["metadata"] = metadata
        return cls(**data)

    # -- request rendering ----------------------------------------------------------------------
    def _invalidate(self) -> None:
        self._rendered = []
        self._rendered_msgs = []

    def chat_messages(self, progression: Iterable[IDLike] | None = None) -> list[JsonObject]:
        """The conversation as OpenAI-style messages (a new list; the dicts are shared)."""
        if progression is not None:
            return _render([self.messages[i] for i in progression])
        progression = self.messages.progression
        order = progression.order
        done = self._rendered_msgs
        if progression.version != self._seen_version:  # reordered or shrunk: rebuild once
            self._invalidate()
            self._seen_version = progression.version
        elif len(done) > len(order) or (
            done  # the last rendered message is still there (`is` first: no UUID.__eq__ call)
            and (last := order[len(done) - 1]) is not (seen := done[-1][0].id)
            and last != seen
        ):
            self._invalidate()
        elif self._seen_mutations != MUTATIONS[0]:
            # some message somewhere was edited in place: check ours once
            if any(m.revision != rev for m, rev in done):
                self._invalidate()
            self._seen_mutations = MUTATIONS[0]
        done = self._rendered_msgs
        if len(done) < len(order):
            items = self.messages._items
            new = [items[i] for i in order[len(done) :]]
            _render(new, into=self._rendered)
            done.extend((m, m.revision) for m in new)
        return list(self._rendered)


def _render(
    messages: list[RoledMessage], into: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Append each message's chat form to ``into``; tool calls join the assistant turn they
    belong to, because OpenAI-style APIs require one assistant message per tool-call batch."""
    out = into if into is not None else []
    for message in messages:
        entry = RenderedMessage(message.chat_msg())  # carries its token count (`tokens`)
        if isinstance(message, ActionRequest) and out and out[-1]["role"] == "assistant":
            last = out[-1]
            calls = [*(last.get("tool_calls") or ()), *entry["tool_calls"]]
            out[-1] = RenderedMessage(last, tool_calls=calls)
        else:
            out.append(entry)
    return out
