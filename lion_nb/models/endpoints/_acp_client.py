"""The notebook's side of ACP: what the agent may ask of lion_nb while a turn runs.

- ``session/update``: handed to the turn in progress (`Turn.updates`), in arrival order;
  an update for no turn (after a cancelled one ended) is dropped.
- ``session/request_permission``: answered by the turn's ``permission`` callback (the
  branch's approval, set by `run`); with none, or once the turn is cancelled, the answer is
  ``cancelled``. Each decision is recorded on the branch as a ``permission`` step.
- ``fs/read_text_file`` / ``fs/write_text_file``: served from the notebook's folder
  (``root``); a path outside it (``..``, a symlink out, another absolute path) is refused.
  A write is shown as a diff and asked for like a tool call; it happens only once allowed.
- The terminal capability is not offered: ``terminal/create`` and extension methods are
  answered "method not found".
"""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path
from typing import Any

from ..stream import StreamChunk
from ._acp_updates import unified_diff

__all__ = ["NotebookClient", "Turn"]

MAX_READ_CHARS = 4 * 1024 * 1024  # a file read the agent asks for is cut here
MAX_UPDATE_CHARS = 4 * 1024 * 1024  # one update's text above this is a fault of the agent
MAX_UPDATES = 200_000  # updates in one turn above this are a fault (a flood)

_WRITE_OPTIONS = [
    {"id": "allow_once", "name": "Write the file", "kind": "allow_once"},
    {"id": "reject_once", "name": "Do not write it", "kind": "reject_once"},
]


class Turn:
    """One prompt in flight: its updates, its permission callback, what is waiting."""

    def __init__(self, session_id: str, permission: Any):
        self.session_id = session_id
        self.permission = permission
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.waiting: set[asyncio.Future[Any]] = set()
        self.cancelled = False
        self.count = 0
        self.fault: str | None = None
        self._ids = itertools.count(1)

    def put(self, item: Any) -> None:
        self.queue.put_nowait(item)

    def next_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids)}"

    async def decide(
        self, title: str, arguments: dict[str, Any], options: list[dict[str, Any]]
    ) -> Any:
        """The chosen option id (``None``: cancelled or nobody decides); the wait is
        cancelled when the turn is."""
        if self.permission is None or self.cancelled:
            return None
        waiting = asyncio.ensure_future(self.permission(title, arguments, options))
        self.waiting.add(waiting)
        try:
            return await waiting
        except asyncio.CancelledError:
            if self.cancelled:
                return None
            raise
        finally:
            self.waiting.discard(waiting)

    def cancel(self) -> None:
        self.cancelled = True
        for waiting in list(self.waiting):
            waiting.cancel()


def _inside(root: Path, path: str) -> Path | None:
    """``path`` (absolute, or relative to ``root``) resolved, if it is inside ``root``."""
    try:
        target = (root / path).resolve() if not os.path.isabs(path) else Path(path).resolve()
    except (OSError, ValueError):
        return None
    return target if target == root or root in target.parents else None


def _cut(text: str, line: int | None, limit: int | None) -> str:
    if line is None and limit is None:
        return text
    lines = text.splitlines(keepends=True)
    start = max((line or 1) - 1, 0)
    end = start + limit if limit is not None and limit >= 0 else None
    return "".join(lines[start:end])


