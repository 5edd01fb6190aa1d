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
"""

from __future__ import annotations

from ..errors import ConfigurationError

__all__ = ["LEVELS", "RECORD", "check_reasoning"]

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
