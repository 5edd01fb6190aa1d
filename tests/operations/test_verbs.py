"""The one verb table (`lion_nb.operations.verbs`): each entry's claims checked against what
the verb really does on a branch with the offline models, and how a name is called."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from lion_nb.models.imodel import iModel
from lion_nb.operations.verbs import VERBS, call_verb, default_verb, joined_answers, verb_names
from lion_nb.session.branch import Branch
from lion_nb.session.session import Session


class Topic(BaseModel):
    topic: str


def _api(reply: str = '{"topic": "tides"}') -> iModel:
    return iModel(provider="offline", model="function", function=lambda messages, **kw: reply)


def _cli(*texts: str) -> iModel:
    """An agent whose texts are separate answers (a tool call between each two)."""
    turn: list[dict] = []
    for i, t in enumerate(texts):
        if i:
            turn.append({"type": "tool_use", "tool_id": f"t{i}", "tool_name": "Bash"})
            turn.append({"type": "tool_result", "tool_id": f"t{i}", "tool_output": "ok"})
        turn.append({"type": "text", "content": t})
    return iModel(provider="offline_cli", model="scripted", turns=[turn])


def _call(branch: Branch, name: str, instruction: Any = "What about tides?", **kw: Any) -> Any:
    async def go() -> Any:
        return await call_verb(branch, name, instruction, **kw)

    return anyio.run(go)


def test_the_table_names_each_verb_once_in_the_order_users_see():
    assert verb_names() == (
        "communicate",
        "chat",
        "operate",
        "ReAct",
        "interpret",
        "parse",
        "run",
    )
    assert all(name == verb.name for name, verb in VERBS.items())
    assert verb_names(media=True) == ("communicate", "chat", "operate", "run")
    assert verb_names(tools=True) == ("operate", "ReAct")


@pytest.mark.parametrize("name", ["communicate", "chat", "operate", "interpret", "parse"])
def test_records_says_whether_the_verb_appends_to_the_branch(name):
    branch = Branch(chat_model=_api(), parse_model=_api())
    kw = {"response_format": Topic} if name == "parse" else {}
    instruction = '{"topic": "tides"}' if name == "parse" else "What about tides?"
    _call(branch, name, instruction, **kw)
    assert bool(branch.messages) is VERBS[name].records, [m.kind for m in branch.messages]


def test_run_records_and_is_collected_from_its_stream():
    branch = Branch(chat_model=_cli("first", "second"))
    assert VERBS["run"].records and VERBS["run"].collect == "stream"
    assert _call(branch, "run") == "first\n\nsecond"
    assert branch.messages[0].kind == "instruction"


def test_a_streamed_answer_leaves_out_whitespace_only_texts():
    """The cell, `map`, Chat and evaluation once kept a whitespace-only answer that
    `run_and_collect` dropped; all now collect as `run_and_collect` does."""
    branch = Branch(chat_model=_cli("first", "  \n ", "second"))
    assert _call(branch, "run") == "first\n\nsecond"
    assert _call(Branch(chat_model=_cli("   ")), "run") is None


def test_joined_answers():
    assert joined_answers(["a", "", None, " ", "b"]) == "a\n\nb"
    assert joined_answers([]) is None
    assert joined_answers([" \t"]) is None


def test_react_takes_its_instruction_as_a_dict():
    assert VERBS["ReAct"].instruction == "dict"
    assert VERBS["operate"].instruction == "keyword"
    branch = Branch(chat_model=_api('{"topic": "tides"}'))
    value = _call(branch, "operate", response_format=Topic)
    assert value == Topic(topic="tides")
    assert branch.messages[0].instruction == "What about tides?"


def test_a_registered_operation_gets_the_instruction_and_the_keywords():
    seen: list[dict] = []

    async def shout(branch: Branch, instruction: str, **kw: Any) -> str:
        seen.append(kw)
        return instruction.upper()

    session = Session()
    session.register_operation("shout", shout)
    assert _call(session.default_branch, "shout", "hi", loud=True) == "HI"
    assert seen == [{"loud": True}]


def test_an_unknown_name_is_a_value_error_with_the_fix():
    session = Session()
    with pytest.raises(ValueError, match=r"Unknown operation: nope\..*register_operation"):
        _call(session.default_branch, "nope")


def test_the_default_verb_follows_the_model_and_the_tools():
    assert default_verb(_cli("x")) == "run"
    assert default_verb(_cli("x"), tools=True) == "run"
    assert default_verb(_api()) == "communicate"
    assert default_verb(_api(), tools=True) == "operate"
