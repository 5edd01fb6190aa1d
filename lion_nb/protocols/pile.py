"""`Pile`: an ordered, typed, id-keyed collection of Elements.

Items live in a dict keyed by id; their order is a `Progression`. Serialized, a Pile is
``{"collections": [item, ...], "progression": {"order": [id, ...]}}`` -- the empty form
included, so that absence never has to mean "empty".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar
from uuid import UUID

from ..errors import ItemExistsError, ItemNotFoundError
from ..shapes import JsonObject
from .element import Element, IDLike, to_id
from .progression import Progression

__all__ = ["Pile"]

T = TypeVar("T", bound=Element)


#: the classes each ``item_type`` was seen to accept (subclassing never changes afterwards)
_ACCEPTED: dict[Any, set[type]] = {}


def _accepts(item_type: type | tuple[type, ...] | None, items: list[Any]) -> bool:
    """Whether a Pile of ``item_type`` takes every one of ``items`` (see `Pile.append`)."""
    if item_type is None:
        return True
    accepted = _ACCEPTED.setdefault(item_type, set())
    for kind in {item.__class__ for item in items} - accepted:
        if not issubclass(kind, item_type):
            return False
        accepted.add(kind)
    return True


def _names_in_order(order: list[Any], ids: list[UUID]) -> bool:
    """Whether ``order`` is ``ids`` written as id strings of 32 hex digits and hyphens, one
    by one (as `UUID` reads them), compared as one run of bytes: formatting or parsing
    each id is a Python call, more than the whole comparison."""
    if not {*map(type, order)} <= {str}:  # every one a str (a set of classes: no Python step)
        return False
    digits = [s.replace("-", "") for s in order]
    if set(map(len, digits)) != {32}:
        return False
    try:
        saved = bytes.fromhex("".join(digits))
    except ValueError:  # not hex: the slow path names the culprit
        return False
    return saved == b"".join([uid.int.to_bytes(16, "big") for uid in ids])


class Pile(Generic[T]):
    """Ordered, typed, id-keyed items. ``item_type`` (a class or tuple) is checked on add."""

    __slots__ = ("_items", "item_type", "progression")

    def __init__(
        self,
        items: Iterable[T] | None = None,
        *,
        item_type: type | tuple[type, ...] | None = None,
        progression: Progression | None = None,
    ):
        self.item_type = item_type
        self._items: dict[UUID, T] = {}
        self.progression = Progression()
        for item in items or ():
            self.append(item)
        if progression is not None:
            missing = [i for i in progression if i not in self._items]
            if missing:
                raise ValueError(
                    f"progression names {len(missing)} id(s) with no item, first {missing[0]}"
                )
            if len(progression) != len(self._items) or len(set(progression)) != len(progression):
                raise ValueError(
                    f"progression must name each of the {len(self._items)} items exactly once "
                    f"(it has {len(progression)} entries, {len(set(progression))} distinct)"
                )
            self.progression = progression.copy()

    @classmethod
    def of_loaded(
        cls,
        items: list[T],
        *,
        item_type: type | tuple[type, ...] | None = None,
        # Any: a serialized Progression or a Progression, as loaded
        progression: Any = None,
    ) -> Pile[T]:
        """A Pile of freshly loaded ``items`` in a saved order (``progression``: a serialized
        Progression, or None for the items' own order), exactly as ``Pile(items,
        progression=Progression.from_dict(progression))`` makes it, errors included.

        Loading a long history is then one pass over the items: when the saved order is the
        items' own order as canonical id strings (what ``to_dict`` writes), it is checked by
        comparing texts, and the id index is built once and shared with the progression (an
        id's hash is a Python call)."""
        order = None
        if progression is not None:
            if not isinstance(progression, dict) or not isinstance(
                progression.get("order", []), list
            ):
                Progression.from_dict(progression)  # raises its error
            order = progression.get("order") or []
        found = {item.id: item for item in items}
        ids = list(found)  # the items' ids in their order, when none is there twice
        same = order is None or (len(order) == len(ids) and _names_in_order(order, ids))
        if len(found) != len(items) or not same or not _accepts(item_type, items):
            loaded = Progression.from_dict(progression) if progression is not None else None
            return cls(items, item_type=item_type, progression=loaded)
        made = cls.__new__(cls)
        made.item_type, made._items = item_type, found
        made.progression = Progression._of_unique(ids, dict.fromkeys(found, 1))
        return made

    # -- adding and removing -------------------------------------------------------------
    def append(self, item: T) -> None:
        kind = item.__class__
        if self.item_type is not None and kind not in _ACCEPTED.get(self.item_type, ()):
            # an isinstance check on a pydantic class goes through ABCMeta: once per class
            if not isinstance(item, self.item_type):
                raise TypeError(f"A Pile of {self._type_name()} cannot hold a {kind.__name__}.")
            _ACCEPTED.setdefault(self.item_type, set()).add(kind)
        uid, items = item.id, self._items
        known = len(items)
        if items.setdefault(uid, item) is not item or len(items) == known:
            raise ItemExistsError(f"Item {uid} is already in this Pile.")
        self.progression.append(uid)

    include = append

    def insert(self, index: int, item: T) -> None:
        self.append(item)
        self.progression.remove(item.id)
        self.progression.insert(index, item.id)

    def remove(self, ref: IDLike) -> T:
        uid = to_id(ref)
        if uid not in self._items:
            raise ItemNotFoundError(f"Item {uid} is not in this Pile.")
        self.progression.remove(uid)
        return self._items.pop(uid)

    pop = remove

    def popleft(self) -> T:
        """Remove and return the first item (a log kept to its capacity drops its oldest)."""
        return self._items.pop(self.progression.popleft())

    def clear(self) -> None:
        self._items.clear()
        self.progression.clear()

    # -- reading ---------------------------------------------------------------------------
    # Any: the caller's default, returned as it is
    def get(self, ref: IDLike, default: Any = None) -> T | Any:
        try:
            return self._items.get(to_id(ref), default)
        except ValueError:
            return default

    def __getitem__(self, key: int | slice | IDLike) -> Any:
        if isinstance(key, int):
            return self._items[self.progression.order[key]]
        if isinstance(key, slice):
            return [self._items[i] for i in self.progression.order[key]]
        uid = to_id(key)
        try:
            return self._items[uid]
        except KeyError:
            raise ItemNotFoundError(f"Item {uid} is not in this Pile.") from None

    def __contains__(self, ref: object) -> bool:
        try:
            return to_id(ref) in self._items
        except ValueError:
            return False

    def __iter__(self) -> Iterator[T]:
        items = self._items
        return (items[i] for i in self.progression.order)

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __repr__(self) -> str:
        return f"Pile({self._type_name()}, len={len(self)})"

    def last(self) -> T | None:
        return self._items[self.progression.order[-1]] if self.progression.order else None

    def values(self) -> list[T]:
        return list(self)

    def keys(self) -> list[UUID]:
        return list(self.progression.order)

    def _type_name(self) -> str:
        t = self.item_type
        if t is None:
            return "Element"
        if isinstance(t, tuple):
            return " | ".join(x.__name__ for x in t)
        return t.__name__

    # -- serialization ---------------------------------------------------------------------
    def to_dict(
        self, mode: str = "python", dump: Callable[[T], JsonObject] | None = None
    ) -> JsonObject:
        pm = "json" if mode in ("json", "db") else "python"
        dump = dump or (lambda item: item.model_dump(mode=pm))
        return {
            "collections": [dump(item) for item in self],
            "progression": self.progression.to_dict(),
        }

    @classmethod
    def from_dict(
        cls,
        data: JsonObject,
        load: Callable[[JsonObject], T],
        *,
        item_type: type | tuple[type, ...] | None = None,
    ) -> Pile[T]:
        """Rebuild from ``to_dict`` output; ``load`` turns one item dict into an Element."""
        if not isinstance(data, dict) or not isinstance(data.get("collections"), list):
            raise ValueError(
                'A serialized Pile is {"collections": [...], "progression": {"order": [...]}}; '
                f"got {type(data).__name__} without a `collections` list."
            )
        items = [load(d) for d in data["collections"]]
        prog = data.get("progression")
        progression = Progression.from_dict(prog) if prog is not None else None
        return cls(items, item_type=item_type, progression=progression)
