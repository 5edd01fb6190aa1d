"""The ``gen_ai.*`` attributes of a span, from what lion_nb already knows of a call.

Names follow the OpenTelemetry GenAI semantic conventions (semconv 1.41.0, `SCHEMA_URL`):
``gen_ai.provider.name`` (not the deprecated ``gen_ai.system``), usage as
``gen_ai.usage.input_tokens`` (cached input included) and ``output_tokens`` (reasoning
included), with ``cache_read.input_tokens``, ``cache_creation.input_tokens`` and
``reasoning.output_tokens`` beside them. What the conventions have no name for is under
``lion_nb.*`` (the cost, the session, the cell, the fork's parent).

Content (``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.system_instructions``, ``gen_ai.tool.call.arguments`` / ``.result``) is built only
when asked, every text part cut to a bounded length, values under secret-looking keys
replaced, and the whole JSON passed through `redact`, so a key typed into a prompt, an MCP
header or a password in a URL never leaves in a span. No attribute ever holds a URL: the
server is its host and port.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any
from urllib.parse import urlsplit

from ..models.secrets import MASK, redact

__all__ = [
    "SCHEMA_URL",
    "branch_attributes",
    "content_json",
    "request_attributes",
    "response_attributes",
    "server_attributes",
    "tool_content",
]

SCHEMA_URL = "https://opentelemetry.io/schemas/1.41.0"
#: lion_nb provider names -> the conventions' ``gen_ai.provider.name`` values
_PROVIDERS = {
    "openai": "openai",
    "openai_responses": "openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "gemini_cli": "gcp.gemini",
    "claude_code": "anthropic",
    "codex": "openai",
}
_USAGE = (
    ("input_tokens", "gen_ai.usage.input_tokens"),
    ("output_tokens", "gen_ai.usage.output_tokens"),
    ("cache_read_tokens", "gen_ai.usage.cache_read.input_tokens"),
    ("cache_write_tokens", "gen_ai.usage.cache_creation.input_tokens"),
    ("reasoning_tokens", "gen_ai.usage.reasoning.output_tokens"),
)
_ALWAYS = ("input_tokens", "output_tokens", "cache_read_tokens", "reasoning_tokens")
_OPTIONS = (
    ("max_tokens", "gen_ai.request.max_tokens"),
    ("max_completion_tokens", "gen_ai.request.max_tokens"),
    ("max_output_tokens", "gen_ai.request.max_tokens"),
    ("temperature", "gen_ai.request.temperature"),
    ("top_p", "gen_ai.request.top_p"),
    ("seed", "gen_ai.request.seed"),
)
_SECRET_KEY = re.compile(r"key|token|secret|password|passwd|credential|authorization|cookie", re.I)


def provider_name(provider: str) -> str:
    """The conventions' name of a lion_nb provider (others keep their own name)."""
    return _PROVIDERS.get(provider, provider)


def branch_attributes(branch: Any, cell: tuple[Any, Any]) -> dict[str, Any]:
    """What every span of ``branch`` carries: the conversation, session, cell, fork parent."""
    attrs: dict[str, Any] = {"gen_ai.conversation.id": branch.id_text}
    session = branch.attachment.session_id
    if session is not None:
        attrs["lion_nb.session.id"] = str(session)
    name = branch.name
    if name:
        attrs["lion_nb.branch.name"] = str(name)
    parent = (branch.metadata.get("clone_from") or {}).get("id")
    if parent:
        attrs["lion_nb.branch.parent_id"] = str(parent)
    count, cell_id = cell
    if count is not None:
        attrs["lion_nb.cell.execution_count"] = int(count)
    if cell_id:
        attrs["lion_nb.cell.id"] = str(cell_id)
    return attrs


@functools.lru_cache(maxsize=64)
def _server(base_url: str) -> tuple[tuple[str, Any], ...]:
    try:
        parts = urlsplit(base_url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return ()
    if not host:
        return ()
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return (("server.address", host), ("server.port", port))


def server_attributes(base_url: Any) -> dict[str, Any]:
    """``server.address`` / ``server.port`` of a base URL: host and port only (never the
    user, password, path or query)."""
    return dict(_server(str(base_url))) if base_url else {}


def request_attributes(imodel: Any, request: Any) -> dict[str, Any]:
    """A model call's request side: operation, provider, model, stream and options."""
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider_name(str(imodel.provider)),
        "gen_ai.request.model": str(imodel.model),
    }
    if getattr(request, "stream", False):
        attrs["gen_ai.request.stream"] = True
    options = {
        **(getattr(imodel, "options", None) or {}),
        **(getattr(request, "options", {}) or {}),
    }
    for option, key in _OPTIONS:
        value = options.get(option)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attrs[key] = value
    endpoint = getattr(imodel, "endpoint", None)
    attrs.update(server_attributes(getattr(endpoint, "base_url", None)))
    return attrs


def usage_attributes(usage: dict[str, Any]) -> dict[str, Any]:
    """The ``gen_ai.usage.*`` counts of a normalized usage dict."""
    attrs: dict[str, Any] = {}
    for field, key in _USAGE:
        value = usage.get(field)
        # cache writes only when there were some (most providers never report them)
        if type(value) is int and (value > 0 or (value == 0 and field in _ALWAYS)):
            attrs[key] = value
    if "estimated" in usage:
        attrs["lion_nb.usage.estimated"] = True
    return attrs


