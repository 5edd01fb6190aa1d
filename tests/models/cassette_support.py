"""Comparing a recorded run with its replay: a branch snapshot without ids and timestamps.

`snapshot` drops exactly what differs between two runs of the same conversation: element
ids (UUIDs, wherever they appear -- as ``id``, as a reference such as
``action_request_id``, as a message's sender or in a progression) and timestamps
(``created_at``, ``timestamp``, and the measured ``duration`` of a call or run in the logs).
Ids are not deleted but numbered in order of first appearance, so the links between
messages (a response pointing at its request) are still compared. Everything else --
texts, tool calls, provider ids, usage, cost, provider session ids -- must be equal.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["TIMING_KEYS", "snapshot"]

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIMING_KEYS = frozenset({"created_at", "timestamp", "duration", "thinking_seconds"})


def snapshot(branch: Any) -> Any:
    """``branch.to_dict(mode="json")`` with ids numbered and timestamps dropped."""
    names: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        return names.setdefault(match.group(0), f"<id {len(names)}>")

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {walk(k): walk(v) for k, v in sorted(value.items()) if k not in TIMING_KEYS}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str):
            return _UUID.sub(rename, value)
        return value

    return walk(branch.to_dict(mode="json"))
