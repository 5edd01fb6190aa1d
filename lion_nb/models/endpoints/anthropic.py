"""`AnthropicEndpoint`: Claude through the Messages API (``{base_url}/v1/messages``).

Requests arrive in OpenAI chat shape and are translated here:

- ``system`` (and ``developer``) messages become the top-level ``system`` text;
- an assistant's ``tool_calls`` become ``tool_use`` blocks; ``tool`` messages become
  ``tool_result`` blocks of a user turn, and consecutive turns of one role are merged (the
  API wants user and assistant to alternate);
- ``image_url`` parts become image blocks: a ``data:`` URL a base64 source, an http(s) URL
  a ``url`` source; ``file`` parts (a PDF as a ``data:`` URL) become ``document`` blocks
  with a base64 source and the file's name as their title;
- OpenAI function tools become ``{"name", "description", "input_schema"}``; ``stop``
  becomes ``stop_sequences``; ``max_tokens`` (required by the API) defaults to 4096.

Structured output. The Messages API has no JSON mode, so a ``response_format`` becomes one
more tool, named after the schema, whose ``input_schema`` is that schema, and the model is
made to call it (``tool_choice={"type": "tool", "name": ...}``; ``{"type": "any"}`` when
other tools are offered too, so it may still use them first). The call's input is the
answer: `ModelResponse.text` is ``json.dumps(input)`` and the call is not reported as a tool
call. A schema that is not an object is wrapped as ``{"value": schema}`` and unwrapped.

Tool history in a turn without tools. The API refuses a request whose messages hold
``tool_use`` or ``tool_result`` blocks unless it defines ``tools`` (400 "Requests which
include `tool_use` or `tool_result` blocks must define tools."), and a plain turn after a turn
with tools is common: a ``%%lion`` cell without ``-t``, ReAct's final answer, `communicate`
after `operate`. Such a request offers the tools the history used, with
``tool_choice={"type": "none"}``, so nothing can be called: each with the schema this endpoint
last sent for it, or a stand-in (an open object schema, described as not offered now) for a
tool it never sent (a branch restored or answered by another model). The other way out,
writing the earlier calls and results as prose, was not taken: the model would read its own
calls in a form it never produced, may imitate that form in its answer, and image results
would be lost; the native blocks keep the conversation exactly as the model saw it. A
``tool_choice`` of ``none`` with nothing offered is dropped (it is the default then).

Streaming errors. An ``event: error`` before any content block started is raised as the
provider's typed error (``overloaded_error`` -> `OverloadedError`), after content as
`StreamInterruptedError` whose message includes the provider's message; neither is retried
(nothing is, once a 200 stream started), and both carry the text received as
``partial_text``.

Thinking. ``reasoning=`` becomes the ``thinking`` form the model takes
(`lion_nb.models.anthropic_thinking`); ``thinking_delta``s go to `emit_thinking_delta` and
the thoughts are the answer's ``metadata["thinking"]``. An answer with ``thinking`` or
``redacted_thinking`` blocks keeps its content as received in its reasoning record (api
``anthropic``); the API checks each block's signature and wants the blocks back unchanged at
the start of their turn, before its text and ``tool_use``, so a later request puts them there
byte for byte. Records of other APIs are left out.

Citations. ``citations=True`` (on the `iModel` or per call) adds ``"citations": {"enabled":
true}`` to every ``document`` block sent (PDFs from ``file`` parts, text or other documents
given as Anthropic blocks; one that sets ``citations`` itself keeps its own), in the user
turns and in tool results; the answer's citations are read by `lion_nb.models.citations`.
Off, the default, nothing is added.

Prompt caching (on unless ``iModel(cache=False)``): ``cache_control`` breakpoints at the end
of the tools, the system prompt, the previous user turn and the latest turn (at most the
API's four), so each turn reads the history before it from the cache and writes its own.

Usage: ``input_tokens`` counts cached prompt tokens too (``cache_read_input_tokens`` and
``cache_creation_input_tokens`` are added); the provider's own figures are under ``raw``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from httpx_sse import ServerSentEvent

from ...errors import ConfigurationError, ProviderError
from ...shapes import JsonObject
from ..anthropic_thinking import thinking_options
from ..citations import CITATIONS, anthropic_citations
from ..reasoning import RECORD
from ..usage import anthropic_usage
from ._http import HTTPEndpoint
from ._http_errors import StreamReader, error_fields, error_from_payload, tag
from .base import (
    ChatRequest,
    ModelResponse,
    ToolCall,
    decode_arguments,
    emit_text_delta,
    emit_thinking_delta,
    wants_stream,
)

__all__ = ["ANTHROPIC_VERSION", "AnthropicEndpoint", "to_anthropic_messages"]

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
_TOOL_CHOICE = {"auto": {"type": "auto"}, "none": {"type": "none"}, "required": {"type": "any"}}
_NO_TOOL = {"type": "none"}
_REMEMBERED_TOOLS = 256  # schemas kept per endpoint for later turns without tools
#: the ``api`` tag of this wire's reasoning records, and the blocks they exist for
API = "anthropic"
_THINKING = frozenset({"thinking", "redacted_thinking"})
#: server tools' blocks (web search, web fetch, code execution, ...): the API ran the tool,
#: and a later turn sends its call and result back in place, as received
_SERVER = ("server_tool_use", "_tool_result")
_STAND_IN = "Offered in an earlier turn of this conversation; not offered now."


@dataclass(slots=True, frozen=True)
class _Answer:
    """The forced tool that carries a structured answer."""

    name: str
    wrapped: bool


class AnthropicEndpoint(HTTPEndpoint):
    """``iModel(provider="anthropic", model="claude-sonnet-4-5")``."""

    provider: ClassVar[str] = "anthropic"
    default_base_url: ClassVar[str] = "https://api.anthropic.com"
    default_key_env: ClassVar[str | None] = "ANTHROPIC_API_KEY"
    key_header: ClassVar[str] = "x-api-key"
    key_prefix: ClassVar[str] = ""
    takes_reasoning: ClassVar[bool] = True
    takes_citations: ClassVar[bool] = True

    # Any: the settings `Endpoint.__init__` takes, passed on
    def __init__(self, model: str, **kwargs: Any):
        super().__init__(model, **kwargs)
        self._sent_tools: dict[str, dict[str, Any]] = {}  # name -> the tool as last sent

    async def complete(self, request: ChatRequest) -> ModelResponse:
        auth = self.request_auth()  # the key is read from its `Secret` only when sent
        headers = {"anthropic-version": ANTHROPIC_VERSION, **self.headers}
        body, stream, answer = self._body(request)
        if stream:
            reply = await self._http.post_stream(
                "/v1/messages",
                body,
                headers,
                lambda rid: _MessageStream(self.name, rid),
                auth=auth,
                key_hint=self.key_hint,
            )
        else:
            reply = await self._http.post_json(
                "/v1/messages", body, headers, auth=auth, key_hint=self.key_hint
            )
        return self.read_answer(self._response, reply.data, reply.request_id, answer)

    # -- request -------------------------------------------------------------------------------
    def _body(self, request: ChatRequest) -> tuple[dict[str, Any], bool, _Answer | None]:
        options = {k: v for k, v in request.options.items() if v is not None}
        stream = bool(options.pop("stream", False)) or request.stream or wants_stream()
        max_tokens = options.pop("max_tokens", None)
        max_tokens = options.pop("max_completion_tokens", None) or max_tokens
        level = options.pop("reasoning", None)
        if level is not None and "thinking" not in options:  # the API's own `thinking=` wins
            fields = thinking_options(self.model, level, max_tokens)
            max_tokens = fields.pop("max_tokens", max_tokens)
            config = fields.pop("output_config", None)
            if config:
                options["output_config"] = {**config, **(options.get("output_config") or {})}
            options.update(fields)
        if "stop" in options:
            stop = options.pop("stop")
            options["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
        choice = options.pop("tool_choice", None)
        cite = options.pop("citations", None) is True
        system, messages = to_anthropic_messages(request.messages)
        if cite:
            messages = _cite_documents(messages)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens or DEFAULT_MAX_TOKENS,
            "messages": messages,
            **options,
        }
        if system:
            body["system"] = system
        tools = [_tool(t) for t in request.tools or []]
        caching = getattr(self, "cache", True)
        tool_choice = _tool_choice(choice) if choice is not None else None
        answer = None
        if request.response_format:
            answer, tool = _answer_tool(request.response_format)
            tool_choice = {"type": "tool", "name": answer.name} if not tools else {"type": "any"}
            tools.append(tool)
        if tools:
            self._remember(tools)
        elif used := _used_tools(messages):
            tools = [self._sent_tools.get(name) or _stand_in(name) for name in used]
            tool_choice = _NO_TOOL
        elif tool_choice == _NO_TOOL:
            tool_choice = None
        if tools:
            body["tools"] = tools
        if tool_choice:
            body["tool_choice"] = tool_choice
        _check_thinking(body)
        if caching:
            _cache_breakpoints(body)
        if stream:
            body["stream"] = True
        return body, stream, answer

    def _remember(self, tools: list[dict[str, Any]]) -> None:
        sent = self._sent_tools
        for tool in tools:
            name = tool.get("name")
            if isinstance(name, str) and "input_schema" in tool:
                sent.pop(name, None)
                sent[name] = tool
        while len(sent) > _REMEMBERED_TOOLS:
            del sent[next(iter(sent))]

    # -- response ------------------------------------------------------------------------------
    def _response(self, data: Any, request_id: str | None, answer: _Answer | None) -> ModelResponse:
        if not isinstance(data, dict) or not isinstance(data.get("content"), list):
            if error_fields(data)[0] is not None:  # a 200 that carries an error
                raise error_from_payload(self.name, None, data, request_id=request_id)
            raise ProviderError(
                "the answer has no `content`; check that `base_url` is the API root "
                "(`https://api.anthropic.com`, without `/v1`).",
                provider=self.name,
                status=200,
                request_id=request_id,
            )
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[ToolCall] = []
        answered: Any = None
        for block in data["content"]:
            if not isinstance(block, dict):
                raise ValueError(f"a `content` block is a {type(block).__name__}, not an object")
            kind = block.get("type")
            if kind == "thinking" and block.get("thinking"):
                thoughts.append(_text_of(block["thinking"]))
            elif kind == "text":
                texts.append(_text_of(block.get("text")))
            elif kind == "tool_use" and answer and block.get("name") == answer.name:
                answered = block.get("input") or {}
            elif kind == "tool_use":
                calls.append(
                    ToolCall(
                        id=block.get("id") or "",
                        name=block.get("name") or "",
                        arguments=decode_arguments(block.get("input")),
                    )
                )
        text = "".join(texts)
        reason = data.get("stop_reason")
        finish = _STOP.get(reason, reason) if reason is not None else None
        if answered is not None and answer is not None:  # `answered` is only set with `answer`
            value = answered.get("value") if answer.wrapped else answered
            text = json.dumps(value, ensure_ascii=False)
            finish = "stop" if not calls else finish
        usage = data.get("usage") or {}
        if not isinstance(usage, dict):
            raise ValueError(f"`usage` is a {type(usage).__name__}, not an object")
        usage = anthropic_usage(usage)
        if data.pop(_ESTIMATED, False) and usage:
            usage["estimated"] = True  # the output was counted here, not by the API
        metadata: dict[str, Any] = {"thinking": "\n\n".join(thoughts)} if thoughts else {}
        if any(_kept(block.get("type")) for block in data["content"]):
            metadata[RECORD] = {"api": API, "items": [dict(b) for b in data["content"]]}
        if answered is None and (citations := anthropic_citations(data["content"])):
            metadata[CITATIONS] = citations
        return ModelResponse(
            text=text,
            tool_calls=calls,
            usage=usage,
            raw=data,
            model=data.get("model") or self.model,
            finish_reason=finish,
            request_id=request_id,
            metadata=metadata,
        )


def _kept(kind: Any) -> bool:
    """Whether a block of this type makes the answer keep its content as a record."""
    return isinstance(kind, str) and (kind in _THINKING or _server_block(kind))


def _server_block(kind: Any) -> bool:
    return isinstance(kind, str) and (
        kind == _SERVER[0] or (kind.endswith(_SERVER[1]) and kind != "tool_result")
    )


def _check_thinking(body: dict[str, Any]) -> None:
    """What the API refuses beside thinking, said before sending: a tool choice that forces a
    call, ``temperature`` other than 1, ``top_k``, ``top_p`` below 0.95."""
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") in (None, "disabled"):
        return
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        raise ConfigurationError(
            "Claude cannot think when a tool call is forced (`tool_choice`, or structured "
            "output, which forces its answer tool): leave `reasoning=` out for this call."
        )
    temperature, top_p = body.get("temperature", 1), body.get("top_p", 1)
    if temperature != 1 or "top_k" in body or not 0.95 <= top_p <= 1:
        raise ConfigurationError(
            "Claude thinks only with the default sampling: leave out `temperature` (or set "
            "it to 1), `top_k` and `top_p` below 0.95 when `reasoning=` is set."
        )


# -- prompt caching ----------------------------------------------------------------------------
_EPHEMERAL = {"type": "ephemeral"}
_MAX_BREAKPOINTS = 4  # the API refuses more


def _cache_breakpoints(body: dict[str, Any]) -> None:
    """Mark ``cache_control`` breakpoints: the end of the tools, of the system prompt, of the
    previous user turn (where the last request's cache ends, so it is read back) and of the
    latest turn (written for the next). Never more than four; blocks are copied, not changed.
    """
    marks = 0
    tools = body.get("tools")
    if tools and "cache_control" not in tools[-1]:
        body["tools"] = [*tools[:-1], {**tools[-1], "cache_control": _EPHEMERAL}]
        marks += 1
    if isinstance(body.get("system"), str) and body["system"]:
        body["system"] = [{"type": "text", "text": body["system"], "cache_control": _EPHEMERAL}]
        marks += 1
    messages = body["messages"]
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    targets = [len(messages) - 1]
    if len(users) >= 2 and users[-2] != targets[0]:
        targets.insert(0, users[-2])
    messages = list(messages)
    for index in targets[-(_MAX_BREAKPOINTS - marks) :] if marks < _MAX_BREAKPOINTS else ():
        message = messages[index]
        blocks = list(message["content"])
        if not blocks or not isinstance(blocks[-1], dict) or blocks[-1].get("type") in _THINKING:
            continue
        blocks[-1] = {**blocks[-1], "cache_control": _EPHEMERAL}
        messages[index] = {**message, "content": blocks}
    body["messages"] = messages


def _cite_documents(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with citations enabled on each ``document`` block, in a turn or inside a
    ``tool_result``; changed blocks are copies (a block given as-is may be the caller's)."""

    def cited(blocks: Any) -> Any:
        if not isinstance(blocks, list):
            return blocks
        out = []
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "document" and "citations" not in block:
                block = {**block, "citations": {"enabled": True}}
            elif kind == "tool_result" and isinstance(block.get("content"), list):
                block = {**block, "content": cited(block["content"])}
            out.append(block)
        return out

    return [{**m, "content": cited(m.get("content"))} for m in messages]


# -- translation -------------------------------------------------------------------------------
def to_anthropic_messages(messages: list[JsonObject]) -> tuple[str, list[JsonObject]]:
    """``(system, messages)`` in Messages API form from OpenAI-style messages."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    present = {
        call.get("id")
        for msg in messages
        if msg.get("role") == "assistant"
        for call in msg.get("tool_calls") or ()
        if isinstance(call, dict)
    }
    recorded: set[str] = set()  # tool_use ids already put back from a reasoning record
    for msg in messages:
        role, content = msg.get("role"), msg.get("content")
        if role in ("system", "developer"):
            text = "".join(b.get("text", "") for b in _blocks(content) if b["type"] == "text")
            if text:
                system.append(text)
        elif role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": msg.get("tool_call_id") or "",
                "content": content if isinstance(content, str) else _tool_result(content),
            }
            if msg.get("is_error"):
                block["is_error"] = True
            _append(out, "user", [block])
        elif role == "assistant":
            blocks = _recorded(msg, present, recorded)
            for call in msg.get("tool_calls") or []:
                if call.get("id") in recorded:
                    continue  # already in place, as the API sent it
                fn = call.get("function") or call
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call.get("id") or "",
                        "name": fn.get("name") or "",
                        "input": decode_arguments(fn.get("arguments")),
                    }
                )
            _append(out, "assistant", blocks)
        else:
            _append(out, "user", _blocks(content))
    return "\n\n".join(system), out


def _recorded(msg: dict[str, Any], present: set[Any], recorded: set[str]) -> list[dict[str, Any]]:
    """An assistant turn's blocks: with a reasoning record of this API, its thinking and
    redacted thinking blocks unchanged and in place (the API checks their signatures, and
    wants them before the turn's text and tool calls), the text where the answer had it and
    each ``tool_use`` as sent, when the history still holds that call. A record of another
    API is left out: thinking only goes back to the provider that produced it."""
    text = _blocks(msg.get("content"))
    record = msg.get(RECORD)
    items = record.get("items") if isinstance(record, dict) and record.get("api") == API else None
    if not isinstance(items, list):
        return text
    out: list[dict[str, Any]] = []
    said = False
    parts = [i.get("text") for i in items if isinstance(i, dict) and i.get("type") == "text"]
    # text as the answer split it (around a server tool's blocks), while it is unedited;
    # its citations stay behind, as they are for the reader
    split = len(parts) > 1 and "".join(map(str, parts)) == msg.get("content")
    for item in items:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind in _THINKING or _server_block(kind):
            out.append(item)
        elif kind == "text" and split:
            if item.get("text"):
                out.append({"type": "text", "text": item["text"]})
            said = True
        elif kind == "text" and not said:
            out.extend(text)
            said = True
        elif kind == "tool_use" and item.get("id") in present and item["id"] not in recorded:
            recorded.add(item["id"])
            out.append(item)
    if not said:  # text the answer did not have: after the thinking, before any call
        at = next((i for i, b in enumerate(out) if b.get("type") not in _THINKING), len(out))
        out[at:at] = text
    return out


def _text_of(value: Any) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    raise ValueError(f"a text block's `text` is a {type(value).__name__}, not text")


def _append(out: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    if not blocks:
        return
    if out and out[-1]["role"] == role:
        out[-1]["content"].extend(blocks)
    else:
        out.append({"role": role, "content": blocks})


def _blocks(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        return [{"type": "text", "text": json.dumps(content, default=str)}]
    blocks = []
    for part in content:
        if isinstance(part, str):
            blocks.append({"type": "text", "text": part})
        elif part.get("type") == "text":
            if part.get("text"):
                blocks.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "image_url":
            blocks.append(_image(part.get("image_url")))
        elif part.get("type") == "file":
            blocks.append(_document(part.get("file")))
        else:  # already an Anthropic block (image, document, ...)
            blocks.append(part)
    return blocks


def _image(ref: Any) -> dict[str, Any]:
    url = ref.get("url", "") if isinstance(ref, dict) else str(ref or "")
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        media_type = header[5:].split(";", 1)[0] or "image/png"
        source = {"type": "base64", "media_type": media_type, "data": data}
    else:
        source = {"type": "url", "url": url}
    return {"type": "image", "source": source}


def _document(ref: Any) -> dict[str, Any]:
    ref = ref if isinstance(ref, dict) else {}
    header, _, data = str(ref.get("file_data") or "").partition(",")
    media_type = header[5:].split(";", 1)[0] or "application/pdf"
    block: dict[str, Any] = {
        "type": "document",
        "source": {"type": "base64", "media_type": media_type, "data": data},
    }
    if ref.get("filename"):
        block["title"] = str(ref["filename"])
    return block


def _tool_result(content: Any) -> Any:
    if isinstance(content, list):
        return _blocks(content)
    return json.dumps(content, ensure_ascii=False, default=str)


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    if "input_schema" in tool or ("type" in tool and tool["type"] != "function"):
        return tool  # already an Anthropic tool (client or server tool)
    fn = tool.get("function", tool)
    out = {
        "name": fn.get("name"),
        "input_schema": fn.get("parameters") or {"type": "object", "properties": {}},
    }
    if fn.get("description"):
        out["description"] = fn["description"]
    return out


def _used_tools(messages: list[dict[str, Any]]) -> list[str]:
    """The names the history's ``tool_use`` blocks call, in order, once each."""
    names: dict[str, None] = {}
    for msg in messages:
        if msg["role"] == "assistant":
            for block in msg["content"]:
                if block.get("type") == "tool_use" and block.get("name"):
                    names[block["name"]] = None
    return list(names)


def _stand_in(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": _STAND_IN,
        "input_schema": {"type": "object", "properties": {}},
    }


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, str):
        return _TOOL_CHOICE.get(choice, {"type": "tool", "name": choice})
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "tool", "name": (choice.get("function") or {}).get("name")}
    return choice


