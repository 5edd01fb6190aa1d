"""`StreamChunk`: one typed event of a CLI agent's stream, whatever the CLI.

Every CLI endpoint maps its own wire events onto these seven types, so `Branch.run()` has
one stream contract to record (ADR-0021 D3).

A chunk is immutable (``frozen``: assigning a field raises `pydantic.ValidationError`), so a
recorded turn, replayed many times (a cassette answers every re-run of a cell), can hand out
the same validated chunks on every replay. What a chunk carries in a container (``metadata``,
``tool_input``, a dict or list ``tool_output``) is not frozen: a consumer that keeps it copies
it (`run` does), and a replay hands out copies (`copy_chunk`) of the few chunks that carry
any. Text in a chunk is made clean as it is validated (`lion_nb.models.clean`).
`validate_chunks` checks a whole list in one validator call; `copy_chunk` makes an equal,
independent chunk without validating it again.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .clean import clean_fields

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = ["ChunkType", "StreamChunk", "carries_data", "copy_chunk", "validate_chunks"]

ChunkType = Literal["system", "thinking", "text", "tool_use", "tool_result", "result", "error"]


class StreamChunk(BaseModel):
    """One event of a CLI stream.

    - ``system``: session start; ``metadata["session_id"]`` carries the provider session id.
    - ``thinking`` / ``text``: reasoning or answer text (``is_delta`` for a fragment).
    - ``tool_use``: ``tool_id``, ``tool_name``, ``tool_input``.
    - ``tool_result``: ``tool_id``, ``tool_output``, ``is_error``.
    - ``result``: the end of a turn; ``metadata`` has ``usage``, ``cost_usd``, ``session_id``.
    - ``error``: ``content`` is the message; ``metadata["benign_eos"]`` marks a harmless end.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    type: ChunkType
    content: str | None = None
    tool_name: str | None = None
    tool_id: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_output: Any = None
    is_error: bool = False
    is_delta: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _clean(self) -> StreamChunk:
        """What a CLI printed enters here: lone surrogates replaced, known secrets masked
        (`lion_nb.models.clean`; a key split over several deltas is masked in the message
        they make)."""
        clean_fields(self.__dict__, _NOT_TEXT)
        return self


_NOT_TEXT = frozenset({"type"})


@cache
def _list_adapter() -> TypeAdapter[list[StreamChunk]]:
    from pydantic import TypeAdapter  # built on first use: importing this module stays cheap

    return TypeAdapter(list[StreamChunk])


def validate_chunks(data: object) -> list[StreamChunk]:
    """``data`` (a list of chunk objects as JSON) as chunks, checked in one validator call.

    Raises `pydantic.ValidationError`, whose locations start with the index in ``data``."""
    return _list_adapter().validate_python(data)


_new, _assign = object.__new__, object.__setattr__


def carries_data(chunk: StreamChunk) -> bool:
    """Whether ``chunk`` holds anything mutable beyond an empty ``metadata`` dict."""
    return bool(
        chunk.metadata
        or chunk.tool_input is not None
        or isinstance(chunk.tool_output, (dict, list))
    )


def copy_chunk(chunk: StreamChunk) -> StreamChunk:
    """An equal chunk sharing nothing mutable with ``chunk`` (nested dicts and lists are
    copied), made without validation: only for a chunk that was validated already.

    The object is made as `model_construct` makes it, minus the per-field work that makes
    that slower than validating."""
    values = chunk.__dict__.copy()
    metadata = values["metadata"]
    values["metadata"] = _copied(metadata) if metadata else {}
    if values["tool_input"] is not None:
        values["tool_input"] = _copied(values["tool_input"])
    output = values["tool_output"]
    if output.__class__ is dict or output.__class__ is list:
        values["tool_output"] = _copied(output)
    copy = _new(chunk.__class__)
    _assign(copy, "__dict__", values)
    _assign(copy, "__pydantic_fields_set__", set(chunk.__pydantic_fields_set__))
    _assign(copy, "__pydantic_extra__", None)
    _assign(copy, "__pydantic_private__", None)
    return copy


def _copied(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copied(v) for v in value]
    return value
