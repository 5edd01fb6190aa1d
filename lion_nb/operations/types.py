"""Parameter objects passed through the operation seam, and the `Middle` protocol.

The params are frozen, slotted dataclasses built with keywords only (ADR-0021 D5), so one
exchange's settings cannot change while it runs. `Middle` is one *logical* exchange: the
adapter may call a provider once, consume a stream of several assistant messages, or run a
bounded series of recorded inner exchanges (the original documentation promised "one
assistant turn", which no real adapter kept; this protocol says what they do).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel

from ..shapes import Keywords

if TYPE_CHECKING:
    from ..models.imodel import iModel
    from ..protocols.messages import Instruction
    from ..session.branch import Branch

__all__ = [
    "ActionParam",
    "ChatParam",
    "InterpretParam",
    "Middle",
    "MorphParam",
    "ParseParam",
    "RunParam",
]


def default_persist_dir() -> Path:
    """Where run buffers go when persisting is asked for: ``runs/`` in the session store's
    folder (``.lion_nb/runs`` beside the notebook, or under ``LION_NB_STORE``; see
    `lion_nb.store_location`). Nothing is written there unless ``stream_persist=True``."""
    from ..store_location import store_dir

    return store_dir() / "runs"


@dataclass(slots=True, frozen=True, kw_only=True)
class MorphParam:
    """Base of the operation params: immutable, keyword-built, with a ``with_`` copier."""

    # Any: the parameters' own types; a copy of this parameter object's class
    def with_(self, **changes: Any) -> Any:
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> Keywords:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclass(slots=True, frozen=True, kw_only=True)
class ChatParam(MorphParam):
    guidance: Any = None
    context: Any = None
    sender: Any = None
    recipient: Any = None
    response_format: type[BaseModel] | dict[str, Any] | None = None
    request_fields: dict[str, Any] | list[str] | None = None
    structure: Any = None
    progression: Any = None
    tool_schemas: list[dict[str, Any]] | None = None
    images: list[Any] | None = None  # Any: URLs, paths, bytes (`lion_nb.context.files`)
    image_detail: Literal["low", "high", "auto"] | None = None
    files: list[Any] | None = None  # paths, or PDF / image bytes (`lion_nb.context.files`)
    plain_content: str | None = None
    include_token_usage_to_model: bool = False
    imodel: iModel | None = None
    imodel_kw: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True, frozen=True, kw_only=True)
class RunParam(ChatParam):
    stream_persist: bool = False
    persist_dir: str | Path = field(default_factory=default_persist_dir)
    snapshot_dir: str | Path | None = None


@dataclass(slots=True, frozen=True, kw_only=True)
class ParseParam(MorphParam):
    response_format: type[BaseModel] | dict[str, Any] | None = None
    fuzzy_match: bool = True
    handle_validation: Literal["raise", "return_value", "return_none"] = "raise"
    similarity_threshold: float = 0.85
    imodel: iModel | None = None
    imodel_kw: dict[str, Any] = field(default_factory=dict)
    max_retries: int = 3


@dataclass(slots=True, frozen=True, kw_only=True)
class ActionParam(MorphParam):
    strategy: Literal["concurrent", "sequential"] = "concurrent"
    suppress_errors: bool = True
    verbose: bool = False


@dataclass(slots=True, frozen=True, kw_only=True)
class InterpretParam(MorphParam):
    domain: str | None = None
    style: str | None = None
    sample_writing: str | None = None
    imodel: iModel | None = None
    imodel_kw: dict[str, Any] = field(default_factory=dict)


class Middle(Protocol):
    """One logical exchange on a branch (see the module docstring for what that means)."""

    async def __call__(
        self,
        branch: Branch,
        # Any: any instruction value; the middle's own result
        instruction: Any | Instruction,
        chat_param: ChatParam,
        parse_param: ParseParam | None = None,
        clear_messages: bool = False,
        skip_validation: bool = False,
    ) -> Any: ...
