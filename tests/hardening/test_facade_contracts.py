"""Gaps lionagi's own suite found in the facade (ADR-0021 D1), and one trap.

- A model passed to a verb is used whenever it is given (``is None``, not truthiness): a
  model object that happens to be falsy must not be replaced by the branch default.
- ``BranchOperations``, the literal ADR-0021 D1 names as the graph node's typing aid, is in
  `lion_nb.operations.node`.
- An observer written for two arguments, ``(signal, ctx)``, is refused when registered,
  instead of failing -- logged, unseen -- on every signal.
"""

from __future__ import annotations

import typing

import anyio
import pytest
from pydantic import BaseModel

from lion_nb import Branch, Session, iModel
from lion_nb.protocols.signals import RunEnd, Signal


class FalsyModel(iModel):
    """A model object that is falsy (it defines ``__len__``, as some wrappers do)."""

    def __len__(self) -> int:
        return 0


def scripted(text: str) -> FalsyModel:
    return FalsyModel(provider="offline", model="scripted", responses=[text] * 10)


class Answer(BaseModel):
    value: str


@pytest.mark.parametrize(
    "verb",
    ["chat", "communicate", "operate", "communicate_parse_model", "parse", "interpret"],
)
def test_a_falsy_model_passed_to_a_verb_is_used(verb):
    branch = Branch(
        chat_model=iModel(provider="offline", model="scripted", responses=["default"] * 10)
    )
    given = scripted('{"value": "given"}')
    assert not given  # the trap: truthiness would pick the branch default

    async def main():
        if verb == "chat":
            return await branch.chat("hi", imodel=given)
        if verb == "communicate":
            return await branch.communicate("hi", chat_model=given)
        if verb == "operate":
            return await branch.operate("hi", chat_model=given)
        if verb == "communicate_parse_model":
            return await branch.communicate(
                "hi", response_format=Answer, chat_model=given, parse_model=given
            )
        if verb == "parse":
            return await branch.parse("not json at all", Answer, imodel=given)
        return await branch.interpret("hi", interpret_model=given)

    result = anyio.run(main)
    text = result.value if isinstance(result, Answer) else str(result)
    assert "given" in text and "default" not in text


def test_branch_operations_is_the_adr_literal():
    from lion_nb.operations import BranchOperations as exported
    from lion_nb.operations.node import BranchOperations, Operation

    assert exported is BranchOperations
    assert typing.get_args(BranchOperations) == (
        "chat", "operate", "communicate", "parse", "ReAct", "select", "interpret", "act",
        "ReActStream",
    )  # fmt: skip
    hints = typing.get_type_hints(Operation)
    assert BranchOperations in typing.get_args(hints["operation"])
    assert Operation(operation="my_registered_op").operation == "my_registered_op"


def test_an_observer_that_cannot_take_the_signal_is_refused_when_registered():
    session = Session()
    seen: list[Signal] = []

    def two_arguments(signal, ctx):
        seen.append(signal)

    with pytest.raises(TypeError) as caught:
        session.observe(RunEnd, two_arguments)
    text = str(caught.value)
    assert "two_arguments(signal, ctx)" in text and "`callback(signal)`" in text
    with pytest.raises(TypeError, match="keyword_only"):
        session.default_branch.observe(Signal, lambda *, keyword_only: None)

    # the forms that can take it are all accepted, and do receive signals
    async def async_one(signal):
        seen.append(signal)

    class Callable:
        def __call__(self, signal, extra=None):
            seen.append(signal)

    for callback in (seen.append, lambda *args: seen.append(args[0]), async_one, Callable(), repr):
        session.observe(RunEnd, callback)
    anyio.run(session.default_branch.communicate, "hi")
    assert len([s for s in seen if isinstance(s, RunEnd)]) == 4
