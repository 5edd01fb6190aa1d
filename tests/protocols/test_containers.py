"""Element, Pile and Progression."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest

from lion_nb import Element, Instruction, Pile, Progression, System
from lion_nb.errors import ItemExistsError, ItemNotFoundError
from lion_nb.protocols.messages import RoledMessage, load_message


def test_element_has_identity_time_and_metadata():
    a, b = Element(), Element()
    assert isinstance(a.id, UUID) and a.id != b.id
    assert a.created_at > 0
    assert a.metadata == {} and a.metadata is not b.metadata
    assert a == Element(id=a.id) and a != b


def test_element_ids_are_random_version_4_uuids_like_uuid4s():
    from uuid import RFC_4122

    ids = [Element().id for _ in range(2000)]
    assert len(set(ids)) == 2000
    for uid in ids[:200]:
        parsed = UUID(str(uid))  # the same UUID, through its text
        assert (uid.version, uid.variant) == (4, RFC_4122)
        assert parsed == uid and hash(parsed) == hash(uid) and parsed.int == uid.int
    assert Element.model_validate_json(Element().model_dump_json()).id.version == 4


def test_a_forked_child_makes_other_ids_than_its_parent():
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import os, sys\n"
        "from lion_nb.protocols.element import new_id\n"
        "new_id()\n"
        "read, write = os.pipe()\n"
        "if os.fork() == 0:\n"
        "    os.write(write, ' '.join(str(new_id()) for _ in range(3)).encode())\n"
        "    os._exit(0)\n"
        "os.wait()\n"
        "print(os.read(read, 4096).decode())\n"
        "print(' '.join(str(new_id()) for _ in range(3)))\n"
    )
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    child, parent = (set(line.split()) for line in run.stdout.splitlines())
    assert len(child) == len(parent) == 3 and not child & parent


def test_pile_keeps_order_and_looks_up_by_id_index_and_string():
    items = [Element() for _ in range(5)]
    pile = Pile(items)
    assert list(pile) == items
    assert pile[0] is items[0] and pile[-1] is items[-1]
    assert pile[items[2].id] is items[2]
    assert pile[str(items[3].id)] is items[3]
    assert pile[1:3] == items[1:3]
    assert items[4] in pile and Element() not in pile


def test_pile_refuses_duplicates_and_wrong_types():
    item = Element()
    pile = Pile([item], item_type=Element)
    with pytest.raises(ItemExistsError):
        pile.append(item)
    typed = Pile(item_type=System)
    with pytest.raises(TypeError, match="Pile of System cannot hold a Instruction"):
        typed.append(Instruction(instruction="x"))


def test_pile_remove_and_missing_item_error():
    items = [Element() for _ in range(3)]
    pile = Pile(items)
    assert pile.remove(items[1].id) is items[1]
    assert list(pile) == [items[0], items[2]]
    with pytest.raises(ItemNotFoundError, match="is not in this Pile"):
        pile.remove(items[1].id)
    with pytest.raises(ItemNotFoundError):
        pile[uuid4()]


def test_pile_popleft_drops_the_first_item_and_marks_the_order_changed():
    a, b = Element(), Element()
    pile = Pile([a, b])
    version = pile.progression.version
    assert pile.popleft() is a
    assert list(pile) == [b] and a not in pile and a.id not in pile.progression
    assert pile.progression.version == version + 1
    assert pile.popleft() is b and len(pile) == 0
    with pytest.raises(IndexError):
        pile.popleft()


def test_pile_insert_places_item_at_index():
    items = [Element() for _ in range(3)]
    pile = Pile(items)
    new = Element()
    pile.insert(0, new)
    assert pile[0] is new and len(pile) == 4


def test_pile_serializes_to_collections_and_progression_even_when_empty():
    assert Pile().to_dict() == {"collections": [], "progression": {"order": []}}
    msgs = [Instruction(instruction="a"), Instruction(instruction="b")]
    data = Pile(msgs).to_dict(mode="json")
    assert [d["instruction"] for d in data["collections"]] == ["a", "b"]
    assert data["progression"]["order"] == [str(m.id) for m in msgs]
    again = Pile.from_dict(data, load_message, item_type=RoledMessage)
    assert [m.id for m in again] == [m.id for m in msgs]


def test_pile_from_dict_rejects_malformed_input_with_the_shape():
    with pytest.raises(ValueError, match="collections"):
        Pile.from_dict({"items": []}, load_message)
    msg = Instruction(instruction="a")
    bad = {"collections": [msg.model_dump()], "progression": {"order": [str(uuid4())]}}
    with pytest.raises(ValueError, match="no item"):
        Pile.from_dict(bad, load_message)


def test_progression_order_membership_and_removal():
    ids = [uuid4() for _ in range(4)]
    prog = Progression(ids)
    assert list(prog) == ids and len(prog) == 4
    assert ids[2] in prog and str(ids[2]) in prog and "not-an-id" not in prog
    prog.remove(ids[2])
    assert ids[2] not in prog and prog.index(ids[3]) == 2
    prog.append(ids[0])  # a repeated id stays a member until its last occurrence goes
    prog.remove(ids[0])
    assert ids[0] in prog
    assert Progression.from_dict(prog.to_dict()) == prog


def test_to_id_error_names_the_fix():
    with pytest.raises(ValueError, match="pass an Element, a UUID or a UUID string"):
        Pile()["nope"]
