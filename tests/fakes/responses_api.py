"""The OpenAI Responses API (``POST /v1/responses``) on the loopback `FakeProvider`.

`ResponsesAPI` is a route: it answers each request with the next of the fixtures it was given
(``.sse`` as a stream, ``.json`` as a body), byte for byte, and keeps one rule of the real API
that a fake would otherwise hide: with ``store: false`` the reasoning items it sent must come
back in every later request unchanged (the same JSON bytes, as ``encrypted_content`` cannot
be checked otherwise) and in place (right before the item that followed them in the
answer). A request that drops, edits or moves one gets 400 ``invalid_request_error``, as the
API answers a reasoning item it cannot decrypt or one missing its required following item.

`variant` makes a copy of a fixture's text with other ids and other encrypted content, for a
conversation of several rounds whose reasoning items must all differ.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.http_server import FIXTURES, FakeProvider, Recorded, Script, sse_events

__all__ = ["ResponsesAPI", "compact", "url_cited", "variant"]


def compact(item: Any) -> bytes:
    """``item`` as JSON the way the API sends it and httpx sends it back: compact, UTF-8."""
    return json.dumps(item, separators=(",", ":"), ensure_ascii=False).encode()


def variant(name: str, tag: str) -> str:
    """The text of fixture ``name`` with its response, item and call ids and its encrypted
    content made distinct by ``tag`` (letters only, so the JSON stays valid)."""
    text = (FIXTURES / name).read_text()
    for prefix in ("resp_", "rs_", "fc_", "msg_", "call_", "gAAAAAB"):
        text = text.replace(f'":"{prefix}', f'":"{prefix}{tag}')
    return text


def url_cited(name: str, annotations: list[dict[str, Any]], *, in_items: bool = True) -> str:
    """The text of stream fixture ``name`` with ``url_citation`` ``annotations`` on its first
    ``output_text`` part, sent as the API sends them: a ``response.output_text.annotation.added``
    event each after the part's text, and on the part in the ``.done`` item and the terminal
    response (``in_items=False`` leaves them out there, so only the events carry them)."""
    out: list[str] = []
    for event in sse_events(name):
        head, _, data = event.partition("data: ")
        payload = json.loads(data)
        kind = payload.get("type")
        items = [payload.get("item")] if kind == "response.output_item.done" else []
        items += (payload.get("response") or {}).get("output") or []
        for item in items if in_items else ():
            if isinstance(item, dict) and item.get("type") == "message":
                item["content"][0]["annotations"] = annotations
        out.append(head + "data: " + compact(payload).decode())
        if kind == "response.output_text.done":
            for i, note in enumerate(annotations):
                added = {
                    "type": "response.output_text.annotation.added",
                    "item_id": payload["item_id"],
                    "output_index": payload["output_index"],
                    "content_index": payload["content_index"],
                    "annotation_index": i,
                    "annotation": note,
                }
                line = compact(added).decode()
                out.append(f"event: response.output_text.annotation.added\ndata: {line}")
    return "\n\n".join(out) + "\n\n"


class ResponsesAPI:
    """``ResponsesAPI(fake, [fixture, SSE text or answer dict, ...])``: install as a route of
    ``fake``."""

    def __init__(self, fake: FakeProvider, replies: list[str | dict[str, Any]]):
        self.replies = list(replies)
        self.sent: list[tuple[bytes, dict[str, Any] | None]] = []  # (reasoning, next item)
        self.refusals: list[str] = []
        fake.routes.append(self)

    def __call__(self, recorded: Recorded) -> Script | None:
        if not recorded.path.endswith("/responses"):
            return None
        body = recorded.body if isinstance(recorded.body, dict) else {}
        problem = self._check(recorded)
        if problem is not None:
            self.refusals.append(problem)
            error = {"type": "invalid_request_error", "message": problem, "param": "input"}
            return Script(status=400, body={"error": error})
        if not self.replies:
            return Script(status=500, body={"error": {"message": "no reply scripted"}})
        reply = self.replies.pop(0)
        if isinstance(reply, dict):
            self._remember(reply.get("output") or [])
            return Script(body=reply)
        if reply.endswith(".json"):
            body = json.loads((FIXTURES / reply).read_text())
            self._remember(body.get("output") or [])
            return Script(body=(FIXTURES / reply).read_bytes(), content_type="application/json")
        if not body.get("stream"):
            return Script(status=400, body={"error": {"message": "a stream fixture, no stream"}})
        events = sse_events(reply)
        self._remember(_done_items(events))
        return Script(events=events)

    def _remember(self, output: list[dict[str, Any]]) -> None:
        for i, item in enumerate(output):
            if item.get("type") == "reasoning":
                following = output[i + 1] if i + 1 < len(output) else None
                self.sent.append((compact(item), following))

    def _check(self, recorded: Recorded) -> str | None:
        body = recorded.body if isinstance(recorded.body, dict) else {}
        items = body.get("input") if isinstance(body.get("input"), list) else []
        for raw, following in self.sent:
            if raw not in recorded.raw:
                item = json.loads(raw)
                return f"Item with id '{item['id']}' not found, or its encrypted content changed."
            index = next(i for i, it in enumerate(items) if compact(it) == raw)
            nxt = items[index + 1] if index + 1 < len(items) else None
            wants_call = following is not None and following.get("type") == "function_call"
            if wants_call and (not nxt or nxt.get("call_id") != following.get("call_id")):
                return (
                    f"Item '{json.loads(raw)['id']}' of type 'reasoning' was provided "
                    "without its required following item."
                )
        return None


def _done_items(events: list[str]) -> list[dict[str, Any]]:
    """The output items of a stream as its ``response.output_item.done`` events give them."""
    items: dict[int, dict[str, Any]] = {}
    for event in events:
        for line in event.splitlines():
            if line.startswith("data: "):
                data = json.loads(line[6:])
                if data.get("type") == "response.output_item.done":
                    assert compact(data["item"]) in line.encode()  # the bytes as served
                    items[data["output_index"]] = data["item"]
    return [items[i] for i in sorted(items)]
