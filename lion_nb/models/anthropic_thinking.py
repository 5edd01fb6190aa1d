"""``reasoning=`` on Claude: which ``thinking`` form each model takes.

The Messages API has two forms, and a model refuses the one it does not take (400), so the
form is chosen from the model's name, never guessed:

- ``adaptive``: ``thinking: {"type": "adaptive", "display": "summarized"}`` with the level as
  ``output_config: {"effort": ...}`` -- Claude Opus 4.6 / Sonnet 4.6, and the only form of
  Opus 4.7 and Mythos (``enabled`` is deprecated on the first and refused by the second);
  ``display`` asks for the readable summary, whose default differs between models;
- ``budget``: ``thinking: {"type": "enabled", "budget_tokens": N}`` -- Claude 3.7 Sonnet,
  Claude 4 / 4.1 and the 4.5 models. ``budget_tokens`` is at least 1024 and must stay below
  ``max_tokens``: when ``max_tokens`` was not set it becomes the budget plus the usual answer
  room, when it was set too low for the level the call is refused;
- models that do not think (Claude 3.5 and older), and names not in the table, are refused
  with a one-line `ConfigurationError` before any request. The API's own ``thinking=`` (and
  ``output_config=``) can always be passed instead; they win over ``reasoning=``.

Thinking counts in ``output_tokens`` and is priced as output; nothing is added for it.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import ConfigurationError
from ..shapes import JsonObject

__all__ = ["BUDGETS", "thinking_form", "thinking_options"]

#: ``budget_tokens`` per level for the ``enabled`` form (the API's least is 1024)
BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
#: ``output_config.effort`` per level for the ``adaptive`` form
_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}
ANSWER_ROOM = 4096  # what ``max_tokens`` keeps for the answer besides the thinking

#: model-name patterns (searched in the lower-cased name, so that Bedrock and Vertex ids
#: match too) -> form; the first match wins
_FORMS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), form)
    for pattern, form in (
        (r"claude-opus-4-(?:[7-9]|\d\d)|mythos", "adaptive"),
        (r"claude-(?:opus|sonnet)-4-6", "adaptive"),
        (r"claude-(?:opus|sonnet|haiku)-4-5", "budget"),
        (r"claude-(?:opus|sonnet)-4(?:-[01])?(?:-\d{8}|(?![-.\d]))", "budget"),
        (r"claude-3-7-sonnet", "budget"),
        (r"claude-3-|claude-(?:haiku|sonnet|opus)-3|claude-2|claude-instant", "none"),
    )
)


def thinking_form(model: str) -> str | None:
    """``"adaptive"``, ``"budget"``, ``"none"`` (does not think) or None (not known)."""
    name = model.lower()
    return next((form for pattern, form in _FORMS if pattern.search(name)), None)


def thinking_options(model: str, level: str, max_tokens: int | None) -> JsonObject:
    """The request fields for ``reasoning=level`` on ``model``: ``thinking``, and
    ``output_config`` or ``max_tokens``; a one-line `ConfigurationError` for a model that
    would refuse them."""
    form = thinking_form(model)
    setting = f"`reasoning={level!r}`"
    if form == "none":
        raise ConfigurationError(
            f"{setting}: `{model}` does not think; use a thinking model (Claude 3.7 Sonnet, "
            "Claude 4 or later) or leave `reasoning=` out."
        )
    if form is None:
        raise ConfigurationError(
            f"{setting}: which thinking form `{model}` takes is not known here; pass the "
            'Messages API\'s own `thinking=` (e.g. `{"type": "adaptive"}`) instead.'
        )
    room = BUDGETS[level] + ANSWER_ROOM
    if form == "adaptive":
        out: dict[str, Any] = {
            "thinking": {"type": "adaptive", "display": "summarized"},
            "output_config": {"effort": _EFFORT[level]},
        }
        if max_tokens is None:
            out["max_tokens"] = room
        return out
    budget = BUDGETS[level]
    if max_tokens is not None and max_tokens <= budget:
        raise ConfigurationError(
            f"{setting}: `max_tokens={max_tokens}` must exceed its thinking budget of {budget} "
            f"tokens on `{model}`; raise `max_tokens` or choose a lower level."
        )
    return {
        "thinking": {"type": "enabled", "budget_tokens": budget},
        "max_tokens": max_tokens if max_tokens is not None else room,
    }