def _answer_tool(fmt: dict[str, Any]) -> tuple[_Answer, dict[str, Any]]:
    if fmt.get("type") == "json_schema":  # OpenAI wire form
        fmt = fmt.get("json_schema") or {}
    schema = dict(fmt.get("schema") or {"type": "object"})
    kind = schema.get("type", "object" if "properties" in schema else None)
    wrapped = kind != "object"
    if wrapped:
        defs = {k: schema.pop(k) for k in ("$defs", "definitions") if k in schema}
        schema = {"type": "object", "properties": {"value": schema}, "required": ["value"], **defs}
    name = _NAME.sub("_", str(fmt.get("name") or "response"))[:64] or "response"
    tool = {
        "name": name,
        "description": "Give the final answer by calling this tool; its input is the answer.",
        "input_schema": schema,
    }
    return _Answer(name, wrapped), tool


class _MessageStream(StreamReader):
    """Merges Messages API events into one message dict, like a non-streamed answer."""

    def __init__(self, provider: str, request_id: str | None):
        super().__init__(provider, request_id)
        self.message: dict[str, Any] = {}
        self.usage: dict[str, Any] = {}
        self.blocks: dict[int, dict[str, Any]] = {}
        self.partial_json: dict[int, list[str]] = {}
        self.done = False
        self.counted = False  # whether a `message_delta` reported the output's usage

    @property
    def partial_usage(self) -> dict[str, Any]:
        """The usage reported so far: ``message_start`` carries the real input count, so a
        stream cut short is billed on it."""
        try:
            return anthropic_usage(self.usage)
        except ValueError:
            return {}

    def feed(self, event: ServerSentEvent) -> bool:
        if not event.data.strip():
            return False
        data = self._decode(event.data)
        if not isinstance(data, dict):
            raise ValueError(f"an event is a {type(data).__name__}, not an object")
        kind = data.get("type") or event.event
        if kind == "error" or event.event == "error":
            raise self._error(data)
        if kind == "message_start":
            self.message = dict(data.get("message") or {})
            self.usage = dict(self.message.get("usage") or {})
        elif kind == "content_block_start":
            self.blocks[data.get("index", len(self.blocks))] = dict(data.get("content_block") or {})
        elif kind == "content_block_delta":
            self._delta(data.get("index", 0), data.get("delta") or {})
        elif kind == "content_block_stop":
            self._close_block(data.get("index", 0))
        elif kind == "message_delta":
            delta = data.get("delta") or {}
            self.message.update({k: v for k, v in delta.items() if k.startswith("stop_")})
            usage = data.get("usage") or {}
            self.usage.update({k: v for k, v in usage.items() if v is not None})
            self.counted = self.counted or usage.get("output_tokens") is not None
        elif kind == "message_stop":
            self.done = True
            return True
        return False

    def _delta(self, index: int, delta: dict[str, Any]) -> None:
        block = self.blocks.setdefault(index, {"type": "text", "text": ""})
        kind = delta.get("type")
        if kind == "text_delta":
            text = _text_of(delta.get("text"))
            block["text"] = block.get("text", "") + text
            self.text.append(text)
            emit_text_delta(text)
        elif kind == "input_json_delta":
            self.partial_json.setdefault(index, []).append(delta.get("partial_json") or "")
        elif kind == "thinking_delta":
            thought = _text_of(delta.get("thinking"))
            block["thinking"] = block.get("thinking", "") + thought
            emit_thinking_delta(thought)
        elif kind == "signature_delta":
            block["signature"] = delta.get("signature")
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))

    def _close_block(self, index: int) -> None:
        parts = self.partial_json.pop(index, None)
        if parts is not None and (text := "".join(parts)).strip():
            self.blocks[index]["input"] = decode_arguments(text)

    def _error(self, data: dict[str, Any]) -> ProviderError:
        if not self.blocks:  # nothing started: the provider's own typed error
            exc = error_from_payload(self.provider, None, data, request_id=self.request_id)
            return tag(exc, partial_text="")
        err = data.get("error")
        etype = err.get("type", "error") if isinstance(err, dict) else "error"
        message = f"{etype}: {error_fields(data)[0] or 'no message'}"
        return self._interrupted(f"error in the middle of the stream: {message}", data)

    def finish(self) -> dict[str, Any]:
        if not self.done:
            raise self._interrupted("the stream ended before the answer was complete")
        for index in list(self.partial_json):
            self._close_block(index)
        content = [self.blocks[i] for i in sorted(self.blocks)]
        message = {**self.message, "content": content, "usage": self.usage}
        if not self.counted:
            message[_ESTIMATED] = True
            message["usage"] = {**self.usage, "output_tokens": _estimated_output(content)}
        return message


#: the key by which `_MessageStream.finish` marks an answer whose output was not counted by
#: the API (no `message_delta` usage came); taken off the message before it is read
_ESTIMATED = "_lion_nb_estimated_output"


def _estimated_output(content: list[dict[str, Any]]) -> int:
    """The output tokens of a streamed answer whose final usage never came, estimated from
    what was received: ``message_start`` counts only a placeholder (``output_tokens: 1``),
    and a ledger that kept it would undercount every such call by its whole answer."""
    from ...tokens import estimate_tokens

    total = 0
    for block in content:
        for key in ("text", "thinking"):
            if isinstance(block.get(key), str):
                total += estimate_tokens(block[key])
        if block.get("type") == "tool_use":
            total += estimate_tokens(block.get("input") or {}) + 3
    return total