def response_attributes(response: Any, usd: float | None) -> dict[str, Any]:
    """A model call's answer: response id and model, finish reasons, usage, cost."""
    attrs: dict[str, Any] = {}
    if response.model:
        attrs["gen_ai.response.model"] = str(response.model)
    if response.request_id:
        attrs["gen_ai.response.id"] = str(response.request_id)
    reason = response.finish_reason or ("tool_calls" if response.tool_calls else None)
    if reason:
        attrs["gen_ai.response.finish_reasons"] = (str(reason),)
    if isinstance(response.usage, dict):
        attrs.update(usage_attributes(response.usage))
    if usd is not None:
        attrs["lion_nb.cost.usd"] = float(usd)
    return attrs


# -- content (opt-in) ---------------------------------------------------------------------------
def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _masked(value: Any, limit: int, depth: int = 0) -> Any:
    """``value`` as plain JSON, texts cut to ``limit``, secret-looking keys' values masked."""
    if isinstance(value, str):
        return _cut(value, limit)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if depth > 6:
        return _cut(repr(value), limit)
    if isinstance(value, dict):
        return {
            str(k): MASK if _SECRET_KEY.search(str(k)) else _masked(v, limit, depth + 1)
            for k, v in list(value.items())[:100]
        }
    if isinstance(value, (list, tuple)):
        return [_masked(v, limit, depth + 1) for v in list(value)[:100]]
    return _cut(str(value), limit)


def _arguments(value: Any) -> Any:
    """Tool-call arguments as a dict when they are JSON text (so their keys are seen)."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, dict) else value
    return value


def hidden_values(arguments: Any) -> list[str]:
    """The values given under secret-looking names (``api_key=...``): masked wherever they
    show again (a tool's result quoting its argument)."""
    arguments = _arguments(arguments)
    if not isinstance(arguments, dict):
        return []
    return [
        str(v)
        for k, v in arguments.items()
        if _SECRET_KEY.search(str(k)) and isinstance(v, (str, int)) and len(str(v)) >= 4
    ]


def content_json(value: Any, limit: int, hide: list[str] | tuple[str, ...] = ()) -> str:
    """``value`` as bounded, masked, redacted JSON text (an attribute's value); every text
    in ``hide`` is masked too."""
    text = json.dumps(_masked(value, limit), ensure_ascii=False, default=str)
    for secret in sorted(set(hide), key=len, reverse=True):
        text = text.replace(json.dumps(secret)[1:-1], MASK)
    return redact(text)


def _parts(content: Any, limit: int) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}] if content else []
    parts: list[dict[str, Any]] = []
    for item in content if isinstance(content, list) else [content]:
        if isinstance(item, dict) and item.get("type") == "text":
            parts.append({"type": "text", "content": str(item.get("text", ""))})
        elif isinstance(item, dict):
            parts.append({"type": str(item.get("type", "blob"))})  # media: named, not sent
        else:
            parts.append({"type": "text", "content": str(item)})
    return parts


def input_messages(messages: list[dict[str, Any]], limit: int) -> dict[str, str]:
    """``gen_ai.system_instructions`` and ``gen_ai.input.messages`` of a request (the last
    50 messages)."""
    system: list[dict[str, Any]] = []
    chat: list[dict[str, Any]] = []
    hide: list[str] = []
    for message in messages[-50:]:
        role = str(message.get("role", "user"))
        parts = _parts(message.get("content", ""), limit)
        if role == "system":
            system.extend(parts)
            continue
        entry: dict[str, Any] = {"role": role, "parts": parts}
        for call in message.get("tool_calls") or ():
            fn = call.get("function") or call
            hide += hidden_values(fn.get("arguments"))
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("id"),
                    "name": fn.get("name"),
                    "arguments": _arguments(fn.get("arguments")),
                }
            )
        if role == "tool":
            entry["parts"] = [
                {
                    "type": "tool_call_response",
                    "id": message.get("tool_call_id"),
                    "response": message.get("content"),
                }
            ]
        chat.append(entry)
    out = {"gen_ai.input.messages": content_json(chat, limit, hide)}
    if system:
        out["gen_ai.system_instructions"] = content_json(system, limit, hide)
    return out


def output_messages(response: Any, limit: int) -> dict[str, str]:
    """``gen_ai.output.messages`` of an answer: its text and the tool calls it asked for."""
    parts: list[dict[str, Any]] = []
    if response.text:
        parts.append({"type": "text", "content": response.text})
    for call in response.tool_calls:
        parts.append(
            {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
        )
    message = {
        "role": "assistant",
        "parts": parts,
        "finish_reason": response.finish_reason or ("tool_call" if response.tool_calls else "stop"),
    }
    return {"gen_ai.output.messages": content_json([message], limit)}


def tool_content(arguments: Any, result: Any, limit: int) -> dict[str, str]:
    """``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``, bounded and masked."""
    hide = hidden_values(arguments)
    out = {"gen_ai.tool.call.arguments": content_json(arguments, limit)}
    if result is not None:
        out["gen_ai.tool.call.result"] = content_json(result, limit, hide)
    return out
