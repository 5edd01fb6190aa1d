"""Rows: how a Session, its branches, messages and logs become the store's JSON, and back.

Writing happens on the event loop (the objects are not thread-safe), so each encoder is as
cheap as it can be: a message is one ``model_dump_json`` (pydantic's compiled serializer),
never a ``to_dict`` of its whole branch. A branch's row is its ADR-0016 D2 projection
*without* its messages and logs (those are rows of their own) and without ``system`` (the
first message already is the system message): `branch_header` mirrors `Branch.to_dict` for
the rest, and the round-trip tests hold the two together.

Every string written is scrubbed of known secrets first (`lion_nb.models.secrets.scrub`),
as ``%lion save`` does; log entries are redacted by the logger's own dump.

Reading builds objects back in bulk: SQLite joins a branch's message rows into one JSON array,
which the message adapter validates in one pass (faster than decoding and validating each
row), and the Branch is built with its constructor from the header and those messages. The
same aggregate lists the rows' positions and ids, so positions in order prove the array is in
order without converting ten thousand ids in Python; the ids are kept for resuming autosave.
Messages are written without their unset optional fields (``exclude_none``): the rows are
smaller and read back as the same messages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..protocols.logs import Log
    from ..protocols.messages import RoledMessage
    from ..session.branch import Branch
    from ..session.session import Session

__all__ = [
    "BranchRows",
    "SessionRows",
    "branch_header",
    "build_session",
    "log_json",
    "message_json",
    "scrub_data",
    "session_header",
]


def _scrub(text: str) -> str:
    global _scrub_fn
    if _scrub_fn is None:
        from ..models.secrets import scrub

        _scrub_fn = scrub
    return _scrub_fn(text)


_scrub_fn: Any = None


def scrub_data(value: Any) -> Any:
    """JSON data with every string in it (keys too) scrubbed of known secrets."""
    from ..models.secrets import scrub

    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub_data(k): scrub_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_data(v) for v in value]
    return value


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


def message_json(message: RoledMessage, blobs: dict[str, str] | None = None) -> str:
    """One message as JSON text (what ``dump_message(message, "json")`` gives, serialized).
    With ``blobs``, its images and files are references, their ``data:`` URLs added to
    ``blobs`` by hash (`lion_nb.store.blobs`: kept once, however many messages repeat them)."""
    try:  # unset optional fields left out: smaller rows, faster restores, the same message
        text = message.model_dump_json(exclude_none=True)
    except Exception:  # a value in metadata pydantic cannot serialize: keep its text
        from pydantic_core import to_jsonable_python

        text = _dumps(to_jsonable_python(message.model_dump(exclude_none=True), fallback=str))
    if blobs is not None and message.kind == "instruction" and '"data:' in text:
        from .blobs import pack_message

        data = json.loads(text)
        packed = pack_message(data, blobs)
        if packed is not data:
            text = _dumps(packed)
    return _scrub(text)


def header_key(branch: Branch) -> tuple:
    """What a branch header depends on that can change often, cheaply: when it is unchanged
    the header is not encoded again on a message (a checkpoint always compares the text)."""
    models = branch.mdls
    chat, parse = models.chat, models.parse
    return (
        branch.name,
        branch.user,
        id(chat),
        id(parse),
        getattr(chat, "provider_session_id", None),
        getattr(parse, "provider_session_id", None),
    )


def branch_header(branch: Branch) -> str:
    """The branch's projection minus messages, logs and ``system``, as JSON text."""
    data = branch.model_dump(mode="json")
    data["chat_model"] = branch.chat_model.to_dict()
    if not branch.mdls.parse_is_chat:
        data["parse_model"] = branch.parse_model.to_dict()
    return _scrub(_dumps(data))


def session_header(session: Session) -> str:
    """The Session's own fields (id, name, user, metadata, created_at) as JSON text."""
    return _scrub(_dumps(session.model_dump(mode="json")))


def log_json(log: Log) -> str:
    from ..protocols.logs import dump_log

    return _dumps(dump_log(log))


