"""A run's items as rows: each item's conversation kept compactly, its Branch made on demand.

A live Branch per item costs about 11 KB (its managers, piles and message objects): a
million items would not fit a kernel. So an item's branch lives only while the item runs.
When it ends, its messages and logs are encoded (one ``model_dump_json`` per message, the
store's own encoding) into one row, and the Branch is let go:

- **with a store** (a session that an autosaver follows offers a *sink*, `set_sink`), the
  rows are written in batched transactions (`FLUSH_EVERY` rows, or what ended within
  `FLUSH_DELAY`), on the store's own thread, so the loop never waits for a disk; reading one back waits for the writes before
  it (the store's thread runs in order);
- **without one**, each row is kept in memory, zlib-compressed (a few hundred bytes).

``run.branch(i)`` rebuilds item ``i``'s Branch from its row: the same id, name, messages
and logs, the run's model -- a standalone branch, not a member of the session (include it to
go on with it). The store layer sits above this one, so it registers its sink here
(`set_sink`) rather than being imported.
"""

from __future__ import annotations

import json
import weakref
import zlib
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

__all__ = [
    "FLUSH_EVERY",
    "LIVE_ITEMS",
    "ItemRows",
    "RowSink",
    "decode_row",
    "encode_row",
    "set_sink",
    "sink_for",
]

#: rows written to a store per transaction, at most
FLUSH_EVERY = 512
#: and at the latest this long (seconds) after the first of them ended
FLUSH_DELAY = 0.25
_SEP = "\x1f"  # never in JSON text: control characters are escaped there


class RowSink(Protocol):
    """Where a store keeps item rows (`lion_nb.store.items.ItemSink`)."""

    def put(self, session_id: str, run: str, rows: list[tuple[int, bytes]]) -> Any: ...

    def get(self, session_id: str, run: str, index: int) -> bytes | None: ...

    def delete(self, session_id: str, run: str, indices: list[int] | None = None) -> Any: ...


_SINKS: weakref.WeakKeyDictionary[Any, RowSink] = weakref.WeakKeyDictionary()
#: ids (text) of the item branches running now: attached to their session's signal bus but
#: not members, so an autosaver tells their signals apart with one set look-up
LIVE_ITEMS: set[str] = set()


def set_sink(session: Any, sink: RowSink | None) -> None:
    """Offer (or, with ``None``, withdraw) a store for ``session``'s item rows."""
    if sink is None:
        _SINKS.pop(session, None)
    else:
        _SINKS[session] = sink


def sink_for(session: Any) -> RowSink | None:
    return _SINKS.get(session)


# -- encoding ------------------------------------------------------------------------------------
def _message_json(message: Any) -> str:
    from ..models.secrets import scrub

    try:
        text = message.model_dump_json(exclude_none=True)
    except Exception:  # a metadata value pydantic cannot serialize: keep its text
        from pydantic_core import to_jsonable_python

        data = to_jsonable_python(message.model_dump(exclude_none=True), fallback=str)
        text = json.dumps(data, ensure_ascii=False, default=str)
    return scrub(text)


def _log_json(entry: Any, dump_log: Any) -> str:
    from ..models.secrets import scrub

    try:  # pydantic's compiled dump (a tenth of `dump_log`'s cost), scrubbed of secrets
        return scrub(entry.model_dump_json())
    except Exception:  # a value pydantic cannot serialize: the logger's own dump
        return json.dumps(dump_log(entry), default=str)


def encode_row(branch: Any) -> bytes:
    """One item's branch (id, name, metadata, messages, logs) as one compressed row."""
    from ..protocols.logs import dump_log

    head = json.dumps(
        {"id": str(branch.id), "name": branch.name, "metadata": branch.metadata},
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    messages = ",".join(_message_json(m) for m in branch.messages)
    logs = ",".join(_log_json(entry, dump_log) for entry in branch.logs)
    return zlib.compress(f"{head}{_SEP}[{messages}]{_SEP}[{logs}]".encode(), 1)


def decode_row(row: bytes, base: Any, model: Any) -> Any:
    """The Branch a row was made from, with ``base``'s user and tools and ``model``."""
    from ..protocols.logs import Log
    from ..protocols.messages import RoledMessage, _adapter
    from ..protocols.pile import Pile
    from .branch import Branch

    head, messages, logs = zlib.decompress(row).decode().split(_SEP)
    data = json.loads(head)
    chat = model if model is not None else base.chat_model
    fields: dict[str, Any] = {}
    if not base.mdls.parse_is_chat:
        fields["parse_model"] = base.parse_model
    entries = [Log.model_validate(e) for e in json.loads(logs)]
    if entries:
        fields["logs"] = Pile(entries, item_type=Log)
    return Branch(
        id=data["id"],
        name=data.get("name"),
        user=base.user,
        messages=Pile(_adapter(True).validate_json(messages), item_type=RoledMessage),
        tools=list(base.acts.registry.values()) or None,
        chat_model=chat,
        metadata=data.get("metadata") or {},
        **fields,
    )


# -- a run's rows ----------------------------------------------------------------------------------
class ItemRows:
    """The rows of one run: in its session's store when one is offered, else in memory."""

    def __init__(self, session: Any, run: str):
        self.session_id = str(session.id)
        self.run = run
        self.sink = sink_for(session)
        self._memory: dict[int, bytes] = {}
        self._pending: list[tuple[int, bytes]] = []
        self.bytes = 0  # the size of the rows kept (compressed)

    def put(self, index: int, branch: Any) -> None:
        row = encode_row(branch)
        self.bytes += len(row)
        if self.sink is None:
            self._memory[index] = row
            return
        self._pending.append((index, row))
        if len(self._pending) >= FLUSH_EVERY:
            self.flush()
        elif len(self._pending) == 1:
            try:
                import asyncio

                asyncio.get_running_loop().call_later(FLUSH_DELAY, self.flush)
            except RuntimeError:  # no loop: the run's end flushes
                pass

    def flush(self) -> None:
        """Hand the rows waiting to the store (never waits for it)."""
        if self.sink is not None and self._pending:
            rows, self._pending = self._pending, []
            self.sink.put(self.session_id, self.run, rows)

    def get(self, index: int) -> bytes | None:
        if self.sink is None:
            return self._memory.get(index)
        for i, row in reversed(self._pending):
            if i == index:
                return row
        return self.sink.get(self.session_id, self.run, index)

    def drop(self, indices: list[int] | None = None) -> None:
        """Forget the rows of ``indices`` (all of them with ``None``)."""
        if indices is None:
            self._memory.clear()
            self._pending.clear()
        else:
            gone = set(indices)
            for index in indices:
                self._memory.pop(index, None)
            self._pending = [(i, r) for i, r in self._pending if i not in gone]
        if self.sink is not None:
            self.sink.delete(self.session_id, self.run, indices)


class LazyBranches(Sequence[Any]):
    """``run.branches``: item ``i``'s Branch made when it is read (``None``: never ran)."""

    def __init__(self, run: Any):
        self._run = run

    def __len__(self) -> int:
        return len(self._run.items)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._run.branch(i) for i in range(*index.indices(len(self)))]
        return self._run.branch(index)

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self._run.branch(i)

    def __repr__(self) -> str:
        return f"<{len(self)} item branches of {self._run.name}, made when read>"
