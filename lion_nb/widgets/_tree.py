"""What the session explorer knows about branches: cached statistics, the fork tree, search.

Plain functions over `Branch` objects, no widget code, so they are tested and reused alone.
A branch's statistics and its Markdown transcript are `lion_nb.rendering.transcript`'s (the
store's export shares them).

- **Parentage** is what the core records: `Branch.clone` (and so `Session.split` and a re-run
  fork, whose old timeline is kept as ``NAME~N``) writes ``metadata["clone_from"]`` with the
  source's id and its progression at the time; each copied message carries
  ``metadata["clone_from"]``, the id of the message it copies. The message a branch forked at
  is ``clone_from["message_id"]`` when recorded (the explorer's own forks record it), else the
  last message of the leading run of copies whose originals are in that progression (a re-run
  fork is truncated after cloning, so the progression alone would overstate it). A branch
  whose source is not in the session is a root.
- **Statistics** (message count, models, tokens, cost) are cached per branch under (message
  count, progression version): appending changes the count, removing or inserting changes
  the version, so an unchanged branch is never scanned twice. ``StatsCache.scans`` counts the
  scans.
"""

from __future__ import annotations

import re
from html import escape
from typing import Any

from ..rendering.transcript import BranchStats, branch_label, format_cost, json_text, scan
from ..rendering.transcript import models_used as _models
from ._entries import _ROLES

__all__ = ["StatsCache", "build_tree", "message_text", "search"]


def parent_id(branch: Any) -> str | None:
    """The id of the branch this one was cloned or forked from, as the core recorded it."""
    record = (branch.metadata or {}).get("clone_from")
    if isinstance(record, dict) and record.get("id"):
        return str(record["id"])
    return None


class StatsCache:
    """`scan` results per branch, kept while the branch's messages are unchanged."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[tuple[int, int], BranchStats]] = {}
        self.scans = 0

    def get(self, branch: Any) -> BranchStats:
        pile = branch.messages
        key = (len(pile), pile.progression.version)
        found = self._items.get(str(branch.id))
        if found is not None and found[0] == key:
            return found[1]
        stats = scan(branch)
        self.scans += 1
        self._items[str(branch.id)] = (key, stats)
        return stats

    def keep(self, ids: set[str]) -> None:
        """Forget branches that left the session."""
        for gone in set(self._items) - ids:
            del self._items[gone]


def build_tree(branches: list[Any], cache: StatsCache) -> list[dict[str, Any]]:
    """The branches as a pre-order list of nodes (``depth`` 0 for roots), each child under the
    branch it came from, siblings in session order."""
    by_id = {str(b.id): b for b in branches}
    children: dict[str | None, list[Any]] = {}
    for branch in branches:
        parent = parent_id(branch)
        if parent == str(branch.id) or parent not in by_id:
            parent = None
        children.setdefault(parent, []).append(branch)
    nodes: list[dict[str, Any]] = []
    seen: set[str] = set()

    def visit(branch: Any, depth: int, parent: str | None) -> None:
        stack = [(branch, depth, parent)]
        while stack:
            current, level, above = stack.pop()
            key = str(current.id)
            if key in seen:
                continue
            seen.add(key)
            nodes.append(_node(current, cache.get(current), level, above))
            for child in reversed(children.get(key, [])):
                stack.append((child, level + 1, key))

    for root in children.get(None, []):
        visit(root, 0, None)
    for branch in branches:  # a cycle of clone records (hand-edited metadata) has no root
        if str(branch.id) not in seen:
            visit(branch, 0, None)
    cache.keep(set(by_id))
    return nodes


def _node(branch: Any, stats: BranchStats, depth: int, parent: str | None) -> dict[str, Any]:
    return {
        "id": str(branch.id),
        "name": branch_label(branch),
        "named": bool(branch.name),
        "depth": depth,
        "parent": parent,
        "count": stats.count,
        "models": _models(branch, stats),
        "tokens": stats.tokens,
        "cost": format_cost(stats),
        "fork_index": stats.fork_index if parent is not None else None,
    }


# -- search ------------------------------------------------------------------------------------
def message_text(message: Any) -> str:
    """The searchable text of a message (a tool call: its name, arguments and result)."""
    if message.kind == "action_request":
        return f"{message.function}({json_text(message.arguments)})"
    if message.kind == "action_response":
        return f"{message.function}({json_text(message.arguments)}) → {message.rendered}"
    return message.rendered or ""


def _snippet(text: str, at: int, length: int, width: int = 40) -> str:
    """Escaped HTML: the match in ``<mark>`` with some context either side."""
    start, end = max(0, at - width), min(len(text), at + length + width)
    before = ("…" if start else "") + text[start:at]
    after = text[at + length : end] + ("…" if end < len(text) else "")
    match = text[at : at + length]
    before, match, after = (re.sub(r"\s+", " ", part) for part in (before, match, after))
    return f"{escape(before)}<mark>{escape(match)}</mark>{escape(after)}"


def search(branches: list[Any], query: str, limit: int = 100) -> tuple[list[dict], int]:
    """Messages whose text contains ``query`` (any case), in session then message order:
    (the first ``limit`` results, how many there are in all)."""
    needle = query.strip().lower()
    if not needle:
        return [], 0
    found: list[dict[str, Any]] = []
    total = 0
    for branch in branches:
        for index, message in enumerate(branch.messages):
            text = message_text(message)
            at = text.lower().find(needle)
            if at < 0:
                continue
            total += 1
            if len(found) < limit:
                found.append(
                    {
                        "branch": str(branch.id),
                        "name": branch_label(branch),
                        "index": index,
                        "role": _ROLES.get(message.kind, "user"),
                        "snippet": _snippet(text, at, len(needle)),
                    }
                )
    return found, total


def search_runs(runs: list[Any], query: str, room: int) -> tuple[list[dict], int, bool]:
    """Items of the session's map runs whose row (the item, its answer or its error) holds
    ``query`` (any case), read from each run's compact columns, never its branches:
    (at most ``room`` results, how many were counted, whether the scan stopped at ``room`` --
    a run of a million items is not read to its end for a count)."""
    needle = query.strip().lower()
    found: list[dict[str, Any]] = []
    if not needle:
        return found, 0, False
    for run in runs:
        table = run.items
        errors = table.errors
        for index, (item, value) in enumerate(zip(table.items, table.values, strict=True)):
            error = errors.get(index) if errors else None
            for role, raw in (("item", item), ("answer", value), ("error", error)):
                if raw is None:
                    continue
                text = raw if isinstance(raw, str) else str(raw)
                at = text.lower().find(needle)
                if at < 0:
                    continue
                if len(found) >= room:
                    return found, len(found), True
                found.append(
                    {
                        "run": run.name,
                        "name": f"{run.name}[{index}]",
                        "index": index,
                        "role": role,
                        "snippet": _snippet(text, at, len(needle)),
                    }
                )
                break  # one result an item
    return found, len(found), False
