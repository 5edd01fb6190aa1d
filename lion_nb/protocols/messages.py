"""The conversation's messages: a tagged union on ``kind``, saved and loaded by one adapter.

``kind`` says what a message *is* (system, instruction, assistant_response, action_request,
action_response); ``role`` says who speaks it on the wire. Every message can render itself
as readable text (``rendered``) and as one OpenAI-style chat message (``chat_msg``), the
lingua franca that every endpoint translates from.

Text enters the conversation here, so a message is made clean here, once: every field's
strings, when the message is made, loaded or assigned, have lone surrogates replaced and
known secrets masked (`lion_nb.models.clean`). What shows, saves or exports a branch -- the
widgets and their static HTML, exports, the store, batch records, reprs -- reads messages,
so none of them meets a key or a string that cannot be encoded. (A dict inside a message
changed in place, ``message.metadata[k] = v``, is not checked again; the store and the
exports scrub what they write as well.)

A message keeps a private revision counter that any public-field assignment bumps, so request
rendering can cache by ``(id, revision)`` and never re-render an unchanged history.
"""

from __future__ import annotations

import functools
import json
from contextvars import ContextVar
from enum import Enum
from typing import Annotated, Any, ClassVar, Literal, Union
from uuid import UUID, uuid4

from pydantic import (
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetPydanticSchema,
    TypeAdapter,
    model_validator,
)
from pydantic_core import core_schema as cs

from ..models.clean import clean_data, clean_fields
from ..models.secrets import scrub_values
from ..shapes import JsonObject
from .element import Element

__all__ = [
    "ActionRequest",
    "ActionResponse",
    "AssistantResponse",
    "Instruction",
    "MessageRole",
    "RoledMessage",
    "System",
    "dump_message",
    "load_message",
]


