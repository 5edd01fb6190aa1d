"""A ledger's rows kept in columns: about 90 bytes a call instead of about 260.

A session's ledger keeps one row per model call for as long as the session lives, and a
`map` over a million items makes a million calls: as tuples (each with its own float
objects and its branch id as text) they would take a quarter of a gigabyte. Here each
column is a typed array -- times and prices as doubles, the five token counts as 64-bit
integers, the model as an index into the few labels seen, a canonical branch id as its 16
bytes -- and a row is made back into its tuple only when it is read (`Ledger.as_rows`).
A price of ``None`` (an unpriced call) is kept as NaN: a recorded price is never NaN.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Sequence
from typing import Any
from uuid import UUID

__all__ = ["LedgerRows", "Row"]

#: a ledger row: (time, branch id, model, input, output, cache read, cache write, reasoning
#: tokens, usd, estimated)
Row = tuple[float, str, str, int, int, int, int, int, float | None, bool]

_NO_ID = bytes(16)
_MOST = 2**63 - 1  # the largest count a column holds


def _id_bytes(text: str) -> bytes | None:
    """A canonical (lower-case, hyphenated) UUID's 16 bytes; ``None`` for any other text."""
    digits = text.replace("-", "")
    if len(digits) != 32 or len(text) != 36 or text[8] + text[13] + text[18] + text[23] != "----":
        return None
    try:
        packed = bytes.fromhex(digits)
    except ValueError:
        return None
    return packed if packed.hex() == digits else None  # the exact text comes back


class LedgerRows(Sequence[Row]):
    """The rows of one ledger, appended as calls are recorded, read as tuples."""

    __slots__ = (
        "_counts",
        "_flags",
        "_ids",
        "_last",
        "_model_index",
        "_model_of",
        "_models",
        "_odd",
        "_usd",
        "_when",
    )  # fmt: skip

    def __init__(self) -> None:
        self._when = array("d")
        self._usd = array("d")
        self._counts = array("q")
        self._model_index = array("I")
        self._models: list[str] = []
        self._model_of: dict[str, int] = {}
        self._ids = bytearray()
        #: rows that do not fit the columns (a branch id that is not a canonical UUID, a
        #: count beyond 64 bits), kept as they came
        self._odd: dict[int, Row] = {}
        self._flags = bytearray()
        self._last: tuple[str, bytes | None] = ("", None)  # the last id converted

    def append(self, row: Row) -> None:
        when, branch_id, model, inp, out, read, write, reason, usd, estimated = row
        last_text, packed = self._last
        if branch_id is not last_text and branch_id != last_text:
            packed = _id_bytes(branch_id)
            self._last = (branch_id, packed)
        counts = (inp, out, read, write, reason)
        if packed is None or max(counts) > _MOST:  # kept whole, beside the columns
            self._odd[len(self._flags)] = row
            packed, counts = _NO_ID, (0, 0, 0, 0, 0)
        self._when.append(when)
        self._usd.append(math.nan if usd is None else usd)
        self._counts.extend(counts)
        index = self._model_of.get(model)
        if index is None:
            index = self._model_of[model] = len(self._models)
            self._models.append(model)
        self._model_index.append(index)
        self._ids += packed
        self._flags.append(1 if estimated else 0)

    def __len__(self) -> int:
        return len(self._flags)

    def _row(self, i: int) -> Row:
        odd = self._odd.get(i)
        if odd is not None:
            return odd
        branch_id = str(UUID(bytes=bytes(self._ids[16 * i : 16 * i + 16])))
        usd: float | None = self._usd[i]
        if usd != usd:  # NaN: unpriced
            usd = None
        c = self._counts[5 * i : 5 * i + 5]
        model = self._models[self._model_index[i]]
        return (self._when[i], branch_id, model, c[0], c[1], c[2], c[3], c[4], usd,
                bool(self._flags[i]))  # fmt: skip

    # Any: an int gives a row, a slice a list of rows (Sequence's two overloads)
    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._row(i) for i in range(*index.indices(len(self)))]
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("ledger row index out of range")
        return self._row(index)

    def __iter__(self) -> Iterator[Row]:
        for i in range(len(self)):
            yield self._row(i)

    def nbytes(self) -> int:
        """The memory the columns take (their buffers, not Python's object headers)."""
        arrays = (self._when, self._usd, self._counts, self._model_index)
        return sum(a.itemsize * len(a) for a in arrays) + len(self._ids) + len(self._flags)
