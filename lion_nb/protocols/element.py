"""`Element`: the identity every stored object shares (id, creation time, metadata)."""

from __future__ import annotations

import os
import random
import time
from typing import Any
from uuid import UUID, SafeUUID

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Element", "IDLike", "to_id"]

IDLike = Any  # an Element, a UUID or its string form


_VERSION_BITS = ~((0xF000 << 64) | (0xC000 << 48))
_VERSION_4 = (4 << 76) | (0x8000 << 48)

# Ids must be unique, not secret: they name messages, logs and branches in files and on
# screen. So they come from a generator seeded once from the operating system, instead of a
# system call per id as ``uuid4()`` makes (on a virtual machine that call costs microseconds,
# and a turn makes several ids). A forked child seeds its own, so it never repeats its parent.
_RANDOM = random.Random()
os.register_at_fork(after_in_child=_RANDOM.seed)


# A UUID's two slots, written through their descriptors: ``object.__setattr__`` looks the
# name up on every call (UUID forbids plain assignment), which made an id cost a microsecond.
_SET_INT = UUID.__dict__["int"].__set__
_SET_SAFE = UUID.__dict__["is_safe"].__set__
_UNKNOWN = SafeUUID.unknown


def new_id() -> UUID:
    """A random (version 4) UUID: 122 random bits with the version and variant set, as
    ``uuid.uuid4()`` makes it, with the UUID's two slots filled directly rather than
    through ``UUID.__init__``'s argument checks."""
    uid = object.__new__(UUID)
    _SET_INT(uid, _RANDOM.getrandbits(128) & _VERSION_BITS | _VERSION_4)
    _SET_SAFE(uid, _UNKNOWN)
    return uid


class Element(BaseModel):
    """Something with a stable identity: a UUID, a creation timestamp and free metadata."""

    # Schemas are built on first use, not at import: importing lion_nb stays cheap.
    model_config = ConfigDict(arbitrary_types_allowed=True, populate_by_name=True, defer_build=True)

    id: UUID = Field(default_factory=new_id)
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
