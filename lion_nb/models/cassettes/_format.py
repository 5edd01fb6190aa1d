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
- A provider batch (``map(..., via="batch")``) is one request too: provider, model and its
  ``items`` in order, each with its ``custom_id`` and the same fields as a chat request (so a
  difference reads ``items[1].messages[1].content``).
- An MCP server's answer (kind ``mcp``, `lion_nb.mcp.recorded`) is its request -- server
  name, protocol method, parameters; never the command, URL or headers -- and the server's
  result as JSON.
- An API answer is the final `ModelResponse` and, for a stream, its text deltas in order; a
  CLI turn is its `StreamChunk`s in order; a batch is its final status (``batch``) and the
  provider's result lines as it sent them (``results``), read back by the service's own
  parser. No timing is kept: lines stay stable across re-recordings, so a diff shows only
  what the model said differently.

`check` is the one place a line read from a file is judged: every field replay relies on is
checked when the file is opened (a CLI turn's chunks in one validator call, kept for every
replay), so a hand-edited line fails at once with its line number and field, never halfway
through a replay.

Every string passes through `redact` before it is written or matched, so no known key, no
secret environment value and no authorization header can reach a file. Headers, keys and
URLs are never part of a line in the first place.
"""

from __future__ import annotations

import json
from typing import Any

from ..endpoints.base import ModelResponse, ToolCall
from ..reasoning import RECORD
from ..secrets import redact
from ..stream import StreamChunk, validate_chunks

__all__ = [
    "KINDS",
    "LOCAL_PROVIDERS",
    "api_request",
    "batch_request",
    "canonical",
    "check",
    "chunk_to_json",
    "clean",
    "cli_request",
    "encode_line",
    "response_from_json",
    "response_to_json",
    "status_from_json",
    "status_to_json",
]

#: what a line records: an API call, a CLI turn, a provider batch, an MCP server's answer
KINDS = ("chat", "run", "batch", "mcp")

#: answered in-process, deterministic and free: never recorded, never replayed
LOCAL_PROVIDERS = frozenset({"offline", "offline_cli"})
#: request options that change how a call is made, not what it answers
_NOT_ANSWER = frozenset({"timeout", "connect_timeout", "max_retries", "stream", "stream_options"})
#: CLI settings that say where the agent runs, not what it does
_NOT_AGENT = frozenset(
    {"cli_path", "command", "cwd", "terminate_grace", "cancel_grace", "start_timeout"}
)


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
    """One exchange as one line: sorted keys, readable, never a raw newline. A reasoning
    record keeps its own key order: its items go back to the provider exactly as received."""
    return json.dumps(_sorted(exchange), ensure_ascii=False)


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: value[k] if k == RECORD else _sorted(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def _options(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k not in _NOT_ANSWER and v is not None}


# -- requests ------------------------------------------------------------------------------------
def _chat_fields(request: Any, options: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {"messages": request.messages}
    if request.tools:
        data["tools"] = request.tools
    if request.response_format:
        data["response_format"] = request.response_format
    if options := _options(options):
        data["options"] = options
    return data


def api_request(imodel: Any, request: Any) -> dict[str, Any]:
    """A `ChatRequest` (options already merged with the model's) as a cassette request."""
    head = {"provider": imodel.provider, "model": imodel.model}
    cleaned: dict[str, Any] = clean({**head, **_chat_fields(request, request.options)})
    return cleaned


def batch_request(imodel: Any, requests: list[tuple[str, Any]]) -> dict[str, Any]:
    """A provider batch, ``[(custom_id, ChatRequest)]``, as one cassette request; each item's
    options are merged with the model's, as the batch service merges them."""
    items = [
        {"custom_id": cid, **_chat_fields(request, {**imodel.options, **request.options})}
        for cid, request in requests
    ]
    cleaned: dict[str, Any] = clean(
        {"provider": imodel.provider, "model": imodel.model, "items": items}
    )
    return cleaned


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
    cleaned: dict[str, Any] = clean(data)
    return cleaned


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
        **({"metadata": response.metadata} if response.metadata else {}),
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
        metadata=data.get("metadata") or {},
    )


def chunk_to_json(chunk: StreamChunk) -> dict[str, Any]:
    return chunk.model_dump(mode="json", exclude_defaults=True)


def status_to_json(status: Any) -> dict[str, Any]:
    """A `BatchStatus` without its raw provider object (timestamps, file ids)."""
    return {
        "id": status.id,
        "state": status.state,
        "total": status.total,
        "succeeded": status.succeeded,
        "failed": status.failed,
    }


def status_from_json(data: dict[str, Any]) -> Any:
    from ..endpoints.batches import BatchStatus

    return BatchStatus(
        id=data["id"],
        state=data["state"],
        total=data.get("total") or 0,
        succeeded=data.get("succeeded") or 0,
        failed=data.get("failed") or 0,
    )


