"""`Element`: the identity every stored object shares (id, creation time, metadata)."""

from __future__ import annotations

import time
from typing import Any
from uuid import UUID, uuid4

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Element", "IDLike", "to_id"]

IDLike = Any  # an Element, a UUID or its string form


class Element(BaseModel):
    """Something with a stable identity: a UUID, a creation timestamp and free metadata."""

    # Schemas are built on first use, not at import: importing lion_nb stays cheap.
    model_config = ConfigDict(arbitrary_types_allowed=True, populate_by_name=True, defer_build=True)

    id: UUID = Field(default_factory=uuid4)
    created_at: float = Field(default_factory=time.time)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def __hash__(self) -> int:
        return hash(self.id)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Element):
            return self.id == other.id
        return NotImplemented


def to_id(ref: IDLike) -> UUID:
    """The UUID behind an Element, a UUID or a UUID string; a clear error otherwise."""
    if isinstance(ref, UUID):
        return ref
    if isinstance(ref, Element):
        return ref.id
    if isinstance(ref, str):
        try:
            return UUID(ref)
        except ValueError:
            pass
    from ..untrusted import short_repr  # a bounded picture: ``ref`` may be anything

    raise ValueError(f"`{short_repr(ref)}` is not an id: pass an Element, a UUID or a UUID string.")
