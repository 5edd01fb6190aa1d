"""Claude's extended thinking (``POST /v1/messages``) on the loopback `FakeProvider`.

`ThinkingAPI` is a route: it answers each Messages request with the next of the replies it
was given (an ``.sse`` fixture served byte for byte, or a dict sent as a JSON message), and
keeps the rule of the real API that a fake would otherwise hide: the ``thinking`` blocks (with
their ``signature``) and ``redacted_thinking`` blocks it sent must come back in every later
request unchanged (the same JSON bytes) and at the start of their assistant turn, in the order
they came. A request that edits a signature or a thought gets 400 ``invalid_request_error``
("Invalid `signature` in `thinking` block"); one that drops or moves a block gets the 400 the
API gives when an assistant turn does not start with its thinking. A server tool's blocks
(``server_tool_use``, ``web_search_tool_result``) it sent must come back too, unchanged, or
the request gets the 400 the API gives a search result whose encrypted content was changed.
A ``document`` block's ``citations`` must be ``{"enabled": true|false}``, or the request gets
the 400 the API gives a malformed field. A scripted answer that uses a server tool is played
only to a request that offers it (``{"type": "web_search_20250305", "name": "web_search"}``):
a model cannot search with a tool it was not given, so a request without it gets a 400.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.http_server import FakeProvider, Recorded, Script, sse_events

__all__ = ["ThinkingAPI", "compact", "streamed_blocks"]

_THINKING = ("thinking", "redacted_thinking")


def compact(block: Any) -> bytes:
    """``block`` as JSON the way httpx sends it: compact, UTF-8."""
    return json.dumps(block, separators=(",", ":"), ensure_ascii=False).encode()


def streamed_blocks(events: list[str]) -> list[dict[str, Any]]:
    """The content blocks a Messages stream builds, as the API defines them from its deltas."""
    blocks: dict[int, dict[str, Any]] = {}
    for event in events:
        for line in event.splitlines():
            if not line.startswith("data: "):
                continue
            data = json.loads(line[6:])
            kind, index = data.get("type"), data.get("index")
            if kind == "content_block_start":
                blocks[index] = dict(data["content_block"])
            elif kind == "content_block_delta":
                block, delta = blocks[index], data["delta"]
                if delta["type"] == "thinking_delta":
                    block["thinking"] += delta["thinking"]
                elif delta["type"] == "signature_delta":
                    block["signature"] = delta["signature"]
                elif delta["type"] == "text_delta":
                    block["text"] += delta["text"]
                elif delta["type"] == "citations_delta":
                    block.setdefault("citations", []).append(delta["citation"])
                elif delta["type"] == "input_json_delta":
                    block.setdefault("_json", []).append(delta["partial_json"])
            elif kind == "content_block_stop" and "_json" in blocks[index]:
                partial = "".join(blocks[index].pop("_json"))
                blocks[index]["input"] = json.loads(partial) if partial.strip() else {}
    return [blocks[i] for i in sorted(blocks)]


class ThinkingAPI:
    """``ThinkingAPI(fake, [fixture or message dict, ...])``: install as a route of ``fake``."""

    def __init__(self, fake: FakeProvider, replies: list[str | dict[str, Any]]):
        self.replies = list(replies)
        self.sent: list[list[dict[str, Any]]] = []  # per answer, its thinking blocks
        self.server_blocks: list[bytes] = []  # server tools' blocks, as sent
        self.refusals: list[str] = []
        fake.routes.append(self)

    def __call__(self, recorded: Recorded) -> Script | None:
        if not recorded.path.endswith("/v1/messages"):
            return None
        problem = self._check(recorded)
        if problem is not None:
            self.refusals.append(problem)
            error = {"type": "invalid_request_error", "message": problem}
            return Script(status=400, body={"type": "error", "error": error})
        if not self.replies:
            return Script(status=500, body={"error": {"message": "no reply scripted"}})
        reply = self.replies[0]
        events = sse_events(reply) if isinstance(reply, str) else []
        content = (
            (reply.get("content") or []) if isinstance(reply, dict) else streamed_blocks(events)
        )
        problem = _not_offered(content, recorded.body)
        if problem is not None:
            self.refusals.append(problem)
            return Script(status=400, body={"type": "error", "error": {"message": problem}})
        self.replies.pop(0)
        self._remember(content)
        return Script(body=reply) if isinstance(reply, dict) else Script(events=events)

    def _remember(self, content: list[dict[str, Any]]) -> None:
        self.server_blocks += [
            compact(b)
            for b in content
            if b.get("type") == "server_tool_use" or b.get("type", "").endswith("_tool_result")
        ]
        thinking = [block for block in content if block.get("type") in _THINKING]
        if thinking:
            self.sent.append(thinking)

    def _check(self, recorded: Recorded) -> str | None:
        body = recorded.body if isinstance(recorded.body, dict) else {}
        for raw in self.server_blocks:
            if raw not in recorded.raw:
                kind = json.loads(raw)["type"]
                return f"messages: a `{kind}` block is missing or its encrypted content changed."
        messages = body.get("messages") or []
        problem = _citations_field(messages)
        if problem is not None:
            return problem
        turns = [
            (i, m["content"])
            for i, m in enumerate(messages)
            if m.get("role") == "assistant" and isinstance(m.get("content"), list)
        ]
        for blocks in self.sent:
            first = blocks[0]
            where = next(
                ((i, c) for i, c in turns if any(_same_thought(b, first) for b in c)), None
            )
            if where is None:
                return (
                    "messages: Expected `thinking` or `redacted_thinking` to start the "
                    "assistant turn that used it, but it is missing."
                )
            i, content = where
            start = content[: len(blocks)]
            for n, (got, want) in enumerate(zip(start, blocks, strict=False)):
                if got.get("type") != want["type"]:
                    return (
                        f"messages.{i}.content.{n}.type: Expected `{want['type']}`, but found "
                        f"`{got.get('type')}`. The assistant turn must start with its thinking."
                    )
                if compact(got) != compact(want) or compact(want) not in recorded.raw:
                    return (
                        f"messages.{i}.content.{n}: Invalid `signature` in `{want['type']}` block"
                    )
            if len(start) < len(blocks):
                return f"messages.{i}.content: a `thinking` block is missing."
        return None


def _not_offered(content: list[dict[str, Any]], body: Any) -> str | None:
    """A scripted answer that uses a server tool the request did not offer: the model could
    not have, so the fake refuses to play it (400) rather than hide the missing tool."""
    tools = body.get("tools") if isinstance(body, dict) else None
    offered = {
        t.get("name")
        for t in tools or ()
        if isinstance(t, dict) and str(t.get("type") or "").startswith(f"{t.get('name')}_")
    }
    for block in content:
        if block.get("type") == "server_tool_use" and block.get("name") not in offered:
            return (
                f"tools: the answer uses the `{block.get('name')}` server tool, which this "
                "request does not offer (a tool with that name and a versioned `type`)."
            )
    return None


def _citations_field(messages: list[Any]) -> str | None:
    """The API's complaint about a document's ``citations`` field (in a turn or inside a
    ``tool_result``), or None."""
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        for where, block in _blocks_in(content, f"messages.{i}.content"):
            cite = block.get("citations", {"enabled": False})
            if block.get("type") == "document" and not (
                isinstance(cite, dict)
                and list(cite) == ["enabled"]
                and isinstance(cite["enabled"], bool)
            ):
                return f"{where}.citations: Input should be {{'enabled': bool}}."
    return None


def _blocks_in(content: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    """The blocks of ``content`` with their paths, a ``tool_result``'s own blocks included."""
    found = []
    for n, block in enumerate(content if isinstance(content, list) else ()):
        if isinstance(block, dict):
            found.append((f"{where}.{n}", block))
            if block.get("type") == "tool_result":
                found += _blocks_in(block.get("content"), f"{where}.{n}.content")
    return found


def _same_thought(got: Any, want: dict[str, Any]) -> bool:
    """Whether ``got`` is meant as ``want`` (same kind and thought, whatever its signature)."""
    if not isinstance(got, dict) or got.get("type") != want["type"]:
        return False
    key = "thinking" if want["type"] == "thinking" else "data"
    return got.get(key) == want.get(key) or (
        key == "thinking" and got.get("signature") == want.get("signature")
    )
