"""The OpenAI Responses API (``POST {base_url}/responses``): the other wire form of `openai`.

Stateless, as a notebook's branch is the conversation: every request has ``store: false``
and no ``previous_response_id``; ``input`` is the whole history, rebuilt each turn from the
branch's OpenAI-style messages:

- the first system message becomes ``instructions``; any later one a ``system`` message item;
- user and assistant text become message items with ``input_text`` / ``output_text`` parts,
  images ``input_image`` parts, files ``input_file`` parts;
- tool calls become ``function_call`` items and their results ``function_call_output`` items.

Reasoning models answer with ``reasoning`` items whose ``encrypted_content`` (asked for with
``include: ["reasoning.encrypted_content"]``) must come back in the next request unchanged
and in place, or the API refuses it. They are kept, as the API sent them, in the answer's
reasoning record (``metadata["reasoning_record"]``, `lion_nb.models.reasoning`):
``{"api": "openai.responses", "items": [...]}``, the answer's output in order -- reasoning and
``function_call`` items whole, a message item as ``{"type": "message"}`` (its text is the
message's own), and a hosted tool's call (``web_search_call``: the API ran the search) whole
too, since a reasoning item must come back with the item that followed it. The assistant
message renders the record beside its content
(`AssistantResponse.chat_msg`), and `to_input` puts the items back where they were. The
readable summaries are joined into ``metadata["thinking"]``.

Streams: text deltas go to `emit_text_delta`, summary deltas to `emit_thinking_delta`; the
answer is taken from the terminal event (``response.completed``, or ``response.incomplete``,
whose partial text is kept with finish reason ``length`` when ``max_output_tokens`` cut it).
Each item is taken from its ``response.output_item.done`` (the copy in ``.added`` may be
incomplete). ``response.failed`` and an ``error`` event (nested under ``error`` as the live
API sends it, or flat as the API reference has it) are the typed mid-stream error the chat
path raises, with the text that had arrived; a stream that ends before a terminal event is a
`StreamInterruptedError`.
"""

from __future__ import annotations

import json
from typing import Any

from httpx_sse import ServerSentEvent

from ..citations import CITATIONS, responses_citations
from ..reasoning import RECORD
from ..usage import responses_usage
from ._http_errors import StreamReader, error_fields
from .base import (
    ModelResponse,
    ToolCall,
    decode_arguments,
    emit_text_delta,
    emit_thinking_delta,
    plain_text,
)

__all__ = ["API", "HOSTED_ITEMS", "ResponsesStream", "read_response", "responses_body", "to_input"]

#: the ``api`` tag of this wire's reasoning records
API = "openai.responses"
#: the output items of the tools the API runs itself, kept whole in the record
HOSTED_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
    }
)
_RENAMED = {"max_tokens": "max_output_tokens", "max_completion_tokens": "max_output_tokens"}


# -- request ---------------------------------------------------------------------------------
def responses_body(
    model: str,
    request: Any,
    options: dict[str, Any],
    *,
    stream: bool,
    effort: str | None,
    cache_key: str | None,
) -> dict[str, Any]:
    """The request body for ``request`` (``options`` already without ``stream`` and
    ``reasoning``)."""
    instructions, items = to_input(request.messages)
    body: dict[str, Any] = {"model": model}
    if instructions is not None:
        body["instructions"] = instructions
    body["input"] = items
    body["store"] = False
    body["include"] = ["reasoning.encrypted_content"]
    for key, value in options.items():  # one the API does not take: its own 400 says so
        body[_RENAMED.get(key, key)] = value
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        body["tool_choice"] = {"type": "function", "name": choice["function"].get("name")}
    if not request.tools and body.get("tool_choice") == "none":
        del body["tool_choice"]
    if request.tools:
        body["tools"] = [_flat_tool(t) for t in request.tools]
    if request.response_format:
        body["text"] = {"format": _text_format(request.response_format)}
    if effort is not None:
        body["reasoning"] = {"effort": effort, "summary": "auto"}
    if stream:
        body["stream"] = True
    if cache_key:
        body.setdefault("prompt_cache_key", cache_key)
    return body


def _flat_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A chat-shaped function tool in the Responses API's flat shape."""
    fn = tool.get("function")
    if tool.get("type") != "function" or not isinstance(fn, dict):
        return tool  # already flat, or a built-in tool
    flat: dict[str, Any] = {"type": "function", "name": fn.get("name")}
    if fn.get("description") is not None:
        flat["description"] = fn["description"]
    flat["parameters"] = fn.get("parameters") or {"type": "object", "properties": {}}
    if "strict" in fn:
        flat["strict"] = fn["strict"]
    return flat


