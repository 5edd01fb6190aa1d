"""What a cassette line holds: a normalized request and the response as the branch got it.

Both are plain JSON, built here and nowhere else, so recording and matching cannot drift:

- A request keeps what changes the answer -- provider (as the user named it: ``ollama``, not
  the ``openai`` endpoint behind it), model, messages, tools, response format and the model
  options -- and drops what does not: deadlines, retries, the stream switch, and where the
  provider lives (``base_url``, ``cli_path``, ``cwd``). So a recording made against a
  loopback server or a fake CLI replays for the same model pointed at the real service.
- A CLI turn becomes the same shape: its system text and prompt are ``messages`` (so a
  difference reads ``messages[1].content`` for every provider), plus ``resume`` (the
  provider session it continues) and the endpoint settings that steer the agent.
- An API answer is the final `ModelResponse` and, for a stream, its text deltas in order; a
  CLI turn is its `StreamChunk`s in order. No timing is kept: lines stay stable across
  re-recordings, so a diff shows only what the model said differently.

Every string passes through `redact` before it is written or matched, so no known key, no
secret environment value and no authorization header can reach a file. Headers, keys and
URLs are never part of a line in the first place.
"""

from __future__ import annotations

import json
from typing import Any

from ..endpoints.base import ModelResponse, ToolCall
from ..secrets import redact
from ..stream import StreamChunk

__all__ = [
    "LOCAL_PROVIDERS",
    "api_request",
    "canonical",
    "chunk_from_json",
    "chunk_to_json",
    "clean",
    "cli_request",
    "encode_line",
    "response_from_json",
    "response_to_json",
]

#: answered in-process, deterministic and free: never recorded, never replayed
LOCAL_PROVIDERS = frozenset({"offline", "offline_cli"})
#: request options that change how a call is made, not what it answers
_NOT_ANSWER = frozenset({"timeout", "connect_timeout", "max_retries", "stream", "stream_options"})
#: CLI settings that say where the agent runs, not what it does
_NOT_AGENT = frozenset({"cli_path", "cwd", "terminate_grace"})


def clean(value: Any) -> Any:
    """``value`` as plain JSON data with every string redacted (a new object)."""
    return _redacted(json.loads(json.dumps(value, default=str, ensure_ascii=False)))


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k): _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value


def canonical(kind: str, request: dict[str, Any]) -> str:
    """The matching key: one exact text for equal requests."""
    return json.dumps([kind, request], sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def encode_line(exchange: dict[str, Any]) -> str:
    """One exchange as one line: sorted keys, readable, never a raw newline."""
    return json.dumps(exchange, sort_keys=True, ensure_ascii=False)


def _options(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k not in _NOT_ANSWER and v is not None}


# -- requests ------------------------------------------------------------------------------------
def api_request(imodel: Any, request: Any) -> dict[str, Any]:
    """A `ChatRequest` (options already merged with the model's) as a cassette request."""
    data: dict[str, Any] = {
        "provider": imodel.provider,
        "model": imodel.model,
        "messages": request.messages,
    }
    if request.tools:
        data["tools"] = request.tools
    if request.response_format:
        data["response_format"] = request.response_format
    if options := _options(request.options):
        data["options"] = options
    return clean(data)


def cli_request(imodel: Any, request: Any) -> dict[str, Any]:
    """A `CLIRequest` as a cassette request: system and prompt as ``messages``."""
    messages = [{"role": "system", "content": request.system}] if request.system else []
    messages.append({"role": "user", "content": request.prompt})
    data: dict[str, Any] = {
        "provider": imodel.provider,
        "model": imodel.model,
        "messages": messages,
    }
    if request.resume:
        data["resume"] = request.resume
    if request.images:
        data["images"] = list(request.images)
    settings = {k: v for k, v in imodel.endpoint.config().items() if k not in _NOT_AGENT}
    if settings:
        data["settings"] = settings
    if options := _options({**imodel.options, **request.options}):
        data["options"] = options
    return clean(data)


# -- responses -----------------------------------------------------------------------------------
def response_to_json(response: Any) -> dict[str, Any]:
    return {
        "text": response.text,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls
        ],
        "usage": response.usage,
        "raw": response.raw,
        "model": response.model,
        "finish_reason": response.finish_reason,
        "request_id": response.request_id,
    }


def response_from_json(data: dict[str, Any]) -> ModelResponse:
    return ModelResponse(
        text=data.get("text") or "",
        tool_calls=[ToolCall(**call) for call in data.get("tool_calls") or []],
        usage=data.get("usage") or {},
        raw=data.get("raw"),
        model=data.get("model"),
        finish_reason=data.get("finish_reason"),
        request_id=data.get("request_id"),
    )


def chunk_to_json(chunk: Any) -> dict[str, Any]:
    return chunk.model_dump(mode="json", exclude_defaults=True)


def chunk_from_json(data: dict[str, Any]) -> StreamChunk:
    return StreamChunk.model_validate(data)
