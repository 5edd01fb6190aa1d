"""ACP ``session/update`` notifications as `StreamChunk`s, the one stream contract `run` records.

- ``agent_message_chunk`` / ``agent_thought_chunk``: ``text`` / ``thinking`` deltas (content
  that is not text is named in brackets, never dropped silently).
- ``tool_call``: a ``tool_use`` (id, the call's title, its kind, status, locations and raw
  input); ``tool_call_update``s are merged into what is known of the call, and the one that
  ends it (``completed`` / ``failed``) becomes its ``tool_result``: the content's text, its
  diffs (unified, from ``oldText`` / ``newText``), locations and raw output.
- ``plan``: a ``plan`` tool step holding the checklist (every entry, its status and priority)
  and, as its result, the checklist as text (``[x]`` done, ``[~]`` in progress, ``[ ]``
  pending); the last plan also goes into the turn's result metadata.
- ``usage_update``: kept (context used and size, the session's cumulative cost) for the
  turn's result.
- Everything else (commands, modes, config options, session info, the user's own echoed
  message) changes nothing the branch records.
"""

from __future__ import annotations

import difflib
from typing import Any

from ..stream import StreamChunk

__all__ = ["UpdateReader", "checklist", "unified_diff"]

_ENDED = ("completed", "failed")


def unified_diff(path: str, old: str | None, new: str) -> str:
    """The change as a unified diff (a new file: every line added)."""
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path.lstrip('/')}" if old is not None else "/dev/null",
        tofile=f"b/{path.lstrip('/')}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def checklist(entries: list[dict[str, Any]]) -> str:
    marks = {"completed": "[x]", "in_progress": "[~]"}
    return "\n".join(
        f"{marks.get(str(e.get('status')), '[ ]')} {e.get('content', '')}" for e in entries
    )


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(getattr(block, "text", "") or "")
    if kind == "resource_link":
        return f"[{getattr(block, 'name', '') or getattr(block, 'uri', '')}]"
    if kind == "resource":
        text = getattr(getattr(block, "resource", None), "text", None)
        return str(text) if text is not None else "[resource]"
    return f"[{kind or 'content'}]"


def _dump(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


class UpdateReader:
    """One turn's updates into chunks; keeps what the turn's result reports."""

    def __init__(self) -> None:
        self.calls: dict[str, dict[str, Any]] = {}  # tool call id -> what is known of it
        self.plan: list[dict[str, Any]] | None = None
        self.plans = 0
        self.usage_update: dict[str, Any] | None = None
        self.text_chars = 0

    def read(self, update: Any) -> list[StreamChunk]:
        kind = getattr(update, "session_update", None)
        if kind == "agent_message_chunk":
            text = _block_text(update.content)
            self.text_chars += len(text)
            return [StreamChunk(type="text", content=text, is_delta=True)] if text else []
        if kind == "agent_thought_chunk":
            text = _block_text(update.content)
            return [StreamChunk(type="thinking", content=text, is_delta=True)] if text else []
        if kind == "tool_call":
            return self._start(update)
        if kind == "tool_call_update":
            return self._progress(update)
        if kind == "plan":
            return self._plan(update)
        if kind == "usage_update":
            cost = getattr(update, "cost", None)
            self.usage_update = {
                "used": update.used,
                "size": update.size,
                **({"cost": _dump(cost)} if cost is not None else {}),
            }
        return []

    # -- tool calls ------------------------------------------------------------------------------
    def _merge(self, call: dict[str, Any], update: Any) -> None:
        for field, key in (
            ("title", "title"),
            ("kind", "kind"),
            ("status", "status"),
            ("raw_input", "raw_input"),
            ("raw_output", "raw_output"),
        ):
            value = getattr(update, field, None)
            if value is not None:
                call[key] = _dump(value)
        locations = getattr(update, "locations", None)
        if locations:
            call["locations"] = [_dump(loc) for loc in locations]
        content = getattr(update, "content", None)
        if content:
            call.setdefault("content", []).extend(content)

    def _start(self, update: Any) -> list[StreamChunk]:
        call = self.calls.setdefault(update.tool_call_id, {"started": False})
        self._merge(call, update)
        chunks = [self._use(update.tool_call_id, call)]
        if call.get("status") in _ENDED:
            chunks.append(self._result(update.tool_call_id, call))
        return chunks

    def _progress(self, update: Any) -> list[StreamChunk]:
        call = self.calls.setdefault(update.tool_call_id, {"started": False})
        self._merge(call, update)
        chunks = [] if call["started"] else [self._use(update.tool_call_id, call)]
        if call.get("status") in _ENDED and not call.get("ended"):
            chunks.append(self._result(update.tool_call_id, call))
        return chunks

    def _use(self, call_id: str, call: dict[str, Any]) -> StreamChunk:
        call["started"] = True
        shown: dict[str, Any] = {
            k: call[k] for k in ("kind", "status", "locations", "raw_input") if k in call
        }
        return StreamChunk(
            type="tool_use",
            tool_id=call_id,
            tool_name=str(call.get("title") or call.get("kind") or "tool"),
            tool_input=shown,
            metadata={"acp": "tool_call"},
        )

    def _result(self, call_id: str, call: dict[str, Any]) -> StreamChunk:
        call["ended"] = True
        texts: list[str] = []
        diffs: list[dict[str, Any]] = []
        for item in call.get("content", []):
            kind = getattr(item, "type", None)
            if kind == "content":
                texts.append(_block_text(item.content))
            elif kind == "diff":
                diffs.append(
                    {
                        "path": item.path,
                        "diff": unified_diff(item.path, item.old_text, item.new_text),
                    }
                )
            elif kind == "terminal":
                texts.append(f"[terminal {item.terminal_id}]")
        output: dict[str, Any] = {"status": call.get("status")}
        if texts:
            output["content"] = "\n".join(texts)
        if diffs:
            output["diffs"] = diffs
        for key in ("locations", "raw_output"):
            if key in call:
                output[key] = call[key]
        return StreamChunk(
            type="tool_result",
            tool_id=call_id,
            tool_output=output,
            is_error=call.get("status") == "failed",
        )

    # -- plans -----------------------------------------------------------------------------------
    def _plan(self, update: Any) -> list[StreamChunk]:
        entries = [_dump(e) for e in update.entries]
        self.plan = entries
        self.plans += 1
        call_id = f"plan-{self.plans}"
        return [
            StreamChunk(
                type="tool_use",
                tool_id=call_id,
                tool_name="plan",
                tool_input={"entries": entries},
                metadata={"acp": "plan"},
            ),
            StreamChunk(type="tool_result", tool_id=call_id, tool_output=checklist(entries)),
        ]