def _text_format(fmt: dict[str, Any]) -> dict[str, Any]:
    """``{"name", "schema"}`` (or a chat ``response_format``) as ``text.format``."""
    if "type" not in fmt:
        return {
            "type": "json_schema",
            "name": fmt["name"],
            "schema": fmt["schema"],
            "strict": False,
        }
    if fmt["type"] == "json_schema" and isinstance(fmt.get("json_schema"), dict):
        return {"type": "json_schema", **fmt["json_schema"]}
    return fmt


def to_input(messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """``(instructions, input items)`` from OpenAI-style chat messages (see the module
    docstring); a reasoning record's items are put back as they came, in their place."""
    instructions: str | None = None
    items: list[dict[str, Any]] = []
    for i, msg in enumerate(messages):
        role, content = msg.get("role"), msg.get("content")
        if role in ("system", "developer"):
            if i == 0 and isinstance(content, str):
                instructions = content
            else:
                items.append(_message(role, content, "input_text"))
        elif role == "tool":
            if isinstance(content, list):  # text and images (a notebook run's figure)
                output: Any = _parts(content, "input_text")
            else:
                output = content if isinstance(content, str) else json.dumps(content, default=str)
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": msg.get("tool_call_id") or "",
                    "output": output,
                }
            )
        elif role == "assistant":
            items.extend(_assistant_items(msg))
        else:
            items.append(_message("user", content, "input_text"))
    return instructions, items


def _message(role: str, content: Any, kind: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": _parts(content, kind)}


def _parts(content: Any, kind: str) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": kind, "text": content}]
    if not isinstance(content, list):
        return [{"type": kind, "text": json.dumps(content, ensure_ascii=False, default=str)}]
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, str):
            parts.append({"type": kind, "text": part})
        elif not isinstance(part, dict):
            continue
        elif part.get("type") == "text":
            parts.append({"type": kind, "text": part.get("text") or ""})
        elif part.get("type") == "image_url":
            image = part.get("image_url") or {}
            url = image.get("url") if isinstance(image, dict) else image
            parts.append(
                {"type": "input_image", "image_url": url, "detail": image.get("detail", "auto")}
                if isinstance(image, dict)
                else {"type": "input_image", "image_url": url, "detail": "auto"}
            )
        elif part.get("type") == "file":
            info = part.get("file") or {}
            wire = {k: info[k] for k in ("filename", "file_data", "file_id") if k in info}
            parts.append({"type": "input_file", **wire})
        else:
            parts.append(part)  # already in the Responses API's form
    return parts


def _assistant_items(msg: dict[str, Any]) -> list[dict[str, Any]]:
    """An assistant turn as items: its record's items in their place when it has one."""
    text = plain_text(msg.get("content"))
    calls = {}
    for call in msg.get("tool_calls") or ():
        fn = call.get("function") or call
        args = fn.get("arguments")
        if not isinstance(args, str):
            args = json.dumps(args if args is not None else {}, default=str)
        calls[call.get("id") or ""] = {
            "type": "function_call",
            "call_id": call.get("id") or "",
            "name": fn.get("name") or "",
            "arguments": args,
        }
    record = msg.get(RECORD)
    kept = record.get("items") if isinstance(record, dict) and record.get("api") == API else None
    out: list[dict[str, Any]] = []
    said = False
    for item in kept if isinstance(kept, list) else ():
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "message":
            if text and not said:
                out.append(_message("assistant", text, "output_text"))
            said = True
        elif kind == "function_call":
            if calls.pop(item.get("call_id"), None) is not None:
                out.append(item)  # as the API sent it
        elif kind is not None:
            out.append(item)  # reasoning: unchanged, in its place
    if text and not said:
        out.insert(0, _message("assistant", text, "output_text"))
    out.extend(calls.values())
    return out


