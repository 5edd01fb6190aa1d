"""A run's items kept in columns, each read through a small `ItemResult` view.

A run of a million items keeps every item's outcome for as long as the run lives. One
object per item, with its own fields, its own index and float objects, took about 220
bytes before the item ran; here the run keeps one typed column per field -- the status as a
byte, tokens as a 64-bit integer, the cost and the time as doubles (NaN for ``None``), the
attempts as a 32-bit integer -- and one list slot each for the item and its value; the
fields most items never have (an error, a live branch, a request id, why it was not
started) are in dictionaries keyed by index. About 45 bytes an item, besides the item and
its value.

``run.items[i]`` is an `ItemResult` made when read: reading or setting its fields reads or
sets the run's columns, and two views of the same item are equal.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Sequence
from typing import Any

from ._batch_items import describe

__all__ = ["STATUSES", "ItemResult", "ItemTable"]

#: an item's states, in the order of their codes in the status column
STATUSES = ("pending", "running", "done", "failed", "stopped")
_CODE = {name: code for code, name in enumerate(STATUSES)}
_MOST = 2**63 - 1  # the largest token count the column holds (more: kept beside it)


class ItemTable(Sequence["ItemResult"]):
    """One run's items, a column per field (see the module docstring)."""

    def __init__(self, run: Any, items: list[Any]) -> None:
        n = len(items)
        self.run = run
        self.items = list(items)
        self.values: list[Any] = [None] * n
        self.status = bytearray(n)  # all pending
        self.tokens = array("q", bytes(8 * n))
        self.cost = array("d", [0.0]) * n
        self.duration = array("d", [math.nan]) * n
        self.attempts = array("I", bytes(4 * n))
        self.errors: dict[int, BaseException] = {}
        self.live: dict[int, Any] = {}
        self.custom_ids: dict[int, str] = {}
        self.reasons: dict[int, str] = {}
        self.big_tokens: dict[int, int] = {}

    def append(self, item: Any) -> ItemResult:
        """Add an item read from a streamed input; its view."""
        self.items.append(item)
        self.values.append(None)
        self.status.append(0)
        self.tokens.append(0)
        self.cost.append(0.0)
        self.duration.append(math.nan)
        self.attempts.append(0)
        return ItemResult(self, len(self.items) - 1)

    def __len__(self) -> int:
        return len(self.status)

    def __getitem__(self, index: Any) -> Any:
        size = len(self.status)
        if isinstance(index, slice):
            return [ItemResult(self, i) for i in range(*index.indices(size))]
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("item index out of range")
        return ItemResult(self, index)

    def __iter__(self) -> Iterator[ItemResult]:
        for i in range(len(self.status)):
            yield ItemResult(self, i)

    def with_status(self, *names: str) -> Iterator[int]:
        """The indices of the items in one of these states, in order (no view made)."""
        codes = frozenset(_CODE[name] for name in names)
        if len(codes) == 1:  # bytearray.find runs in C
            code = bytes(codes)
            i = self.status.find(code)
            while i != -1:
                yield i
                i = self.status.find(code, i + 1)
            return
        for i, status in enumerate(self.status):
            if status in codes:
                yield i

    def results(self) -> list[Any]:
        """Each done item's value, ``None`` for the others, in input order."""
        done = _CODE["done"]
        return [v if s == done else None for v, s in zip(self.values, self.status, strict=True)]


class ItemResult:
    """One item: its state, value or error, tokens, cost and time; its branch on demand.
    A view of its run's columns (`ItemTable`)."""

    __slots__ = ("_table", "index")

    def __init__(self, table: ItemTable, index: int) -> None:
        self._table = table
        self.index = index

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ItemResult):
            return NotImplemented
        return self._table is other._table and self.index == other.index

    def __hash__(self) -> int:
        return hash((id(self._table), self.index))

    def __repr__(self) -> str:
        return f"ItemResult(index={self.index}, status={self.status!r}, value={self.value!r:.60})"

    @property
    def run(self) -> Any:
        return self._table.run

    @property
    def item(self) -> Any:
        return self._table.items[self.index]

    @item.setter
    def item(self, value: Any) -> None:
        self._table.items[self.index] = value

    @property
    def status(self) -> str:
        """pending | running | done | failed | stopped"""
        return STATUSES[self._table.status[self.index]]

    @status.setter
    def status(self, value: str) -> None:
        self._table.status[self.index] = _CODE[value]

    @property
    def value(self) -> Any:
        return self._table.values[self.index]

    @value.setter
    def value(self, value: Any) -> None:
        self._table.values[self.index] = value

    @property
    def tokens(self) -> int:
        big = self._table.big_tokens.get(self.index)
        return big if big is not None else self._table.tokens[self.index]

    @tokens.setter
    def tokens(self, value: int) -> None:
        table = self._table
        if value > _MOST:
            table.big_tokens[self.index], value = value, 0
        else:
            table.big_tokens.pop(self.index, None)
        table.tokens[self.index] = value

    @property
    def cost_usd(self) -> float | None:
        usd = self._table.cost[self.index]
        return None if usd != usd else usd  # NaN: unpriced

    @cost_usd.setter
    def cost_usd(self, value: float | None) -> None:
        self._table.cost[self.index] = math.nan if value is None else value

    @property
    def duration(self) -> float | None:
        seconds = self._table.duration[self.index]
        return None if seconds != seconds else seconds

    @duration.setter
    def duration(self, value: float | None) -> None:
        self._table.duration[self.index] = math.nan if value is None else value

    @property
    def attempts(self) -> int:
        return self._table.attempts[self.index]

    @attempts.setter
    def attempts(self, value: int) -> None:
        self._table.attempts[self.index] = value

    @property
    def error(self) -> BaseException | None:
        return self._table.errors.get(self.index)

    @error.setter
    def error(self, value: BaseException | None) -> None:
        _keep(self._table.errors, self.index, value)

    @property
    def live(self) -> Any:
        """The item's Branch while it runs (or kept: `BatchRun.keeps_branches`)."""
        return self._table.live.get(self.index)

    @live.setter
    def live(self, value: Any) -> None:
        _keep(self._table.live, self.index, value)

    @property
    def custom_id(self) -> str | None:
        """Its request's id in a provider batch, while it is kept."""
        return self._table.custom_ids.get(self.index)

    @custom_id.setter
    def custom_id(self, value: str | None) -> None:
        _keep(self._table.custom_ids, self.index, value)

    @property
    def reason(self) -> str | None:
        """Why a pending item was not started ("not started (budget)")."""
        return self._table.reasons.get(self.index)

    @reason.setter
    def reason(self, value: str | None) -> None:
        _keep(self._table.reasons, self.index, value)

    @property
    def branch(self) -> Any:
        """The item's Branch: the live one while it runs, else made from its row."""
        live = self.live
        run = self._table.run
        if live is not None or run is None:
            return live
        return run.branch(self.index)

    @branch.setter
    def branch(self, value: Any) -> None:
        self.live = value

    @property
    def label(self) -> str:
        return describe(self.item)

    @property
    def error_text(self) -> str | None:
        error = self.error
        if error is None:
            return None
        from ..models.secrets import redact

        return redact(f"{type(error).__name__}: {error}")


def _keep(column: dict[int, Any], index: int, value: Any) -> None:
    if value is None:
        column.pop(index, None)
    else:
        column[index] = value