# -- reading a line back -------------------------------------------------------------------------
def check(data: Any) -> tuple[str, dict[str, Any], list[StreamChunk] | None]:
    """``(kind, request, chunks)`` of a parsed line -- ``chunks`` are a CLI turn's, validated
    -- or `ValueError` naming the first field that replay could not use."""
    if not isinstance(data, dict):
        raise ValueError("a line is one JSON object")
    kind, request = data.get("kind"), data.get("request")
    if kind not in KINDS:
        raise ValueError(f"`kind` is one of {', '.join(KINDS)}, not {kind!r}")
    if not isinstance(request, dict):
        raise ValueError("`request` is an object")
    chunks = None
    if kind == "chat":
        _check_response(_expect(data, "response", dict, "an object"))
        deltas = data.get("deltas", [])
        if not isinstance(deltas, list) or not all(isinstance(d, str) for d in deltas):
            raise ValueError("`deltas` is a list of strings")
        if not isinstance(data.get("stream", False), bool):
            raise ValueError("`stream` is true or false")
    elif kind == "run":
        events = _expect(data, "events", list, "a list")
        from pydantic import ValidationError

        try:
            chunks = validate_chunks(events)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = "events" + "".join(
                f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]
            )
            raise ValueError(f"`{where}`: {first['msg']}") from None
    elif kind == "mcp":
        _check_mcp(request, _expect(data, "result", dict, "an object"))
    else:
        batch = _expect(data, "batch", dict, "an object")
        if not isinstance(batch.get("id"), str) or not isinstance(batch.get("state"), str):
            raise ValueError("`batch` has an `id` and a `state` (strings)")
        for name in ("total", "succeeded", "failed"):
            _optional(batch, name, int, "a whole number", where="batch.")
        results = _expect(data, "results", list, "a list")
        if not all(isinstance(line, dict) for line in results):
            raise ValueError("`results` is a list of objects")
    return kind, request, chunks


_CALL_FIELDS = frozenset({"id", "name", "arguments"})


def _check_mcp(request: dict[str, Any], result: dict[str, Any]) -> None:
    """An MCP exchange: who was asked what, and the fields of the result a replay reads
    first (the SDK's own types check the rest when it is replayed)."""
    for name in ("server", "method"):
        if not isinstance(request.get(name), str):
            raise ValueError(f"`request.{name}` is a string")
    method = request["method"]
    if method == "tools/call":
        if not isinstance(request.get("tool"), str):
            raise ValueError("`request.tool` is the tool's name (a string)")
        if not isinstance(request.get("arguments"), dict):
            raise ValueError("`request.arguments` is an object")
        _optional(result, "content", list, "a list", where="result.")
        _optional(result, "isError", bool, "true or false", where="result.")
    elif method == "tools/list":
        tools = result.get("tools")
        if not isinstance(tools, list):
            raise ValueError("`result.tools` is a list")
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                raise ValueError(f"`result.tools[{i}].name` is the tool's name (a string)")


def _check_response(response: dict[str, Any]) -> None:
    """Every field `response_from_json` reads has the type a live answer gives it."""
    for name in ("text", "model", "finish_reason", "request_id"):
        _optional(response, name, str, "a string", where="response.")
    _optional(response, "metadata", dict, "an object", where="response.")
    usage = _optional(response, "usage", dict, "an object", where="response.") or {}
    for name, value in usage.items():
        if name.endswith("_tokens") and value is not None and not _whole(value):
            raise ValueError(f"`response.usage.{name}` is a whole number")
    calls = _optional(response, "tool_calls", list, "a list", where="response.") or []
    for i, call in enumerate(calls):
        where = f"response.tool_calls[{i}]"
        if not isinstance(call, dict):
            raise ValueError(f"`{where}` is an object with `id`, `name` and `arguments`")
        if extra := sorted(set(call) - _CALL_FIELDS):
            raise ValueError(f"`{where}` has no field `{extra[0]}` (only id, name, arguments)")
        if not isinstance(call.get("name"), str) or not call["name"]:
            raise ValueError(f"`{where}.name` is the tool's name (a string)")
        if not isinstance(call.get("arguments"), dict):
            raise ValueError(f"`{where}.arguments` is an object")
        if not isinstance(call.get("id"), str):
            raise ValueError(f"`{where}.id` is a string")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _optional(data: dict[str, Any], key: str, kind: type, what: str, *, where: str = "") -> Any:
    """``data[key]``, which may be missing or null, else must be a ``kind``."""
    value = data.get(key)
    wrong = value is not None and (
        not isinstance(value, kind) or (kind is int and isinstance(value, bool))
    )
    if wrong:
        raise ValueError(f"`{where}{key}` is {what}")
    return value


def _expect(data: dict[str, Any], key: str, kind: type, what: str) -> Any:
    value = data.get(key)
    if not isinstance(value, kind):
        raise ValueError(f"`{key}` is {what}")
    return value