# -- response --------------------------------------------------------------------------------
def read_response(data: Any, request_id: str | None, model: str) -> ModelResponse:
    """A Responses API object (non-streamed, or a stream's terminal one) as a `ModelResponse`."""
    if not isinstance(data, dict):
        raise ValueError(f"the answer is a {type(data).__name__}, not an object")
    output = data.get("output") or []
    if not isinstance(output, list):
        raise ValueError(f"`output` is a {type(output).__name__}, not a list")
    texts: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[str] = []
    kept: list[dict[str, Any]] = []
    for item in output:
        if not isinstance(item, dict):
            raise ValueError(f"`output[]` is a {type(item).__name__}, not an object")
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or ():
                if part.get("type") == "output_text":
                    texts.append(part.get("text") or "")
                elif part.get("type") == "refusal":
                    texts.append(part.get("refusal") or "")
            kept.append({"type": "message"})
        elif kind == "function_call":
            calls.append(
                ToolCall(
                    id=item.get("call_id") or "",
                    name=item.get("name") or "",
                    arguments=decode_arguments(item.get("arguments")),
                )
            )
            kept.append(item)
        elif kind == "reasoning":
            for part in item.get("summary") or ():
                if isinstance(part, dict) and part.get("text"):
                    thinking.append(part["text"])
            kept.append(item)
        elif kind in HOSTED_ITEMS:
            kept.append(item)  # a hosted tool's call (web search): the API ran it
    metadata: dict[str, Any] = {}
    if thinking:
        metadata["thinking"] = "\n\n".join(thinking)
    if any(item.get("type") not in ("message", "function_call") for item in kept):
        metadata[RECORD] = {"api": API, "items": kept}
    if citations := responses_citations(output):
        metadata[CITATIONS] = citations
    return ModelResponse(
        text="".join(texts),
        tool_calls=calls,
        usage=responses_usage(data.get("usage")),
        raw=data,
        model=data.get("model") or model,
        finish_reason=_finish_reason(data, calls),
        request_id=request_id,
        metadata=metadata,
    )


def _finish_reason(data: dict[str, Any], calls: list[ToolCall]) -> str:
    if data.get("status") == "incomplete":
        reason = (data.get("incomplete_details") or {}).get("reason")
        return "length" if reason in (None, "max_output_tokens") else str(reason)
    return "tool_calls" if calls else "stop"


class ResponsesStream(StreamReader):
    """Reads a Responses API event stream into the terminal response object."""

    def __init__(self, provider: str, request_id: str | None):
        super().__init__(provider, request_id)
        self.items: dict[int, dict[str, Any]] = {}  # output_index -> item (`.done` wins)
        #: (output_index, content_index) -> annotations from `output_text.annotation.added`
        self.annotations: dict[tuple[Any, Any], list[Any]] = {}
        self.final: dict[str, Any] | None = None

    def feed(self, event: ServerSentEvent) -> bool:
        data = event.data.strip()
        if not data or data == "[DONE]":
            return data == "[DONE]" and self.final is not None
        payload = self._decode(data)
        if not isinstance(payload, dict):
            raise self._interrupted(f"the stream sent an unexpected event: {data[:200]!r}")
        kind = payload.get("type") or event.event
        if kind == "error" or event.event == "error":
            message = error_fields(payload)[0] or "the server reported an error"
            raise self._interrupted(f"error in the middle of the stream: {message}", payload)
        if kind == "response.failed":
            response = payload.get("response") or {}
            error = response.get("error") or {}
            message = error.get("message") or "the response failed"
            code = f" ({error['code']})" if error.get("code") else ""
            raise self._interrupted(
                f"error in the middle of the stream{code}: {message}", {"error": error}
            )
        if kind == "response.output_text.delta":
            delta = payload.get("delta")
            if not isinstance(delta, str):
                raise ValueError("`delta` is not text")
            self.text.append(delta)
            emit_text_delta(delta)
        elif kind == "response.reasoning_summary_text.delta":
            emit_thinking_delta(str(payload.get("delta") or ""))
        elif kind in ("response.output_item.added", "response.output_item.done"):
            item = payload.get("item")
            if not isinstance(item, dict):
                raise ValueError("`item` is not an object")
            index = payload.get("output_index", len(self.items))
            if kind.endswith(".done") or index not in self.items:
                self.items[index] = item
        elif kind == "response.output_text.annotation.added":
            where = (payload.get("output_index"), payload.get("content_index"))
            self.annotations.setdefault(where, []).append(payload.get("annotation"))
        elif kind == "response.function_call_arguments.done":
            at = payload.get("output_index")
            item = self.items.get(at) if at is not None else None
            if item is not None and isinstance(payload.get("arguments"), str):
                item["arguments"] = payload["arguments"]
        elif kind in ("response.completed", "response.incomplete"):
            response = payload.get("response")
            if not isinstance(response, dict):
                raise ValueError("`response` is not an object")
            self.final = response
            return True
        return False

    def finish(self) -> dict[str, Any]:
        if self.final is None:
            raise self._interrupted("the stream ended before the answer was complete")
        answer = dict(self.final)
        if self.items:  # each item as its `.done` event gave it, in output order
            answer["output"] = [self.items[i] for i in sorted(self.items)]
        for (item_at, part_at), notes in self.annotations.items():
            parts = (self.items.get(item_at) or {}).get("content")
            if isinstance(parts, list) and isinstance(part_at, int) and part_at < len(parts):
                part = parts[part_at]
                if isinstance(part, dict) and not part.get("annotations"):
                    part["annotations"] = notes  # a `.done` item that left them out
        return answer