class MessageRole(str, Enum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


#: bumped by every field assignment on any message; lets a renderer skip revision checks
#: entirely while nothing was edited in place.
MUTATIONS = [0]


_PLAIN = (str, int, float, bool, type(None))
_NOT_TEXT = frozenset({"id", "created_at", "kind"})  # fields no outside text reaches
#: a batch load's secrets to mask, looked up once for its whole validation pass
_BULK_VALUES: ContextVar[tuple[str, ...] | None] = ContextVar("lion_nb_bulk_values", default=None)


def _to_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _ref_text(v: Any) -> Any:
    """A sender or recipient as text: an id, a message's id, a role's name, or ``str(v)``."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, UUID):
        return str(v)
    if isinstance(v, Element):
        return str(v.id)
    if isinstance(v, MessageRole):
        return v.value
    if isinstance(v, (dict, list, tuple, set)):  # saved data: never an id
        raise ValueError(f"an id or a name is needed, got {type(v).__name__}")
    return str(v)


def _ref_schema(source: Any, handler: GetCoreSchemaHandler) -> cs.CoreSchema:
    """``None`` and a str -- what saved messages hold -- are taken by pydantic's core with no
    Python call (a before-validator cost two calls a message on a long load); anything else
    goes through `_ref_text` and then pydantic's str check. A value it refuses is one error
    naming the field, not one per choice; it is written out as ``str | None`` is."""
    text = cs.union_schema(
        [
            cs.str_schema(strict=True),
            cs.chain_schema([cs.no_info_plain_validator_function(_ref_text), cs.str_schema()]),
        ],
        mode="left_to_right",
        custom_error_type="id_or_name",
        custom_error_message="an id or a name is needed: a str, a UUID or a message",
        serialization=cs.simple_ser_schema("str"),
    )
    return cs.nullable_schema(text)


#: who sent a message or is to receive it: an id or a name, as text
Ref = Annotated[str | None, GetPydanticSchema(_ref_schema)]


class RoledMessage(Element):
    """Base of every message: who sent it, to whom, and how it renders."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, defer_build=True)

    role: ClassVar[MessageRole] = MessageRole.USER
    kind: str
    sender: Ref = None
    recipient: Ref = None

    # Not a PrivateAttr: pydantic's private-attribute setup would double construction cost.
    _rev: ClassVar[int] = 0

    @model_validator(mode="after")
    def _clean(self) -> RoledMessage:
        """Lone surrogates replaced and known secrets masked in every field (see above); a
        batch load looks the secrets up once and sets them for its validation pass."""
        clean_fields(self.__dict__, _NOT_TEXT, _BULK_VALUES.get(), self.__pydantic_fields_set__)
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        if name[0] != "_":
            value = clean_data(value)
        super().__setattr__(name, value)
        if name[0] != "_":
            self.__dict__["_rev"] = self.__dict__.get("_rev", 0) + 1
            MUTATIONS[0] += 1

    @property
    def revision(self) -> int:
        rev: int = self.__dict__.get("_rev", 0)
        return rev

    @property
    def rendered(self) -> str:
        """The message as readable text."""
        raise NotImplementedError

    def chat_msg(self) -> JsonObject:
        """The message as one OpenAI-style chat message."""
        return {"role": self.role.value, "content": self.rendered}

    def clone(self, *, sender: str | None = None, recipient: str | None = None) -> RoledMessage:
        """A copy with a new identity; ``metadata["clone_from"]`` names the original."""
        data = self.model_dump(exclude={"id", "created_at"})
        data["metadata"] = {**data.get("metadata", {}), "clone_from": str(self.id)}
        if sender is not None:
            data["sender"] = sender
        if recipient is not None:
            data["recipient"] = recipient
        return type(self).model_validate(data)

    def __repr__(self) -> str:
        text = self.rendered
        short = text if len(text) <= 60 else text[:57] + "..."
        return f"{type(self).__name__}({short!r})"


class System(RoledMessage):
    """The system prompt, optionally stamped with the date and time it was written."""

    role: ClassVar[MessageRole] = MessageRole.SYSTEM
    kind: Literal["system"] = "system"
    system_message: str = ""
    system_datetime: str | None = None

    @property
    def rendered(self) -> str:
        if self.system_datetime:
            return f"System time: {self.system_datetime}\n\n{self.system_message}"
        return self.system_message


class Instruction(RoledMessage):
    """What the user asks, with its guidance, context and the shape the answer must take."""

    role: ClassVar[MessageRole] = MessageRole.USER
    kind: Literal["instruction"] = "instruction"
    instruction: Any = None
    guidance: Any = None
    context: Any = None
    request_fields: dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None  # a JSON schema
    tool_schemas: list[dict[str, Any]] | None = None
    images: list[str] | None = None
    image_detail: Literal["low", "high", "auto"] | None = None
    #: documents sent beside the text, as OpenAI ``file`` parts (``{"type": "file", "file":
    #: {"filename", "file_data": data URL, "path"?}}``; see `lion_nb.models.media`)
    files: list[dict[str, Any]] | None = None
    plain_content: str | None = None

    @property
    def rendered(self) -> str:
        if self.plain_content is not None:
            return self.plain_content
        parts: list[str] = []
        if self.instruction not in (None, ""):
            parts.append(_to_text(self.instruction))
        if self.guidance not in (None, ""):
            parts.append("Guidance:\n" + _to_text(self.guidance))
        if self.context not in (None, "", [], {}):
            parts.append("Context:\n" + _to_text(self.context))
        if self.response_format:
            parts.append(
                "Respond with one JSON object that matches this JSON schema:\n```json\n"
                + json.dumps(self.response_format, ensure_ascii=False)
                + "\n```"
            )
        elif self.request_fields:
            parts.append(
                "Respond with one JSON object with these fields:\n```json\n"
                + json.dumps(self.request_fields, ensure_ascii=False, default=str)
                + "\n```"
            )
        return "\n\n".join(parts)

    def chat_msg(self) -> JsonObject:
        text = self.rendered
        if not self.images and not self.files:
            return {"role": "user", "content": text}
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        for url in self.images or ():
            image = {"url": url}
            if self.image_detail:
                image["detail"] = self.image_detail
            content.append({"type": "image_url", "image_url": image})
        for part in self.files or ():  # the wire takes a name and the data, never our path
            info = part.get("file") or {}
            wire = {k: info[k] for k in ("filename", "file_data", "file_id") if k in info}
            content.append({"type": "file", "file": wire})
        return {"role": "user", "content": content}


class AssistantResponse(RoledMessage):
    """What the model said. The raw provider response and usage live in ``metadata``."""

    role: ClassVar[MessageRole] = MessageRole.ASSISTANT
    kind: Literal["assistant_response"] = "assistant_response"
    response: str = ""

    @property
    def rendered(self) -> str:
        return self.response

    # Any: the provider's raw response, kept as it came
    @property
    def model_response(self) -> Any:
        return self.metadata.get("model_response")

    def chat_msg(self) -> JsonObject:
        """The chat message, with the provider's reasoning items when the answer has them
        (``metadata["reasoning_record"]``): the endpoint that made them sends them back, the
        others leave them out (`lion_nb.models.reasoning`)."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.response}
        record = self.metadata.get("reasoning_record")
        if record:
            msg["reasoning_record"] = record
        return msg

    @property
    def usage(self) -> JsonObject | None:
        return self.metadata.get("usage")


def _new_call_id() -> str:
    return "call_" + uuid4().hex[:24]


class ActionRequest(RoledMessage):
    """The model asks for one tool call."""

    role: ClassVar[MessageRole] = MessageRole.ASSISTANT
    kind: Literal["action_request"] = "action_request"
    function: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    call_id: str = Field(default_factory=_new_call_id)
    action_response_id: str | None = None

    @property
    def rendered(self) -> str:
        return f"{self.function}({json.dumps(self.arguments, ensure_ascii=False, default=str)})"

    @property
    def is_responded(self) -> bool:
        return self.action_response_id is not None

    def chat_msg(self) -> JsonObject:
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": self.call_id,
                    "type": "function",
                    "function": {
                        "name": self.function,
                        "arguments": json.dumps(self.arguments, ensure_ascii=False, default=str),
                    },
                }
            ],
        }


class ActionResponse(RoledMessage):
    """The result (or contained error) of one tool call."""

    role: ClassVar[MessageRole] = MessageRole.TOOL
    kind: Literal["action_response"] = "action_response"
    function: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    output: Any = None
    call_id: str = ""
    action_request_id: str | None = None
    is_error: bool = False

    @model_validator(mode="after")
    def _plain_output(self) -> ActionResponse:
        """A tool result is recorded as plain JSON data, so that the branch can always be
        saved and every later turn can render it; what was replaced is noted under
        ``metadata["replaced"]`` (see `lion_nb.protocols.jsonsafe`)."""
        output = self.output
        if type(output) in _PLAIN:
            return self
        from .jsonsafe import json_safe

        notes: list[dict[str, str]] = []
        safe = clean_data(json_safe(output, notes))  # the texts objects became: clean too
        if safe is not output:
            self.__dict__["output"] = safe
        if notes:
            self.metadata["replaced"] = [*self.metadata.get("replaced", ()), *notes][:20]
        return self

    @property
    def rendered(self) -> str:
        return _to_text(self.output)

    def chat_msg(self) -> JsonObject:
        """The tool message; a result with images (``metadata["images"]``, a run's figures)
        is a text part and image parts, which an endpoint whose model sees no images turns
        into descriptions (`lion_nb.models.media.text_only`)."""
        images = self.metadata.get("images")
        if not images or not isinstance(images, list):
            return {"role": "tool", "tool_call_id": self.call_id, "content": self.rendered}
        parts: list[dict[str, Any]] = [{"type": "text", "text": self.rendered}]
        parts += [
            {"type": "image_url", "image_url": {"url": url}}
            for url in images
            if isinstance(url, str) and url.startswith("data:image/")
        ]
        return {"role": "tool", "tool_call_id": self.call_id, "content": parts}


AnyMessage = Annotated[
    Union[System, Instruction, AssistantResponse, ActionRequest, ActionResponse],
    Field(discriminator="kind"),
]


@functools.cache
def _adapter(many: bool = False) -> TypeAdapter[Any]:
    """Built on first use (building it costs milliseconds; importing must not)."""
    return TypeAdapter(list[AnyMessage] if many else AnyMessage)


def load_message(data: JsonObject | RoledMessage) -> RoledMessage:
    """Any saved message back as its own class (the ``kind`` field picks it)."""
    if isinstance(data, RoledMessage):
        return data
    message: RoledMessage = _adapter().validate_python(data)
    return message


def load_messages(data: list[JsonObject]) -> list[RoledMessage]:
    """Many saved messages at once (one validation pass, much faster than one by one)."""
    token = _BULK_VALUES.set(scrub_values())
    try:
        messages: list[RoledMessage] = _adapter(True).validate_python(data)
    finally:
        _BULK_VALUES.reset(token)
    return messages


def dump_message(message: RoledMessage, mode: str = "python") -> JsonObject:
    return message.model_dump(mode="json" if mode in ("json", "db") else "python")


def dump_messages(messages: list[RoledMessage], mode: str = "python") -> list[JsonObject]:
    data: list[dict[str, Any]] = _adapter(True).dump_python(
        messages, mode="json" if mode in ("json", "db") else "python"
    )
    return data
