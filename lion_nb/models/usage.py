"""Token usage in one shape whatever the provider, so the ledger prices every call alike.

A normalized usage is a dict with ``input_tokens`` (all input, cached parts included: the
convention `genai-prices` uses), ``output_tokens`` (reasoning included), ``cache_read_tokens``,
``cache_write_tokens``, ``reasoning_tokens``, ``total_tokens`` and the provider's own figures
under ``raw``. A usage the server did not report (a streamed answer from llama-cpp-python's
server sends none) is estimated from the request and the answer and marked
``"estimated": True``: a budget needs a figure for every call, and a silent zero would let
spend run past it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "USAGE_KEYS",
    "anthropic_usage",
    "ensure_usage",
    "estimated_usage",
    "openai_usage",
    "responses_usage",
    "token_count",
    "usage_dict",
]

#: the counted fields of a normalized usage, in ledger order
USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


def token_count(name: str, value: Any) -> int:
    """A usage count as an int (``None``: 0); ``ValueError`` naming it when not a number."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ValueError(f"the usage count `{name}` is {value!r:.40}, not a number")
    return int(value)


def usage_dict(
    input_tokens: int,
    output_tokens: int,
    *,
    cache_read: int = 0,
    cache_write: int = 0,
    reasoning: int = 0,
    total: int | None = None,
    raw: Any = None,
) -> dict[str, Any]:
    """The normalized usage (see the module docstring) from counts already checked."""
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": total if total is not None else input_tokens + output_tokens,
        "cache_read_tokens": cache_read,
        "cache_write_tokens": cache_write,
        "reasoning_tokens": reasoning,
        "raw": raw,
    }


def _details(raw: dict[str, Any], name: str) -> dict[str, Any]:
    value = raw.get(name)
    return value if isinstance(value, dict) else {}


def openai_usage(raw: Any) -> dict[str, Any]:
    """An OpenAI chat completion's ``usage``: cached input in
    ``prompt_tokens_details.cached_tokens``, reasoning in
    ``completion_tokens_details.reasoning_tokens``. Empty without usage."""
    if not raw:
        return {}
    if not isinstance(raw, dict):
        raise ValueError(f"`usage` is a {type(raw).__name__}, not an object")
    total = raw.get("total_tokens")
    return usage_dict(
        token_count("input tokens", raw.get("prompt_tokens")),
        token_count("output tokens", raw.get("completion_tokens")),
        cache_read=token_count(
            "cached_tokens", _details(raw, "prompt_tokens_details").get("cached_tokens")
        ),
        reasoning=token_count(
            "reasoning_tokens", _details(raw, "completion_tokens_details").get("reasoning_tokens")
        ),
        total=token_count("total_tokens", total) if total is not None else None,
        raw=raw,
    )


def responses_usage(raw: Any) -> dict[str, Any]:
    """An OpenAI Responses API ``usage``: ``input_tokens`` includes
    ``input_tokens_details.cached_tokens`` (and ``cache_write_tokens``), ``output_tokens``
    includes ``output_tokens_details.reasoning_tokens``. Empty without usage."""
    if not raw:
        return {}
    if not isinstance(raw, dict):
        raise ValueError(f"`usage` is a {type(raw).__name__}, not an object")
    inputs, outputs = _details(raw, "input_tokens_details"), _details(raw, "output_tokens_details")
    total = raw.get("total_tokens")
    return usage_dict(
        token_count("input_tokens", raw.get("input_tokens")),
        token_count("output_tokens", raw.get("output_tokens")),
        cache_read=token_count("cached_tokens", inputs.get("cached_tokens")),
        cache_write=token_count("cache_write_tokens", inputs.get("cache_write_tokens")),
        reasoning=token_count("reasoning_tokens", outputs.get("reasoning_tokens")),
        total=token_count("total_tokens", total) if total is not None else None,
        raw=raw,
    )


def anthropic_usage(raw: Any) -> dict[str, Any]:
    """A Messages API ``usage``: its ``input_tokens`` excludes the cached parts, so
    ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` are added back."""
    if not raw:
        return {}
    if not isinstance(raw, dict):
        raise ValueError(f"`usage` is a {type(raw).__name__}, not an object")
    read = token_count("cache_read_input_tokens", raw.get("cache_read_input_tokens"))
    write = token_count("cache_creation_input_tokens", raw.get("cache_creation_input_tokens"))
    fresh = token_count("input_tokens", raw.get("input_tokens"))
    return usage_dict(
        fresh + read + write,
        token_count("output_tokens", raw.get("output_tokens")),
        cache_read=read,
        cache_write=write,
        raw=raw,
    )


def estimated_usage(messages: list[dict[str, Any]], tools: Any, response: Any) -> dict[str, Any]:
    """An estimate of a call's usage from its request and answer, marked as estimated."""
    from ..tokens import estimate_message_tokens, estimate_tokens

    prompt = estimate_message_tokens(messages) + (estimate_tokens(tools) if tools else 0)
    completion = estimate_tokens(response.text) + sum(
        estimate_tokens(c.arguments) + 3 for c in response.tool_calls
    )
    usage = usage_dict(prompt, completion)
    usage["estimated"] = True
    return usage


def ensure_usage(request: Any, response: Any) -> None:
    """Give ``response`` an estimated usage when the server reported none."""
    if not response.usage:
        response.usage = estimated_usage(request.messages, request.tools, response)
