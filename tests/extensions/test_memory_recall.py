"""The memory-recall extension works through the public seams only."""

from __future__ import annotations

from pathlib import Path

import anyio

from extensions.memory_recall import MemoryRecall
from lion_nb import Branch, iModel

EXAMPLES = Path(__file__).resolve().parents[2] / "extensions"


def lookup_capital(country: str) -> str:
    """Look up the capital city of a country."""
    return {"France": "Paris"}.get(country, "unknown")


def test_tool_results_are_remembered_and_recalled_in_a_later_turn():
    sent: list = []

    def model(messages, **request):
        sent.append(messages)
        if request.get("tools") and len(sent) == 1:
            return {"tool_calls": [{"name": "lookup_capital", "arguments": {"country": "France"}}]}
        return "done"

    branch = Branch(
        system="You are helpful.",
        chat_model=iModel(provider="offline", model="function", function=model),
    )
    branch.providers.register(MemoryRecall(), priority=10)

    async def main():
        await branch.operate(instruction="What is the capital of France?", tools=[lookup_capital])
        await branch.communicate("Remind me: the capital of France?")

    anyio.run(main)
    assert [m.kind for m in branch.messages][3:5] == ["action_request", "action_response"]
    records = anyio.run(branch.memory.list)
    assert [r.metadata["tool"] for r in records] == ["lookup_capital"]
    assert "returned Paris" in records[0].content
    last_system = sent[-1][0]["content"]
    assert "Things you found earlier:" in last_system and "returned Paris" in last_system
    assert all("Things you found" not in m.rendered for m in branch.messages)


def test_failed_tool_results_are_not_remembered():
    def broken(x: int) -> int:
        """Always fails."""
        raise RuntimeError("no")

    def model(messages, **request):
        if request.get("tools") and not any(m["role"] == "tool" for m in messages):
            return {"tool_calls": [{"name": "broken", "arguments": {"x": 1}}]}
        return "done"

    branch = Branch(
        system="s", chat_model=iModel(provider="offline", model="function", function=model)
    )
    branch.providers.register(MemoryRecall())
    anyio.run(lambda: branch.operate(instruction="go", tools=[broken]))
    assert len(branch.memory) == 0


def test_as_an_extension_every_branch_recalls_including_later_ones():
    from lion_nb import Session
    from lion_nb.extensions import load_extension

    sent: list = []
    session = Session()
    record = load_extension(session, EXAMPLES / "memory_recall.py")
    assert record.providers == ("memory_recall",)
    assert session.default_branch.providers.names == ["memory_recall"]
    later = session.new_branch(
        system="s",
        chat_model=iModel(
            provider="offline", model="function", function=lambda m: sent.append(m) or "ok"
        ),
    )
    anyio.run(lambda: later.memory.add("The meeting moved to Tuesday."))
    anyio.run(later.communicate, "When is the meeting?")
    assert later.providers.names == ["memory_recall"]  # set up at its first run, once
    assert "The meeting moved to Tuesday." in sent[0][0]["content"]