# -- reading -----------------------------------------------------------------------------------
@dataclass
class BranchRows:
    """One branch as stored: its header, its messages (one JSON array, in position order),
    its log rows in order."""

    id: str
    header: str
    message_ids: list[str] = field(default_factory=list)
    messages: str = "[]"
    contiguous: bool = True  # positions were exactly 0..n-1
    ordered: bool = True  # the array came out in position order
    logs: list[tuple[str, int, str]] = field(default_factory=list)  # (id, seq, data)


@dataclass
class SessionRows:
    """One session as stored."""

    id: str
    header: str
    default_branch: str | None
    notebook: str | None
    branches: list[BranchRows] = field(default_factory=list)
    blobs: dict[str, str] = field(default_factory=dict)  # hash -> data: URL (`store.blobs`)


def _messages(rows: BranchRows, blobs: dict[str, str] | None = None) -> list[RoledMessage]:
    if not rows.ordered:
        from .errors import StoreCorruptError

        raise StoreCorruptError(
            f"Branch `{rows.id}` of the session store does not read back in order; move the "
            "store aside and restore from an export."
        )
    from ..protocols.messages import _adapter

    messages = _adapter(True).validate_json(rows.messages)
    if blobs is not None and "lion-blob:" in rows.messages:
        from .blobs import unpack_messages

        unpack_messages(messages, blobs)
    return messages


def _logs(rows: BranchRows) -> list[Log]:
    from ..protocols.logs import Log

    return [Log.model_validate_json(data) for _, _, data in rows.logs]


def build_branch(rows: BranchRows, blobs: dict[str, str] | None = None) -> Branch:
    """A standalone Branch from its rows, built with the Branch constructor from the header
    (`Branch.from_dict`'s keys) and the validated messages in a Pile. The messages were
    validated one pass from JSON; going through ``from_dict`` would check them a second time,
    which is most of what a restore would cost."""
    from ..protocols.logs import Log
    from ..protocols.messages import RoledMessage
    from ..protocols.pile import Pile
    from ..session.branch import Branch

    data = json.loads(rows.header)
    messages = _messages(rows, blobs if blobs is not None else {})
    for position, message in enumerate(messages):
        if message.kind == "system" and position:
            from .errors import StoreCorruptError

            raise StoreCorruptError(
                f"Branch `{rows.id}` of the session store has a system message at position "
                f"{position}; move the store aside and restore from an export."
            )
    fields = {k: v for k, v in data.items() if k in Branch.model_fields}
    for key in ("chat_model", "parse_model"):
        if data.get(key) is not None:
            fields[key] = data[key]
    logs = _logs(rows)
    if logs:
        fields["logs"] = Pile(logs, item_type=Log)
    return Branch(messages=Pile(messages, item_type=RoledMessage), **fields)


def build_session(rows: SessionRows) -> Session:
    """The Session and its branches, in their order, with the default branch restored. A
    damaged row (JSON that does not parse, a message that does not validate) is a
    `StoreCorruptError` naming the session, so a caller can skip it and use the others."""
    from .errors import StoreCorruptError, StoreError

    try:
        return _build_session(rows)
    except StoreError:
        raise
    except Exception as exc:
        raise StoreCorruptError(
            f"Saved session `{rows.id[:8]}` is damaged ({_detail(exc)}); the other saved "
            f"sessions are unaffected. Delete it with `%lion sessions --delete {rows.id[:8]}` "
            "(`SessionStore.delete`)."
        ) from exc


def _detail(exc: Exception) -> str:
    """One line about ``exc``: for a validation error, its first problem and where."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ()))
            return f"{type(exc).__name__}: {where + ': ' if where else ''}{first['msg']}"
        except Exception:
            pass
    text = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def header_name(header: str | None) -> str | None:
    """The ``name`` in a stored header, or ``None`` (also when the header is damaged)."""
    try:
        data = json.loads(header) if header else None
    except ValueError:
        return None
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else None


def _build_session(rows: SessionRows) -> Session:
    from ..session.session import Session

    data = json.loads(rows.header)
    session = Session.from_dict({**data, "branches": []})
    branches = [build_branch(b, rows.blobs) for b in rows.branches]
    session.include_branches(branches)
    if rows.default_branch and any(str(b.id) == rows.default_branch for b in branches):
        session.default_branch = rows.default_branch
    return session
