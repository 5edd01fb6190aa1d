"""Containers as text: JSON when it fits the budget, else the first items and a marker.

A dict, list, tuple or set that fits is written as indented JSON (as ``{rows}`` always was);
one that does not keeps as many leading items as fit, each item itself shortened, followed by
``… 9,990 more items not shown (10,000 in all)``, so the model knows what it did not see.
"""

from __future__ import annotations

import json
from typing import Any

from ..tokens import estimate_tokens
from .content import Content, fit_text

__all__ = ["container_text"]

_ITEM_SHARE = 4  # one item may take at most a quarter of the budget


def _dump(value: Any, indent: int | None = 2) -> str:
    try:
        return json.dumps(value, indent=indent, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def container_text(value: Any, budget: int) -> Content:
    """``value`` (a dict, list, tuple or set) as JSON within ``budget`` tokens."""
    if isinstance(value, (set, frozenset)):
        value = sorted(value, key=repr)
    count = len(value)
    whole = _dump(value)
    if len(whole) <= budget * 2 or estimate_tokens(whole) <= budget:
        return Content(text=whole)
    items = list(value.items()) if isinstance(value, dict) else list(value)
    per_item = max(budget // _ITEM_SHARE, 20)
    lines: list[str] = []
    used = 2
    for item in items:
        if isinstance(value, dict):
            key, val = item
            line = f"  {json.dumps(str(key), ensure_ascii=False)}: " + fit_text(
                _dump(val, None), per_item
            )
        else:
            line = "  " + fit_text(_dump(item, None), per_item)
        cost = estimate_tokens(line) + 1
        if used + cost > budget - 20 and lines:
            break
        lines.append(line)
        used += cost
    shown = len(lines)
    kind = "entries" if isinstance(value, dict) else "items"
    open_, close = ("{", "}") if isinstance(value, dict) else ("[", "]")
    marker = f"  … {count - shown:,} more {kind} not shown ({count:,} in all)"
    text = "\n".join([open_, ",\n".join(lines), marker if shown < count else "", close])
    return Content(text=text, summary=f"{count:,} {kind}, {shown:,} shown")
