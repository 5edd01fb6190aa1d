"""Critique and revise: the work happens on a clone; the branch gets only the final exchange."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel

from extensions.critique_revise import CRITIQUE_PROMPT, REVISE_PROMPT, critique_and_revise
from lion_nb import Session, iModel
from lion_nb.extensions import load_extension

EXAMPLES = Path(__file__).resolve().parents[2] / "extensions"


def playing(log: list, *, fail_on: str | None = None):
    """A model that drafts, critiques and revises, numbering its revisions."""

    def model(messages, **request):
        asked = messages[-1]["content"]
        log.append(asked)
        if fail_on and fail_on in asked:
            raise RuntimeError("the model broke")
        if asked.startswith(CRITIQUE_PROMPT[:20]):
            return "Too vague: name the scattering."
        if asked.startswith(REVISE_PROMPT[:20]):
            revision = sum(1 for a in log if a.startswith(REVISE_PROMPT[:20]))
            if request.get("response_format"):
                return '{"answer": "Rayleigh scattering", "confidence": 0.9}'
            return f"Revision {revision}: Rayleigh scattering makes the sky blue."
        return "Because of the air."

    return iModel(provider="offline", model="function", function=model)


def test_the_branch_gets_only_the_instruction_and_the_final_revision():
    log: list = []
    session = Session()
    branch = session.new_branch(name="b", system="Be exact.", chat_model=playing(log))
    before = [m.id for m in branch.messages]
    answer = anyio.run(lambda: critique_and_revise(branch, "Why is the sky blue?"))

    assert answer == "Revision 1: Rayleigh scattering makes the sky blue."
    assert len(log) == 3  # draft, critique, revision
    new = [m for m in branch.messages if m.id not in before]
    assert [m.kind for m in new] == ["instruction", "assistant_response"]
    assert new[0].rendered == "Why is the sky blue?"
    assert new[1].response == answer
    trail = new[1].metadata["critique_and_revise"]
    assert trail == {
        "rounds": 1,
        "draft": "Because of the air.",
        "critiques": ["Too vague: name the scattering."],
    }
    # the messages belong to this branch, and point at no discarded clone
    assert new[0].recipient == str(branch.id) and new[1].sender == str(branch.id)
    assert "clone_from" not in new[0].metadata and "clone_from" not in new[1].metadata
    assert [b.name for b in session.branches] == [session.default_branch.name, "b"]


def test_more_rounds_critique_and_revise_again():
    log: list = []
    branch = Session().new_branch(system="s", chat_model=playing(log))
    answer = anyio.run(lambda: critique_and_revise(branch, "Why?", rounds=2))
    assert answer.startswith("Revision 2:") and len(log) == 5
    assert len(branch.messages[-1].metadata["critique_and_revise"]["critiques"]) == 2
    assert len(branch.messages) == 3  # system + one exchange


def test_a_failure_on_the_way_leaves_the_branch_untouched():
    branch = Session().new_branch(system="s", chat_model=playing([], fail_on="Critique"))
    before = [m.id for m in branch.messages]
    with pytest.raises(Exception, match="the model broke"):
        anyio.run(lambda: critique_and_revise(branch, "Why?"))
    assert [m.id for m in branch.messages] == before


def test_a_response_format_parses_the_revision():
    class Answer(BaseModel):
        answer: str
        confidence: float

    branch = Session().new_branch(system="s", chat_model=playing([]))
    result = anyio.run(lambda: critique_and_revise(branch, "Why?", response_format=Answer))
    assert isinstance(result, Answer) and result.answer == "Rayleigh scattering"
    assert '"answer": "Rayleigh scattering"' in branch.messages[-1].response


def test_bad_arguments_are_refused_with_the_fix():
    branch = Session().new_branch(chat_model=playing([]))
    with pytest.raises(ValueError, match="`rounds` is a positive number"):
        anyio.run(lambda: critique_and_revise(branch, "x", rounds=0))
    agent = Session().new_branch(chat_model=iModel(provider="offline_cli", model="scripted"))
    with pytest.raises(ValueError, match="needs an API model"):
        anyio.run(lambda: critique_and_revise(agent, "x"))


def test_as_an_extension_it_is_a_named_operation_of_the_session():
    log: list = []
    session = Session()
    session.default_branch.chat_model = playing(log)
    record = load_extension(session, EXAMPLES / "critique_revise.py")
    assert record.operations == ("critique_and_revise",)
    result = anyio.run(
        lambda: session.run_operation("critique_and_revise", instruction="Why is the sky blue?")
    )
    assert result.startswith("Revision 1:")
    assert [m.kind for m in session.default_branch.messages] == [
        "instruction",
        "assistant_response",
    ]
