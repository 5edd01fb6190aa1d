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
"""

from __future__ import annotations

from ..errors import ConfigurationError
from ..shapes import JsonObject
from .anthropic_thinking import BUDGETS

__all__ = ["LEVELS", "RECORD", "check_reasoning", "thinking_allowance"]

#: the levels ``reasoning=`` takes
LEVELS = ("minimal", "low", "medium", "high")
#: the metadata key (of an answer, then of its message) holding the provider's reasoning items
RECORD = "reasoning_record"


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
