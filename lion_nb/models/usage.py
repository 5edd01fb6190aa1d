"""Token usage in one shape whatever the provider, so the ledger prices every call alike.

A normalized usage is a dict with ``input_tokens`` (all input, cached parts included: the
convention `genai-prices` uses), ``output_tokens`` (reasoning included), ``cache_read_tokens``,
``cache_write_tokens``, ``reasoning_tokens``, ``total_tokens`` and the provider's own figures
under ``raw``. A usage the server did not report (a streamed answer from llama-cpp-python's
server sends none) is estimated from the request and the answer and marked
``"estimated": True``: a budget needs a figure for every call, and a silent zero would let
spend run past it.

A provider's numbers are not trusted (ADR-0107, D7): a count that is not a whole number from 0
to `MAX_TOKENS`, or a cached part larger than the prompt it is part of, is refused here
(``ValueError``, which an HTTP endpoint turns into a `ProviderError`), and a reported price is
used only when it is a finite number of dollars >= 0 (`finite_usd`). So no call is ever
priced below zero, and no NaN or infinity reaches the ledger.
"""

from __future__ import annotations

import math
from typing import Any

from ..shapes import JsonObject

__all__ = [
    "MAX_TOKENS",
    "USAGE_KEYS",
    "anthropic_usage",
    "ensure_usage",
    "estimated_usage",
    "finite_usd",
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


#: more tokens than any call has: a count above it is a provider's error (and keeps every
#: price a float that a budget can compare)
MAX_TOKENS = 2**53


def token_count(name: str, value: object) -> int:
    """A usage count as an int (``None``: 0); ``ValueError`` naming it when it is not a
    number from 0 to `MAX_TOKENS` (NaN and infinities are not)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"the usage count `{name}` is {value!r:.40}, not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"the usage count `{name}` is {value!r}, not a finite number")
    if not 0 <= value <= MAX_TOKENS:
        raise ValueError(f"the usage count `{name}` is {value!r:.40}, not a count of tokens")
    return int(value)


def finite_usd(usd: object) -> float | None:
    """A reported price as dollars when it is a finite number >= 0, else ``None``."""
    if isinstance(usd, (int, float)) and not isinstance(usd, bool):
        try:
            value = float(usd)
        except OverflowError:  # an int too large for a float
            return None
        if math.isfinite(value) and value >= 0:
            return value
    return None


def usage_dict(
    input_tokens: int,
    output_tokens: int,
    *,
    cache_read: int = 0,
    cache_write: int = 0,
    reasoning: int = 0,
    total: int | None = None,
    raw: object = None,
) -> JsonObject:
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


def openai_usage(raw: object) -> JsonObject:
    """An OpenAI chat completion's ``usage``: cached input in
    ``prompt_tokens_details.cached_tokens``, reasoning in
    ``completion_tokens_details.reasoning_tokens``. Empty without usage."""
    if not raw:
        return {}
    if not isinstance(raw, dict):
        raise ValueError(f"`usage` is a {type(raw).__name__}, not an object")
    total = raw.get("total_tokens")
    prompt = token_count("input tokens", raw.get("prompt_tokens"))
    cached = token_count(
        "cached_tokens", _details(raw, "prompt_tokens_details").get("cached_tokens")
    )
    if cached > prompt:  # the cached part of a prompt cannot be larger than the prompt
        raise ValueError(
            f"the usage count `cached_tokens` ({cached}) is more than `prompt_tokens` ({prompt})"
        )
    return usage_dict(
        prompt,
        token_count("output tokens", raw.get("completion_tokens")),
        cache_read=cached,
        reasoning=token_count(
            "reasoning_tokens", _details(raw, "completion_tokens_details").get("reasoning_tokens")
        ),
        total=token_count("total_tokens", total) if total is not None else None,
        raw=raw,
    )


def responses_usage(raw: object) -> JsonObject:
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


def anthropic_usage(raw: object) -> JsonObject:
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


# Any: a call's tools in any form and the endpoint's answer object
def estimated_usage(messages: list[JsonObject], tools: Any, response: Any) -> JsonObject:
    """An estimate of a call's usage from its request and answer, marked as estimated."""
    from ..tokens import estimate_message_tokens, estimate_tokens

    prompt = estimate_message_tokens(messages) + (estimate_tokens(tools) if tools else 0)
    completion = estimate_tokens(response.text) + sum(
        estimate_tokens(c.arguments) + 3 for c in response.tool_calls
    )
    usage = usage_dict(prompt, completion)
    usage["estimated"] = True
    return usage


# Any: a `ChatRequest` or `CLIRequest` and the endpoint's answer object
def ensure_usage(request: Any, response: Any) -> None:
    """Give ``response`` an estimated usage when the server reported none. An answer cut
    off by ``max_tokens`` used all of them, whatever its text counts."""
    if not response.usage:
        usage = response.usage = estimated_usage(request.messages, request.tools, response)
        if response.finish_reason == "length":
            options = request.options or {}
            limit = options.get("max_completion_tokens") or options.get("max_tokens")
            if type(limit) is int and limit > usage["output_tokens"]:
                usage["output_tokens"] = limit
                usage["total_tokens"] = usage["input_tokens"] + limit
