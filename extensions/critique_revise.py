"""Critique and revise: a named operation that drafts, critiques and revises an answer on a
clone of the branch, and records only the result on the branch itself.

The draft and the critiques are working notes, so they are written on a clone
(`Branch.clone()`: the same messages and model, no session, no observers) and the clone is
dropped afterwards. The branch the operation runs on gets exactly one exchange -- the
caller's instruction and the final revision -- as if the model had answered that well at
once, so its history stays short and the next turn builds on the good answer. Nothing is
hidden: the recorded answer's ``metadata["critique_and_revise"]`` keeps the draft and every
critique. If any step fails, the branch gets nothing at all.

The clone carries no context providers and no memory of its own (ADR-0016 D5: a clone leaves
runtime state behind), and the steps use ``communicate``, so the branch needs an API model
(a CLI agent only runs).

    %lion extend ../extensions/critique_revise.py
    %%lion --op critique_and_revise
    Explain why the sky is blue.

or, from Python, ``await session.run_operation("critique_and_revise", instruction="...",
rounds=2)``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CRITIQUE_PROMPT", "REVISE_PROMPT", "critique_and_revise", "extend"]

CRITIQUE_PROMPT = (
    "Critique the answer you just gave: list its factual errors, gaps and unclear parts, "
    "most important first. Do not rewrite it yet."
)
REVISE_PROMPT = (
    "Rewrite your answer to the original request, fixing every problem the critique found. "
    "Reply with the revised answer only."
)


async def critique_and_revise(
    branch: Any,
    instruction: Any,
    *,
    rounds: int = 1,
    response_format: Any = None,
    critique_prompt: str = CRITIQUE_PROMPT,
    revise_prompt: str = REVISE_PROMPT,
) -> Any:
    """Draft, then ``rounds`` times critique and revise, on a clone; record the instruction
    and the last revision on ``branch`` and return the revision (parsed into
    ``response_format`` when one is given)."""
    if not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"`critique_and_revise`: `rounds` is a positive number, got {rounds!r}.")
    if branch.chat_model.is_cli:
        model = f"{branch.chat_model.provider}/{branch.chat_model.model}"
        raise ValueError(
            f"`critique_and_revise` needs an API model; `{model}` is a CLI agent, which only "
            "runs. Pick an API model for this branch."
        )
    work = branch.clone()
    start = len(work.messages)
    draft = await work.communicate(instruction)
    asked = work.messages[start]  # the instruction as the model saw it
    critiques: list[str] = []
    answer: Any = draft
    for _ in range(rounds):
        critiques.append(await work.communicate(critique_prompt))
        answer = await work.communicate(revise_prompt, response_format=response_format)
    revised = work.messages[-1]

    user = branch.user or "user"
    question = asked.clone(sender=asked.sender, recipient=str(branch.id))
    reply = revised.clone(sender=str(branch.id), recipient=user)
    for message in (question, reply):
        message.metadata.pop("clone_from", None)  # the clone is gone; point at nothing
    reply.metadata["critique_and_revise"] = {
        "rounds": rounds,
        "draft": draft,
        "critiques": critiques,
    }
    branch.msgs.add_message(instruction=question)
    branch.msgs.add_message(assistant_response=reply)
    return answer


def extend(session: Any) -> None:
    """Register ``critique_and_revise`` as a named operation of ``session``."""
    session.register_operation("critique_and_revise", critique_and_revise)
