"""``select``: ask the model to choose among given choices (module only: ADR-0021 D1 ships no
``Branch.select``; register it on a session to call it by name).

Choices may be a list (of strings or anything with a readable ``str``), a dict (key ->
description) or an `Enum` class. The model sees each choice's key (and description) and
answers a `Selection`-shaped schema whose items are restricted to the keys; the answer is
then matched back forgivingly (case, separators, close spellings), unknown picks are
dropped, duplicates removed, and at most ``max_num_selections`` kept. ``selected`` holds the
original choice objects: list items, dict keys, or Enum members.

The exchange goes through the facade's ``operate``, so it is recorded and observed like any
other turn.
"""

from __future__ import annotations

import difflib
import json
from enum import Enum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, create_model

from .parse_op import _norm

if TYPE_CHECKING:
    from ..session.branch import Branch

__all__ = ["Selection", "select"]


class Selection(BaseModel):
    """The choices picked, in the model's order."""

    selected: list[Any] = Field(default_factory=list)


def _choices(choices: Any) -> tuple[list[str], dict[str, Any], dict[str, str]]:
    """Keys shown to the model, key -> original choice, key -> description."""
    if isinstance(choices, type) and issubclass(choices, Enum):
        members = list(choices)
        keys = [m.name for m in members]
        originals = {m.name: m for m in members}
        described = {m.name: str(m.value) for m in members if str(m.value) != m.name}
        return keys, originals, described
    if isinstance(choices, dict):
        keys = [str(k) for k in choices]
        return keys, {str(k): k for k in choices}, {str(k): str(v) for k, v in choices.items()}
    if isinstance(choices, (list, tuple, set, frozenset)):
        items = list(choices)
        keys = [c.name if isinstance(c, Enum) else str(c) for c in items]
        return keys, dict(zip(keys, items, strict=True)), {}
    raise TypeError(
        f"`choices` is a list, a dict (choice -> description) or an Enum class; got "
        f"{type(choices).__name__}."
    )


def _match(pick: Any, keys: list[str]) -> str | None:
    text = str(pick.get("name", pick) if isinstance(pick, dict) else pick).strip()
    if text in keys:
        return text
    by_norm = {_norm(k): k for k in keys}
    if _norm(text) in by_norm:
        return by_norm[_norm(text)]
    close = difflib.get_close_matches(_norm(text), list(by_norm), n=1, cutoff=0.8)
    return by_norm[close[0]] if close else None


def _prompt(instruct: Any) -> dict[str, Any]:
    if isinstance(instruct, BaseModel):
        instruct = instruct.model_dump()
    if isinstance(instruct, str):
        return {"instruction": instruct}
    if isinstance(instruct, dict) and instruct.get("instruction"):
        return {k: instruct.get(k) for k in ("instruction", "guidance", "context")}
    raise TypeError(
        "`instruct` is a string or a mapping with `instruction` (optional `guidance`, "
        f"`context`); got {type(instruct).__name__}."
    )


async def select(
    branch: Branch,
    # Any: any instruction value and choices (names, an Enum, a dict); keywords passed on
    instruct: Any,
    choices: Any,
    max_num_selections: int = 1,
    **kwargs: Any,
) -> Selection:
    """Pick up to ``max_num_selections`` of ``choices`` for ``instruct`` (see the module
    docstring). Other keywords go to ``branch.operate``."""
    if max_num_selections < 1:
        raise ValueError(f"`max_num_selections` is at least 1, got {max_num_selections}.")
    keys, originals, described = _choices(choices)
    if not keys:
        raise ValueError("`choices` is empty: give at least one choice to select from.")
    ask = _prompt(instruct)
    listing = [
        {"choice": k, **({"description": described[k]} if k in described else {})} for k in keys
    ]
    guidance = (
        f"Select {'exactly one' if max_num_selections == 1 else f'up to {max_num_selections}'} "
        f"of these choices; answer with their `choice` names in `selected`:\n"
        f"{json.dumps(listing, ensure_ascii=False, default=str)}"
    )
    if ask.get("guidance"):
        guidance = f"{ask['guidance']}\n\n{guidance}"
    items: dict[str, Any] = {"type": "string", "enum": keys}
    answer_model = create_model(
        "Selection",
        selected=(
            list[str],
            Field(
                default=...,
                description="The chosen choice names.",
                json_schema_extra={"items": items, "maxItems": max_num_selections},
            ),
        ),
    )
    answer = await branch.operate(
        instruction=ask["instruction"],
        guidance=guidance,
        context=ask.get("context"),
        response_format=answer_model,
        **kwargs,
    )
    picks = getattr(answer, "selected", None)
    if picks is None and isinstance(answer, dict):
        picks = answer.get("selected")
    if picks is None and isinstance(answer, str):  # unvalidated text: the choices it names
        lowered = answer.lower()
        found = [(lowered.find(k.lower()), k) for k in keys if k.lower() in lowered]
        picks = [k for _, k in sorted(found)]
    chosen: list[str] = []
    for pick in picks if isinstance(picks, list) else [picks]:
        key = _match(pick, keys) if pick is not None else None
        if key is not None and key not in chosen:
            chosen.append(key)
    return Selection(selected=[originals[k] for k in chosen[:max_num_selections]])
