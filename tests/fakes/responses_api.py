"""The OpenAI Responses API (``POST /v1/responses``) on the loopback `FakeProvider`.

`ResponsesAPI` is a route: it answers each request with the next of the fixtures it was given
(``.sse`` as a stream, ``.json`` as a body), byte for byte, and keeps one rule of the real API
that a fake would otherwise hide: with ``store: false`` the reasoning items it sent must come
back in every later request unchanged (the same JSON bytes, as ``encrypted_content`` cannot
be checked otherwise) and in place (right before the item that followed them in the
answer). A request that drops, edits or moves one gets 400 ``invalid_request_error``, as the
API answers a reasoning item it cannot decrypt or one missing its required following item.

`variant` makes a copy of a fixture's text with other ids and other encrypted content, for a
conversation of several rounds whose reasoning items must all differ. `web_searched` makes a
stream of the hosted web search tool from the reasoning fixture: its reasoning item, then a
``web_search_call`` item (``response.web_search_call.in_progress`` / ``.searching`` /
``.completed``, the item whole in ``output_item.done`` with its ``action``), then the message
citing what it found. The rule above covers the search call too: it must come back whole,
right after the reasoning item that led to it.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.http_server import FIXTURES, FakeProvider, Recorded, Script, sse_events

__all__ = ["ResponsesAPI", "compact", "url_cited", "variant", "web_searched"]

SEARCH_ID = "ws_5d0c8a3e2f1b4c6d9e7f8a1b2c3d4e5f6a7b8c9d0e1f2a3b"


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


def web_searched(query: str, words: tuple[str, ...], annotations: list[dict[str, Any]]) -> str:
    """A stream that thinks (the reasoning fixture's item), searches the web for ``query``,
    then answers ``words`` (its text deltas) citing ``annotations`` (see the module
    docstring)."""
    events = [_payload(e) for e in sse_events("openai_responses_stream_reasoning_text.sse")]
    head, reasoning, message, final = events[:2], events[2:14], events[14:22], events[22]
    search = {"id": SEARCH_ID, "type": "web_search_call", "status": "in_progress"}
    done = {**search, "status": "completed", "action": {"type": "search", "query": query}}
    at = {"output_index": 1, "item_id": SEARCH_ID}
    searching = [
        {"type": "response.output_item.added", "output_index": 1, "item": search},
        {"type": "response.web_search_call.in_progress", **at},
        {"type": "response.web_search_call.searching", **at},
        {"type": "response.web_search_call.completed", **at},
        {"type": "response.output_item.done", "output_index": 1, "item": done},
    ]
    text = "".join(words)
    answer: list[dict[str, Any]] = []
    for event in message:
        event = json.loads(json.dumps(event))
        event["output_index"] = 2
        kind = event["type"]
        if kind == "response.output_text.delta":
            if answer[-1]["type"] == "response.output_text.delta":
                continue  # one delta event a word, made below
            answer += [{**event, "delta": word} for word in words]
            continue
        if kind == "response.output_text.done":
            event["text"] = text
        for part in [event.get("part")] + ((event.get("item") or {}).get("content") or []):
            if isinstance(part, dict) and "text" in part:
                part["text"] = text if kind.endswith("done") else part["text"]
        answer.append(event)
    tools = [{"type": "web_search", "search_context_size": "medium"}]
    for event in head:
        event["response"]["tools"] = tools
    output = [reasoning[-1]["item"], done, answer[-1]["item"]]
    final["response"].update(tools=tools, output=output)
    stream = [*head, *reasoning, *searching, *answer, final]
    lines = []
    for n, event in enumerate(stream):
        rest = {k: v for k, v in event.items() if k not in ("type", "sequence_number")}
        event = {"type": event["type"], "sequence_number": n, **rest}
        lines.append(f"event: {event['type']}\ndata: {compact(event).decode()}")
    return url_cited("\n\n".join(lines) + "\n\n", annotations)


def _payload(event: str) -> dict[str, Any]:
    return json.loads(event.partition("data: ")[2])


class ResponsesAPI:
    """``ResponsesAPI(fake, [fixture, SSE text or answer dict, ...])``: install as a route of
    ``fake``."""

    def __init__(self, fake: FakeProvider, replies: list[str | dict[str, Any]]):
        self.replies = list(replies)
        self.sent: list[tuple[bytes, dict[str, Any] | None]] = []  # (reasoning, next item)
        self.refusals: list[str] = []
        self.searches: list[bytes] = []  # the hosted searches it sent, as sent
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
            elif item.get("type") == "web_search_call":
                self.searches.append(compact(item))

    def _check(self, recorded: Recorded) -> str | None:
        body = recorded.body if isinstance(recorded.body, dict) else {}
        items = body.get("input") if isinstance(body.get("input"), list) else []
        for raw, following in self.sent:
            if raw not in recorded.raw:
                item = json.loads(raw)
                return f"Item with id '{item['id']}' not found, or its encrypted content changed."
            index = next(i for i, it in enumerate(items) if compact(it) == raw)
            nxt = items[index + 1] if index + 1 < len(items) else None
            kind = following.get("type") if following is not None else None
            wants_call = kind == "function_call"
            missing = wants_call and (not nxt or nxt.get("call_id") != following.get("call_id"))
            if kind == "web_search_call":  # the search it led to, right after it
                missing = not nxt or compact(nxt) != compact(following)
            if missing:
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
