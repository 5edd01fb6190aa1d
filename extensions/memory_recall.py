"""Memory recall: a context provider that lets a branch remember what its tools found.

It uses two public seams and nothing else: the branch's memory store (`Branch.memory`) and
the context-provider registry (`Branch.providers`). Before each turn it searches memory for
the instruction and injects the best matches (ephemeral: never recorded as messages); after
`operate` runs tools, its writeback stores each successful tool result in memory, so a later
turn -- or another branch sharing the session's store -- can recall it.

    branch.providers.register(MemoryRecall(), priority=10, max_tokens=400)

As an extension (``%lion extend ../extensions/memory_recall.py``), ``extend`` registers one
`MemoryRecall` on every branch of the session, and on each branch that joins later.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MemoryRecall", "extend"]


class MemoryRecall:
    """Inject the ``limit`` memory records that best match the instruction."""

    name = "memory_recall"

    def __init__(self, limit: int = 3, heading: str = "Things you found earlier:"):
        self.limit = limit
        self.heading = heading

    async def provide(self, branch: Any, instruction: Any) -> str | None:
        query = instruction.rendered if hasattr(instruction, "rendered") else str(instruction)
        records = await branch.memory.search(query, limit=self.limit)
        if not records:
            return None
        lines = [f"- {record.content}" for record in records]
        return "\n".join([self.heading, *lines])

    async def writeback(self, branch: Any, action_responses: list[Any]) -> None:
        for response in action_responses:
            if getattr(response, "is_error", False):
                continue
            output = response.output
            text = output if isinstance(output, str) else json.dumps(output, default=str)
            arguments = json.dumps(response.arguments, default=str)
            await branch.memory.add(
                f"{response.function}({arguments}) returned {text}",
                metadata={"tool": response.function, "call_id": response.call_id},
            )


def extend(session: Any, *, limit: int = 3, priority: int = 10, max_tokens: int = 400) -> None:
    """Register a `MemoryRecall` on every branch of ``session`` (now and joining later)."""
    from lion_nb.extensions import for_each_branch

    def setup(branch: Any) -> None:
        if MemoryRecall.name not in branch.providers.names:
            branch.providers.register(
                MemoryRecall(limit=limit), priority=priority, max_tokens=max_tokens
            )

    for_each_branch(session, setup)
