"""What a provider requires of a history, checked the way its API checks a request."""

from __future__ import annotations

from typing import Any

from lion_nb.models.endpoints.anthropic import to_anthropic_messages


def openai_problems(messages: list[dict[str, Any]]) -> list[str]:
    """OpenAI's rule: an assistant message with ``tool_calls`` is followed by one ``tool``
    message per call id, before any other message; no ``tool`` message answers nothing."""
    problems: list[str] = []
    open_ids: list[str] = []
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role == "tool":
            if msg.get("tool_call_id") not in open_ids:
                problems.append(f"message {i}: a tool result for no open call")
            else:
                open_ids.remove(msg["tool_call_id"])
            continue
        if open_ids:
            problems.append(f"message {i}: calls {open_ids} have no result before it")
            open_ids = []
        if role == "assistant" and msg.get("tool_calls"):
            open_ids = [c["id"] for c in msg["tool_calls"]]
    if open_ids:
        problems.append(f"the history ends with calls {open_ids} unanswered")
    return problems


def anthropic_problems(messages: list[dict[str, Any]]) -> list[str]:
    """Anthropic's rule: every ``tool_use`` block is answered by a ``tool_result`` block in
    the very next (user) message."""
    _, wire = to_anthropic_messages(messages)
    problems: list[str] = []
    for i, msg in enumerate(wire):
        uses = [b["id"] for b in msg["content"] if b.get("type") == "tool_use"]
        if not uses:
            continue
        following = wire[i + 1]["content"] if i + 1 < len(wire) else []
        answered = {b.get("tool_use_id") for b in following if b.get("type") == "tool_result"}
        missing = [u for u in uses if u not in answered]
        if missing:
            problems.append(f"message {i}: tool_use {missing} without a tool_result next")
    return problems
