"""What the session explorer knows about branches: statistics, the fork tree, search, transcripts.

Plain functions over `Branch` objects, no widget code, so they are tested and reused alone.

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
  scans. Cost is summed only over the responses whose provider reported ``cost_usd``; with no
  such report it is unknown (``None``), never 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape
from typing import Any

from ._entries import _ROLES, _tokens, json_text

__all__ = [
    "BranchStats",
    "StatsCache",
    "branch_label",
    "build_tree",
    "format_cost",
    "markdown_transcript",
    "message_text",
    "search",
]


@dataclass(frozen=True, slots=True)
class BranchStats:
    """One scan of a branch's messages."""

    count: int
    models: tuple[str, ...]  # from the responses' metadata["model"], in order of first use
    tokens: int | None  # None: no message reported usage
    cost_usd: float | None  # sum of reported costs; None: no response reported one
    cost_complete: bool  # every model response reported a cost
    fork_message: str | None  # id of the source's message this branch forked at
    fork_index: int | None  # that message's position in the source when forked


def branch_label(branch: Any) -> str:
    """The name shown for a branch (an unnamed one by the start of its id)."""
    return branch.name or str(branch.id)[:8]


def parent_id(branch: Any) -> str | None:
    """The id of the branch this one was cloned or forked from, as the core recorded it."""
    record = (branch.metadata or {}).get("clone_from")
    if isinstance(record, dict) and record.get("id"):
        return str(record["id"])
    return None


def _fork_point(branch: Any) -> tuple[str | None, int | None]:
    record = (branch.metadata or {}).get("clone_from")
    if not isinstance(record, dict):
        return None, None
    if record.get("message_id"):
        index = record.get("index")
        return str(record["message_id"]), index if isinstance(index, int) else None
    progression = record.get("progression") or []
    positions = {str(pid): i for i, pid in enumerate(progression)}
    last, at = None, -1
    for message in branch.messages:
        source = (message.metadata or {}).get("clone_from")
        if not isinstance(source, str) or positions.get(source, -1) <= at:
            break  # the copied run ends at the first message that is not the next copy
        last, at = source, positions[source]
    return (last, at) if last is not None else (None, None)


def scan(branch: Any) -> BranchStats:
    """Count, models, tokens and cost of ``branch`` as it is now."""
    models: dict[str, None] = {}
    tokens: int | None = None
    cost: float | None = None
    responses = reported = 0
    for message in branch.messages:
        metadata = message.metadata or {}
        used = _tokens(metadata.get("usage"))
        if used is not None:
            tokens = (tokens or 0) + used
        if message.kind != "assistant_response":
            continue
        model = metadata.get("model")
        if model:
            models[str(model)] = None
        if model or "usage" in metadata:  # a model's answer, not text recorded by hand
            responses += 1
            value = metadata.get("cost_usd")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                reported += 1
                cost = (cost or 0.0) + float(value)
    fork_message, fork_index = _fork_point(branch)
    return BranchStats(
        count=len(branch.messages),
        models=tuple(models),
        tokens=tokens,
        cost_usd=cost,
        cost_complete=reported == responses,
        fork_message=fork_message,
        fork_index=fork_index,
    )


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


def format_cost(stats: BranchStats) -> str:
    """``$0.0123``; ``≥ $0.0123`` when some responses reported no cost; ``unknown`` when none did."""
    if stats.cost_usd is None:
        return "unknown"
    value = stats.cost_usd
    text = f"${value:.4f}" if value == 0 or value >= 0.0001 else f"${value:.2g}"
    return text if stats.cost_complete else f"≥ {text}"


def _models(branch: Any, stats: BranchStats) -> list[str]:
    found = dict.fromkeys(stats.models)
    chat = branch.chat_model
    found.setdefault(f"{chat.provider}/{chat.model}", None)
    return list(found)


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


# -- transcripts -------------------------------------------------------------------------------
_HEADINGS = {
    "system": "System",
    "instruction": "User",
    "assistant_response": "Assistant",
}


def _fence(text: str, language: str = "") -> str:
    """``text`` in a fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def _tool_block(request: Any, response: Any) -> list[str]:
    first = request if request is not None else response
    lines = [f"## Tool call: `{first.function}`", "", "Arguments:", ""]
    lines += [_fence(json_text(first.arguments), "json"), ""]
    if response is None:
        lines += ["Result: (no response recorded)", ""]
    else:
        label = "Result (error):" if response.is_error else "Result:"
        lines += [label, "", _fence(response.rendered), ""]
    return lines


def markdown_transcript(branch: Any, stats: BranchStats | None = None) -> str:
    """``branch`` as readable Markdown: one heading per message by role; a tool call with its
    arguments and result in fenced blocks."""
    stats = stats or scan(branch)
    pile = branch.messages
    lines = [f"# {branch_label(branch)}", ""]
    summary = [f"{stats.count} messages", "models: " + ", ".join(_models(branch, stats))]
    if stats.tokens is not None:
        summary.append(f"{stats.tokens:,} tokens")
    summary.append(f"cost: {format_cost(stats)}")
    lines += [" · ".join(summary), ""]
    drawn: set[str] = set()
    for message in pile:
        if str(message.id) in drawn:
            continue
        if message.kind == "action_request":
            response = pile.get(message.action_response_id) if message.action_response_id else None
            if response is not None:
                drawn.add(str(response.id))
            lines += _tool_block(message, response)
            continue
        if message.kind == "action_response":
            lines += _tool_block(None, message)
            continue
        lines += [f"## {_HEADINGS.get(message.kind, message.kind)}", ""]
        text = message.rendered or ""
        calls = (message.metadata or {}).get("tool_calls") or []
        if not text and calls:
            names = ", ".join(f"`{c.get('name', '?')}`" for c in calls if isinstance(c, dict))
            text = f"*(asked for tools: {names})*"
        lines += [text, ""]
    return "\n".join(lines).rstrip() + "\n"
