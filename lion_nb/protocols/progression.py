"""`Progression`: an ordered sequence of ids, the order a Pile is read in."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any
from uuid import UUID

from ..shapes import JsonObject
from .element import IDLike, to_id

__all__ = ["Progression"]


class Progression:
    """Ordered ids. Appending is O(1); membership is O(1) through a shadow count.

    ``version`` changes on every edit other than an append (insert, remove, clear), so a
    reader that caches something per position (the request renderer) knows when to rebuild.
    """

    __slots__ = ("_members", "order", "version")

    def __init__(self, order: Iterable[IDLike] | None = None):
        self.order: list[UUID] = [to_id(i) for i in order] if order else []
        self._members: dict[UUID, int] = {}
        self.version = 0
        for uid in self.order:
            self._members[uid] = self._members.get(uid, 0) + 1

    @classmethod
    def _of_unique(cls, order: list[UUID], members: dict[UUID, int]) -> Progression:
        """A progression over ``order``, ids known to be distinct, with ``members`` their
        counts already built (a Pile makes both from its items without hashing twice)."""
        made = cls.__new__(cls)
        made.order, made._members, made.version = order, members, 0
        return made

    def append(self, ref: IDLike) -> None:
        uid = ref if ref.__class__ is UUID else to_id(ref)
        self.order.append(uid)
        # A UUID's hash is a Python call: an id not there yet (the common case) costs one.
        members = self._members
        known = len(members)
        count = members.setdefault(uid, 1)
        if len(members) == known:  # it was there already
            members[uid] = count + 1

    def insert(self, index: int, ref: IDLike) -> None:
        uid = to_id(ref)
        self.version += 1
        self.order.insert(index, uid)
        self._members[uid] = self._members.get(uid, 0) + 1

    def remove(self, ref: IDLike) -> None:
        uid = to_id(ref)
        self.version += 1
        self.order.remove(uid)
        self._forget(uid)

    def popleft(self) -> UUID:
        """Remove and return the first id (``IndexError`` when empty)."""
        uid = self.order.pop(0)
        self.version += 1
        self._forget(uid)
        return uid

    def _forget(self, uid: UUID) -> None:
        """Count one occurrence of ``uid`` fewer (it was just taken out of ``order``)."""
        left = self._members.pop(uid) - 1
        if left:  # it is there more than once: rare
            self._members[uid] = left

    def clear(self) -> None:
        self.version += 1
        self.order.clear()
        self._members.clear()

    def index(self, ref: IDLike) -> int:
        return self.order.index(to_id(ref))

    def copy(self) -> Progression:
        return Progression(self.order)

    def __contains__(self, ref: object) -> bool:
        try:
            return to_id(ref) in self._members
        except ValueError:
            return False

    def __iter__(self) -> Iterator[UUID]:
        return iter(self.order)

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, index: int | slice) -> Any:
        return self.order[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Progression):
            return self.order == other.order
        return NotImplemented

    def __repr__(self) -> str:
        return f"Progression(len={len(self.order)})"

    def to_dict(self) -> dict[str, list[str]]:
        return {"order": [str(i) for i in self.order]}

    @classmethod
    def from_dict(cls, data: JsonObject) -> Progression:
        if not isinstance(data, dict) or not isinstance(data.get("order", []), list):
            raise ValueError('A serialized Progression is {"order": [id, ...]}.')
        return cls(data.get("order") or [])
