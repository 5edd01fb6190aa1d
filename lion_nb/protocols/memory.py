"""Branch memory: a small async store of text records, and the in-process default.

`MemoryStore` is the seam: any backend (a vector database, a SQLite table, a service) that
implements these six members can be given to a branch or a session. `InMemoryStore` is the
default a branch creates lazily on first use (ADR-0016 D3): it lives and dies with the
process, is never serialized, and searches by plain term overlap so results are
deterministic and need no model or index.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable
from uuid import uuid4

from ..shapes import JsonObject

__all__ = ["InMemoryStore", "MemoryRecord", "MemoryStore"]

_TERMS = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One stored text with its metadata."""

    id: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: float = field(default_factory=time.time)


@runtime_checkable
class MemoryStore(Protocol):
    """What a branch needs from a memory backend."""

    async def add(self, content: str, *, metadata: JsonObject | None = None) -> str:
        """Store ``content``; return its new id."""
        ...

    async def get(self, id: str) -> MemoryRecord | None:
        """The record with ``id``, or ``None``."""
        ...

    async def search(self, query: str, limit: int = 5) -> list[MemoryRecord]:
        """The records most relevant to ``query``, best first, at most ``limit``."""
        ...

    async def delete(self, id: str) -> bool:
        """Remove a record; ``True`` when it existed."""
        ...

    async def list(self) -> list[MemoryRecord]:
        """Every record, oldest first."""
        ...

    def __len__(self) -> int: ...


def _terms(text: str) -> set[str]:
    return {t.casefold() for t in _TERMS.findall(text)}


class InMemoryStore:
    """Records in a dict, in insertion order; search scores by shared terms.

    A record's score is the number of distinct query terms it contains, with how often they
    occur as the tie-breaker; equal scores keep insertion order. Records sharing no term with
    the query are not returned.
    """

    def __init__(self) -> None:
        self._records: dict[str, MemoryRecord] = {}

    async def add(self, content: str, *, metadata: JsonObject | None = None) -> str:
        if not isinstance(content, str):
            raise TypeError(
                f"`InMemoryStore.add` stores text, got `{type(content).__name__}`; "
                "pass `str(value)` or a JSON string."
            )
        record = MemoryRecord(id=uuid4().hex, content=content, metadata=dict(metadata or {}))
        self._records[record.id] = record
        return record.id

    async def get(self, id: str) -> MemoryRecord | None:
        return self._records.get(id)

    async def search(self, query: str, limit: int = 5) -> list[MemoryRecord]:
        wanted = _terms(query or "")
        if not wanted or limit <= 0:
            return []
        scored = []
        for order, record in enumerate(self._records.values()):
            counts = Counter(t.casefold() for t in _TERMS.findall(record.content))
            shared = wanted & counts.keys()
            if shared:
                hits = sum(counts[t] for t in shared)
                scored.append((-len(shared), -hits, order, record))
        scored.sort(key=lambda item: item[:3])
        return [item[3] for item in scored[:limit]]

    async def delete(self, id: str) -> bool:
        return self._records.pop(id, None) is not None

    async def list(self) -> list[MemoryRecord]:
        return list(self._records.values())

    def __len__(self) -> int:
        return len(self._records)

    def __repr__(self) -> str:
        return f"InMemoryStore(records={len(self)})"