class NotebookClient:
    """The ``acp.Client`` of one agent process (see the module docstring)."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root).resolve()
        self.turn: Turn | None = None

    def _turn_for(self, session_id: str) -> Turn | None:
        turn = self.turn
        return turn if turn is not None and turn.session_id == session_id else None

    # -- updates -----------------------------------------------------------------------------
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        turn = self._turn_for(session_id)
        if turn is None or turn.fault is not None:
            return
        turn.count += 1
        text = getattr(getattr(update, "content", None), "text", None)
        if turn.count > MAX_UPDATES:
            turn.fault = f"sent more than {MAX_UPDATES:,} updates in one turn"
        elif isinstance(text, str) and len(text) > MAX_UPDATE_CHARS:
            turn.fault = (
                f"sent one update of {len(text) / 1e6:.0f} million characters (the limit is "
                f"{MAX_UPDATE_CHARS / 1e6:.0f} million)"
            )
        turn.put(turn.fault or update)

    # -- permissions -------------------------------------------------------------------------
    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        offered = [{"id": o.option_id, "name": o.name, "kind": o.kind} for o in options]
        turn = self._turn_for(session_id)
        title = str(tool_call.title or tool_call.kind or "tool call")
        arguments = {
            k: v
            for k, v in {
                "kind": tool_call.kind,
                "locations": [loc.path for loc in tool_call.locations or []] or None,
                "input": tool_call.raw_input,
            }.items()
            if v is not None
        }
        chosen = await turn.decide(title, arguments, offered) if turn is not None else None
        if chosen not in {o["id"] for o in offered}:
            chosen = None
        if turn is not None:
            self._record(turn, title, arguments, offered, chosen, tool_call.tool_call_id)
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen)
        )

    def _record(
        self,
        turn: Turn,
        title: str,
        arguments: dict[str, Any],
        offered: list[dict[str, Any]],
        chosen: str | None,
        call_id: str | None,
    ) -> None:
        kind = next((o["kind"] for o in offered if o["id"] == chosen), None)
        step = turn.next_id("permission")
        outcome = {
            "outcome": "cancelled" if turn.cancelled else (kind or "rejected"),
            "option": chosen,
        }
        if call_id:
            outcome["tool_call"] = call_id
        turn.put(
            [
                StreamChunk(
                    type="tool_use",
                    tool_id=step,
                    tool_name="permission",
                    tool_input={"title": title, **arguments, "options": offered},
                    metadata={"acp": "permission"},
                ),
                StreamChunk(
                    type="tool_result",
                    tool_id=step,
                    tool_output=outcome,
                    is_error=not (kind or "").startswith("allow"),
                ),
            ]
        )

    # -- not offered -------------------------------------------------------------------------
    async def create_terminal(self, session_id: str, command: str, **kwargs: Any) -> Any:
        """Refused: the terminal capability is not offered (the SDK would answer ``null``)."""
        from acp import RequestError

        raise RequestError.method_not_found("terminal/create")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from acp import RequestError

        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    # -- files -------------------------------------------------------------------------------
    def _refuse(self, turn: Turn | None, what: str, path: str) -> Exception:
        from acp import RequestError

        why = f"`{path}` is outside the notebook's folder; {what} refused"
        if turn is not None:
            step = turn.next_id("fs")
            turn.put(
                [
                    StreamChunk(
                        type="tool_use", tool_id=step, tool_name=what, tool_input={"path": path}
                    ),
                    StreamChunk(
                        type="tool_result", tool_id=step, tool_output={"error": why}, is_error=True
                    ),
                ]
            )
        return RequestError.invalid_params({"path": path, "reason": why})

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> Any:
        from acp import RequestError
        from acp.schema import ReadTextFileResponse

        turn = self._turn_for(session_id)
        target = _inside(self.root, path)
        if target is None:
            raise self._refuse(turn, "read_text_file", path)
        try:
            text = await asyncio.to_thread(target.read_text, encoding="utf-8", errors="replace")
        except OSError as exc:
            raise RequestError.resource_not_found(path) from exc
        text = _cut(text, line, limit)[:MAX_READ_CHARS]
        if turn is not None:
            step = turn.next_id("fs")
            shown = str(target.relative_to(self.root))
            turn.put(
                [
                    StreamChunk(
                        type="tool_use",
                        tool_id=step,
                        tool_name="read_text_file",
                        tool_input={"path": shown, "line": line, "limit": limit},
                    ),
                    StreamChunk(type="tool_result", tool_id=step, tool_output=text[:4000]),
                ]
            )
        return ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        from acp import RequestError
        from acp.schema import WriteTextFileResponse

        turn = self._turn_for(session_id)
        target = _inside(self.root, path)
        if target is None:
            raise self._refuse(turn, "write_text_file", path)
        shown = str(target.relative_to(self.root))
        try:
            old = (
                await asyncio.to_thread(target.read_text, encoding="utf-8")
                if target.exists()
                else None
            )
        except OSError:
            old = None
        diff = unified_diff(shown, old, content)
        arguments = {"kind": "edit", "path": shown, "diff": diff}
        chosen = await turn.decide(f"write {shown}", arguments, _WRITE_OPTIONS) if turn else None
        if turn is not None:
            self._record(turn, f"write {shown}", arguments, _WRITE_OPTIONS, chosen, None)
        if chosen != "allow_once":
            raise RequestError.invalid_params(
                {"path": path, "reason": "the user did not allow this write"}
            )
        await asyncio.to_thread(target.parent.mkdir, parents=True, exist_ok=True)
        await asyncio.to_thread(target.write_text, content, encoding="utf-8")
        return WriteTextFileResponse()
