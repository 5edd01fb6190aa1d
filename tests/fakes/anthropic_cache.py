"""The Messages API's prompt cache, played on a `FakeProvider`.

``AnthropicCache(fake)`` answers ``POST /v1/messages`` (streamed or not) and reports usage
the way the API accounts for its cache: the request is read as a sequence of blocks in the
API's cache order (tools, then system, then each message's content blocks); every block that
carries ``cache_control`` is a breakpoint. The longest prefix ending at one of the request's
breakpoints that an earlier request wrote is ``cache_read_input_tokens``; the rest up to the
last breakpoint is ``cache_creation_input_tokens`` (and each breakpoint's prefix is written);
what follows the last breakpoint is plain ``input_tokens``. A token is four characters of the
block's JSON (without its ``cache_control``), at least one per block. The answer is
``answer(<last user text>)``, with ``output_tokens`` its length in the same measure.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from .http_server import FakeProvider, Recorded, Script

__all__ = ["AnthropicCache", "block_tokens"]


def block_tokens(block: Any) -> int:
    """The fake's token count of one block."""
    if isinstance(block, dict):
        block = {k: v for k, v in block.items() if k != "cache_control"}
    return max(1, len(json.dumps(block, sort_keys=True, ensure_ascii=False)) // 4)


def _blocks(body: dict[str, Any]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = [("tool", t) for t in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str):
        out.append(("system", {"type": "text", "text": system}))
    else:
        out.extend(("system", b) for b in system or [])
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        out.extend((message.get("role"), b) for b in content or [])
    return out


def _key(blocks: list[tuple[str, Any]]) -> str:
    clean = [
        (role, {k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, dict) else b)
        for role, b in blocks
    ]
    return json.dumps(clean, sort_keys=True, ensure_ascii=False)


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(
                b.get("text", "") for b in content or [] if isinstance(b, dict) and "text" in b
            )
    return ""


class AnthropicCache:
    """The route; ``written`` holds every cached prefix, ``usages`` every reported usage."""

    def __init__(self, fake: FakeProvider, *, answer: Callable[[str], str] | None = None):
        self.answer = answer or (lambda text: f"Noted: {text[:40]}")
        self.written: set[str] = set()
        self.usages: list[dict[str, int]] = []
        self._lock = threading.Lock()
        fake.routes.append(self.route)

    def account(self, body: dict[str, Any]) -> dict[str, int]:
        """The usage of one request, writing its breakpoints' prefixes to the cache."""
        blocks = _blocks(body)
        sizes = [block_tokens(b) for _, b in blocks]
        marks = [
            i for i, (_, b) in enumerate(blocks) if isinstance(b, dict) and "cache_control" in b
        ]
        if len(marks) > 4:
            raise ValueError("A maximum of 4 blocks with cache_control may be provided.")
        with self._lock:
            read_end = 0
            for end in marks:
                if _key(blocks[: end + 1]) in self.written:
                    read_end = end + 1
            last = marks[-1] + 1 if marks else 0
            for end in marks:
                self.written.add(_key(blocks[: end + 1]))
        read = sum(sizes[:read_end])
        created = sum(sizes[read_end:last]) if last > read_end else 0
        fresh = sum(sizes) - read - created
        return {
            "input_tokens": fresh,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": created,
        }

    def route(self, rec: Recorded) -> Script | None:
        if rec.method != "POST" or not rec.path.endswith("/v1/messages"):
            return None
        body = rec.body if isinstance(rec.body, dict) else {}
        try:
            usage = self.account(body)
        except ValueError as exc:
            error = {"type": "invalid_request_error", "message": str(exc)}
            return Script(status=400, body={"type": "error", "error": error})
        text = self.answer(_last_user_text(body))
        usage["output_tokens"] = block_tokens({"type": "text", "text": text})
        with self._lock:
            self.usages.append(dict(usage))
        message = {
            "id": f"msg_cache_{len(self.usages)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "claude",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            return Script(body=message)
        return Script(events=_stream(message))


def _stream(message: dict[str, Any]) -> list[str]:
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    text = message["content"][0]["text"]
    events = [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return [f"event: {name}\ndata: {json.dumps(data)}" for name, data in events]
