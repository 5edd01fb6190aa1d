"""A branch as a readable Markdown transcript, and the statistics its header shows.

Plain functions over `Branch` objects (duck-typed: nothing of the core is imported), so the
store's export (``%lion export -f markdown``) and the session explorer's download share one
transcript without the store reaching up into the widgets.

- **Statistics** (message count, models, tokens, cost) come from one `scan` of the messages.
  Cost is summed only over the responses whose provider reported ``cost_usd``; with no such
  report it is unknown (``None``), never 0. The fork point is what the core records:
  ``metadata["clone_from"]`` on a cloned or forked branch and on each copied message (see
  `lion_nb.widgets._tree` for the fork tree built from it).
- **Transcript**: one heading per message by role; a tool call with its arguments and result
  in fenced blocks; an answer's thinking folded away in a ``<details>`` before its text, its
  citations as markers and a list of sources (`answer_parts`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .answer_parts import answer_markdown, thinking_markdown

__all__ = [
    "BranchStats",
    "branch_label",
    "format_cost",
    "json_text",
    "markdown_transcript",
    "models_used",
    "scan",
    "usage_tokens",
]


def json_text(value: Any) -> str:
    """A value as readable text: strings as they are, the rest as indented JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def usage_tokens(usage: Any) -> int | None:
    """The tokens a provider's ``usage`` report counts (total, else input + output)."""
    if not isinstance(usage, dict):
        return None
    total = usage.get("total_tokens")
    if isinstance(total, (int, float)):
        return int(total)
    parts = [usage.get(k) for k in ("input_tokens", "output_tokens")]
    numbers = [p for p in parts if isinstance(p, (int, float))]
    return int(sum(numbers)) if numbers else None


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
        used = usage_tokens(metadata.get("usage"))
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


def format_cost(stats: BranchStats) -> str:
    """``$0.0123``; ``≥ $0.0123`` when some responses reported no cost; ``unknown`` when none did."""
    if stats.cost_usd is None:
        return "unknown"
    value = stats.cost_usd
    text = f"${value:.4f}" if value == 0 or value >= 0.0001 else f"${value:.2g}"
    return text if stats.cost_complete else f"≥ {text}"


def models_used(branch: Any, stats: BranchStats) -> list[str]:
    found = dict.fromkeys(stats.models)
    chat = branch.chat_model
    found.setdefault(f"{chat.provider}/{chat.model}", None)
    return list(found)


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


def _thinking_lines(metadata: dict[str, Any]) -> list[str]:
    """The lines before an answer's text: its thinking, folded away, when it thought."""
    thinking = metadata.get("thinking")
    if not isinstance(thinking, str) or not thinking.strip():
        return []
    return [thinking_markdown(thinking, metadata.get("thinking_seconds")), ""]


def markdown_transcript(
    branch: Any,
    stats: BranchStats | None = None,
    attachments: Callable[[Any], list[str]] | None = None,
) -> str:
    """``branch`` as readable Markdown: one heading per message by role; a tool call with its
    arguments and result in fenced blocks. ``attachments(message)`` gives the Markdown lines
    for a message's images and files (the export writes them beside the file and links them)."""
    stats = stats or scan(branch)
    pile = branch.messages
    lines = [f"# {branch_label(branch)}", ""]
    summary = [f"{stats.count} messages", "models: " + ", ".join(models_used(branch, stats))]
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
        metadata = message.metadata or {}
        if message.kind == "assistant_response":
            lines += _thinking_lines(metadata)
            text = answer_markdown(text, metadata)
        calls = metadata.get("tool_calls") or []
        if not text and calls:
            names = ", ".join(f"`{c.get('name', '?')}`" for c in calls if isinstance(c, dict))
            text = f"*(asked for tools: {names})*"
        lines += [text, ""]
        if attachments is not None and (
            getattr(message, "images", None) or getattr(message, "files", None)
        ):
            lines += [*attachments(message), ""]
    return "\n".join(lines).rstrip() + "\n"
