"""``reasoning=``: how hard a reasoning model thinks, one setting for every provider.

The levels are OpenAI's (``minimal``, ``low``, ``medium``, ``high``); each endpoint maps
them onto its own wire (the OpenAI-compatible one: ``reasoning: {"effort", "summary"}`` on
the Responses API, ``reasoning_effort`` on Chat Completions; Anthropic: the ``thinking`` form
each Claude model takes, `lion_nb.models.anthropic_thinking`). An endpoint that does not map
them yet declares ``takes_reasoning = False``; the setting is then left out of its requests
and the answer's notes say so. A value outside the levels is refused before any request.

An answer's reasoning comes back in two parts (both in ``ModelResponse.metadata``, then the
message's ``metadata``): ``thinking``, the readable summary, and `RECORD`, the provider's own
opaque items (encrypted reasoning, signatures) that the next request must send back exactly
as received and in place, ``{"api": ..., "items": [...]}``.

A budget counts a call's thinking as output it may spend (`thinking_allowance`): the API's own
``thinking: {"budget_tokens": N}`` when given, else the level's allowance, which is the
thinking budget Claude's ``enabled`` form is sent with for that level (1024, 2048, 8192,
16384 tokens); adaptive thinking with no level is allowed the ``high`` one. OpenAI's effort
levels have no fixed bound, so the same allowances stand for them; a call that sets
``max_tokens`` is bounded by it instead, since both APIs count thinking inside that limit.

OpenAI's reasoning models (`openai_reasoning_model`: the o-series and GPT-5 families) refuse
``max_tokens`` on Chat Completions and take ``max_completion_tokens`` (thinking included), so
that endpoint sends the limit -- the caller's or the one a budget gave the call -- under that
name to them. OpenAI's models that do not reason (GPT-4o, GPT-4.1, GPT-3.5, the GPT-5 chat
models) refuse an effort level, so `check_openai_effort` refuses it first, in one line.
"""

from __future__ import annotations

import re

from ..errors import ConfigurationError
from ..shapes import JsonObject
from .anthropic_thinking import BUDGETS

__all__ = [
    "LEVELS",
    "RECORD",
    "check_openai_effort",
    "check_reasoning",
    "openai_reasoning_model",
    "thinking_allowance",
]

#: the levels ``reasoning=`` takes
LEVELS = ("minimal", "low", "medium", "high")
#: the metadata key (of an answer, then of its message) holding the provider's reasoning items
RECORD = "reasoning_record"
#: OpenAI's reasoning model names: o1, o3, o4-mini, gpt-5, gpt-5.2, gpt-5-mini, ... (dated
#: snapshots included); ``gpt-5-chat-latest``, the chat model of the family, does not reason
_OPENAI_REASONING = re.compile(r"(o\d+|gpt-5(\.\d+)?)(-(?!chat)[\w.-]+)?")


#: OpenAI's model names that take no effort level (new names are left to the API to judge)
_OPENAI_NOT_REASONING = re.compile(r"(gpt-4|gpt-3\.5|chatgpt-|gpt-5(\.\d+)?-chat)[\w.-]*")


def check_openai_effort(model: str, level: str | None) -> None:
    """A one-line `ConfigurationError` for an effort level sent to one of OpenAI's models
    that do not reason (by name, as OpenAI spells it), before any request."""
    if level is not None and _OPENAI_NOT_REASONING.fullmatch(model):
        raise ConfigurationError(
            f"`reasoning={level!r}`: `{model}` does not reason, so it takes no effort level; "
            "use one of OpenAI's reasoning models (o3, o4-mini, gpt-5.x) or leave `reasoning=` "
            "unset."
        )


def openai_reasoning_model(model: str) -> bool:
    """Whether ``model`` is one of OpenAI's reasoning models, by name as OpenAI spells it (a
    routed name such as ``openai/o3`` belongs to a router with its own rules)."""
    return bool(_OPENAI_REASONING.fullmatch(model))


def check_reasoning(value: object) -> str | None:
    """``value`` if it is a level (or None); a one-line `ConfigurationError` otherwise."""
    if value is None or (isinstance(value, str) and value in LEVELS):
        return value
    raise ConfigurationError(
        f"`reasoning={value!r:.40}`: use one of {', '.join(map(repr, LEVELS))} (or None)."
    )


def thinking_allowance(options: JsonObject) -> int:
    """The output tokens a call's thinking may take, from its options (``thinking=`` first,
    then ``reasoning=``); 0 for a call that does not think (see the module docstring)."""
    thinking = options.get("thinking")
    if isinstance(thinking, dict):
        kind = thinking.get("type")
        budget = thinking.get("budget_tokens")
        if kind == "enabled" and isinstance(budget, int) and not isinstance(budget, bool):
            return max(budget, 0)
        if kind == "disabled":
            return 0
        if kind not in ("enabled", "adaptive"):
            return 0
        level = options.get("reasoning")
        return BUDGETS[level] if level in BUDGETS else BUDGETS["high"]
    level = options.get("reasoning")
    return BUDGETS[level] if isinstance(level, str) and level in BUDGETS else 0
