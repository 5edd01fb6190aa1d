"""Why a request has no recording: the fields in which it differs from the nearest one.

The nearest recorded request is the one with the fewest differing fields (the earliest on a
tie). Fields are named as a reader would write them -- ``messages[1].content``,
``options.temperature``, ``tools[0].function.name`` -- so the message points at the cell or
setting that changed.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["describe", "differences", "nearest"]

_ABSENT = object()
_SHOWN = 6  # differences listed; the rest are counted


def differences(recorded: Any, now: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """``(field, recorded value, value now)`` for every leaf that differs."""
    if isinstance(recorded, dict) and isinstance(now, dict):
        out: list[tuple[str, Any, Any]] = []
        for key in sorted(set(recorded) | set(now), key=_field_order):
            where = f"{path}.{key}" if path else key
            out += differences(recorded.get(key, _ABSENT), now.get(key, _ABSENT), where)
        return out
    if isinstance(recorded, list) and isinstance(now, list):
        out = []
        for i in range(max(len(recorded), len(now))):
            old = recorded[i] if i < len(recorded) else _ABSENT
            new = now[i] if i < len(now) else _ABSENT
            out += differences(old, new, f"{path}[{i}]")
        return out
    return [] if recorded == now else [(path or "(request)", recorded, now)]


def _field_order(key: str) -> tuple[int, str]:
    """What identifies a request first, then what it says."""
    first: tuple[str, ...] = (
        "provider",
        "model",
        "server",
        "method",
        "tool",
        "items",
        "messages",
        "resume",
    )
    first += ("tools", "response_format", "arguments")
    return (first.index(key), key) if key in first else (len(first), key)


def nearest(
    now: dict[str, Any], candidates: list[tuple[int, dict[str, Any]]]
) -> tuple[int, list[tuple[str, Any, Any]]] | None:
    """``(line, differences)`` of the candidate closest to ``now``; ``None`` without any."""
    best: tuple[int, list[tuple[str, Any, Any]]] | None = None
    for line, recorded in candidates:
        found = differences(recorded, now)
        if best is None or len(found) < len(best[1]):
            best = (line, found)
    return best


def describe(found: list[tuple[str, Any, Any]]) -> str:
    """The differences as indented lines, the first few in full."""
    lines = [f"  {field}: recorded {_show(old)}, now {_show(new)}" for field, old, new in found]
    if len(lines) > _SHOWN:
        lines = [*lines[:_SHOWN], f"  ... and {len(found) - _SHOWN} more"]
    return "\n".join(lines)


def _show(value: Any, limit: int = 70) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
