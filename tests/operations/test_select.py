"""select: choose among a list, a dict or an Enum through one recorded exchange.

ADR-0021 D1 clause -> test
- the select module exists but no Branch.select facade is shipped; it resolves only when a
  session registers the name -> test_there_is_no_branch_select_facade,
  test_select_resolves_when_registered_as_a_named_operation
Issue 3 item 4 (select) -> test
- choices from a list / dict / Enum, originals returned -> test_select_from_a_list_dict_and_enum
- forgiving matching, unknown dropped, at most max_num_selections
    -> test_near_misses_match_unknown_picks_drop_and_the_maximum_holds
- the exchange is recorded and observed like any operate -> test_select_is_one_recorded_exchange
"""

from __future__ import annotations

import json
from enum import Enum

import anyio
import pytest

from lion_nb import Branch, Session, iModel
from lion_nb.operations.select_op import Selection, select


class Color(Enum):
    RED = "warm"
    BLUE = "cool"


def _scripted(*responses):
    return iModel(provider="offline", model="scripted", responses=list(responses))


def _select(branch, *args, **kw):
    return anyio.run(lambda: select(branch, *args, **kw))


def test_select_from_a_list_dict_and_enum():
    b = Branch()  # the auto model picks the first allowed value
    assert _select(b, "pick a fruit", ["apple", "banana"]) == Selection(selected=["apple"])
    got = _select(b, {"instruction": "pick"}, {"fast": "quick option", "slow": "careful option"})
    assert got.selected == ["fast"]
    assert _select(b, "pick a color", Color).selected == [Color.RED]


def test_the_model_sees_only_the_choice_names_as_allowed_values():
    model = _scripted(json.dumps({"selected": ["BLUE"]}))
    b = Branch(chat_model=model)
    assert _select(b, "pick", Color).selected == [Color.BLUE]
    schema = model.endpoint.calls[0].response_format["schema"]
    assert schema["properties"]["selected"]["items"]["enum"] == ["RED", "BLUE"]
    assert "cool" in model.endpoint.calls[0].messages[-1]["content"]


def test_near_misses_match_unknown_picks_drop_and_the_maximum_holds():
    answer = {"selected": ["Banana", "cherri", "durian", "banana", "apple"]}
    b = Branch(chat_model=_scripted(json.dumps(answer)))
    got = _select(b, "pick", ["apple", "banana", "cherry"], max_num_selections=2)
    assert got.selected == ["banana", "cherry"]


def test_select_is_one_recorded_exchange():
    b = Branch(chat_model=_scripted('{"selected": ["b"]}'))
    _select(b, "pick", ["a", "b"])
    assert [m.kind for m in b.messages] == ["instruction", "assistant_response"]


def test_bad_arguments_are_refused_clearly():
    b = Branch()
    with pytest.raises(ValueError, match="`choices` is empty"):
        _select(b, "pick", [])
    with pytest.raises(ValueError, match="`max_num_selections`"):
        _select(b, "pick", ["a"], max_num_selections=0)
    with pytest.raises(TypeError, match="`choices`"):
        _select(b, "pick", 42)


def test_there_is_no_branch_select_facade():
    b = Branch()
    assert not hasattr(b, "select")
    assert b.get_operation("select") is None


def test_select_resolves_when_registered_as_a_named_operation():
    session = Session()
    session.register_operation("select", select)
    branch = session.new_branch()
    assert branch.get_operation("select") is select

    async def go():
        return await session.run_operation(
            "select", branch=branch, instruct="pick", choices=["x", "y"]
        )

    assert anyio.run(go) == Selection(selected=["x"])
