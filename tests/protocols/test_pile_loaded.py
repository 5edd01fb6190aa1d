"""`Pile.of_loaded`: a loaded history's Pile, exactly as the general constructor makes it."""

from __future__ import annotations

import pytest

from lion_nb import Instruction, Pile, Progression, System
from lion_nb.errors import ItemExistsError
from lion_nb.protocols.messages import RoledMessage


def _messages(n: int = 5) -> list[RoledMessage]:
    return [System(system_message="s"), *(Instruction(instruction=f"q{i}") for i in range(n))]


def _general(items: list, progression: dict | None, item_type: type | None = RoledMessage):
    loaded = Progression.from_dict(progression) if progression is not None else None
    return Pile(items, item_type=item_type, progression=loaded)


def _same(a: Pile, b: Pile) -> None:
    assert list(a) == list(b) and a.keys() == b.keys()
    assert a.progression == b.progression and a.progression.version == b.progression.version
    for uid in b.progression:
        assert uid in a.progression and a[uid] is b[uid]
    assert a.item_type is b.item_type


@pytest.mark.parametrize(
    "order",
    [
        lambda ids: [str(i) for i in ids],  # what to_dict writes
        lambda ids: [str(i) for i in reversed(ids)],  # another order
        lambda ids: [str(i).upper() for i in ids],  # what UUID also reads
        lambda ids: [i.hex for i in ids],  # without hyphens
        lambda ids: list(ids),  # UUIDs, not strings
        lambda ids: [str(i) for i in ids[1:]] + [str(ids[0])],
    ],
)
def test_of_loaded_is_the_general_constructor(order):
    items = _messages()
    progression = {"order": order([m.id for m in items])}
    loaded = Pile.of_loaded(items, item_type=RoledMessage, progression=progression)
    _same(loaded, _general(items, progression))


def test_of_loaded_keeps_working_as_a_pile():
    items = _messages()
    pile = Pile.of_loaded(
        items, item_type=RoledMessage, progression={"order": [str(m.id) for m in items]}
    )
    extra = Instruction(instruction="more")
    pile.append(extra)
    assert pile.last() is extra and extra.id in pile.progression and len(pile) == 7
    pile.remove(items[2])
    assert items[2].id not in pile.progression and pile.progression.version == 1
    with pytest.raises(ItemExistsError):
        pile.append(items[0])


def test_of_loaded_without_an_order_keeps_the_items_order():
    items = _messages()
    _same(Pile.of_loaded(items, item_type=RoledMessage), _general(items, None))


@pytest.mark.parametrize(
    "progression",
    [
        {"order": []},  # names none of the items
        {"order": None},  # not a list
        {},  # the empty order
        [],  # not a dict
        "order",
    ],
)
def test_of_loaded_raises_the_general_errors(progression):
    items = _messages(2)
    with pytest.raises(ValueError) as general:
        _general(items, progression)
    with pytest.raises(ValueError) as loaded:
        Pile.of_loaded(items, item_type=RoledMessage, progression=progression)
    assert type(loaded.value) is type(general.value) and str(loaded.value) == str(general.value)


def test_of_loaded_reports_bad_orders_and_items_as_the_general_constructor_does():
    items = _messages(2)
    ids = [str(m.id) for m in items]
    cases = [
        ({"order": [*ids[:-1], ids[0]]}, items),  # one id twice, one missing
        ({"order": [*ids[:-1], "not-an-id" + "0" * 27]}, items),  # 36 characters, not hex
        ({"order": [*ids[:-1], 7]}, items),  # not an id at all
        ({"order": [*ids, ids[0]]}, items),  # more entries than items
        ({"order": ids + ids[:1]}, [*items, items[0]]),  # an item twice
    ]
    for progression, given in cases:
        with pytest.raises(ValueError) as general:
            _general(given, progression)
        with pytest.raises(ValueError) as loaded:
            Pile.of_loaded(given, item_type=RoledMessage, progression=progression)
        assert type(loaded.value) is type(general.value)
        assert str(loaded.value) == str(general.value)


def test_of_loaded_checks_the_item_type():
    items = _messages(1)
    with pytest.raises(TypeError) as general:
        _general(items, None, item_type=Instruction)
    with pytest.raises(TypeError) as loaded:
        Pile.of_loaded(items, item_type=Instruction)
    assert str(loaded.value) == str(general.value)
