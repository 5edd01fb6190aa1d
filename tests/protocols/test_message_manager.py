"""MessageManager: adding, the system slot, callbacks and incremental request rendering."""

from __future__ import annotations

import pytest

from lion_nb import ActionRequest, ActionResponse, AssistantResponse, Instruction, System
from lion_nb.protocols.message_manager import MessageManager


def test_add_message_takes_exactly_one_kind():
    mm = MessageManager()
    with pytest.raises(ValueError, match="exactly one of"):
        mm.add_message()
    with pytest.raises(ValueError, match="exactly one of"):
        mm.add_message(instruction="a", assistant_response="b")


def test_add_message_from_text_or_object_and_sender_recipient():
    mm = MessageManager()
    ins = mm.add_message(instruction="hi", sender="user", recipient="b1")
    res = mm.add_message(assistant_response=AssistantResponse(response="yo"))
    req = mm.add_message(action_request={"function": "f", "arguments": {"x": 1}})
    assert isinstance(ins, Instruction) and ins.sender == "user" and ins.recipient == "b1"
    assert mm.last_response is res and req.function == "f"
    assert [m.kind for m in mm.messages] == ["instruction", "assistant_response", "action_request"]
    with pytest.raises(TypeError, match="takes a Instruction"):
        mm.add_message(instruction=AssistantResponse(response="x"))


def test_system_is_always_first_and_replaced_not_stacked():
    mm = MessageManager()
    mm.add_message(instruction="a")
    mm.add_message(system="one")
    mm.add_message(system=System(system_message="two"))
    assert mm.system.system_message == "two"
    assert [m.kind for m in mm.messages] == ["system", "instruction"]
    mm.set_system(None)
    assert mm.system is None and len(mm) == 1


def test_clear_messages_keeps_the_system_message():
    mm = MessageManager(system=System(system_message="s"))
    mm.add_message(instruction="a")
    mm.clear_messages()
    assert [m.kind for m in mm.messages] == ["system"]


def test_on_message_added_callbacks_run_synchronously_in_order():
    mm = MessageManager()
    seen = []
    mm.on_message_added.append(lambda m: seen.append(("a", m.kind)))
    mm.on_message_added.append(lambda m: seen.append(("b", m.kind)))
    mm.add_message(instruction="x")
    assert seen == [("a", "instruction"), ("b", "instruction")]


def test_a_add_message_records_too():
    import anyio

    mm = MessageManager()
    msg = anyio.run(lambda: mm.a_add_message(instruction="x"))
    assert mm.messages[-1] is msg


def test_chat_messages_merge_tool_calls_into_the_assistant_turn():
    mm = MessageManager(system=System(system_message="s"))
    mm.add_message(instruction="q")
    mm.add_message(assistant_response="let me look")
    r1 = mm.add_message(action_request=ActionRequest(function="f", arguments={}))
    r2 = mm.add_message(action_request=ActionRequest(function="g", arguments={}))
    mm.add_message(action_response=ActionResponse(function="f", call_id=r1.call_id, output=1))
    mm.add_message(action_response=ActionResponse(function="g", call_id=r2.call_id, output=2))
    chat = mm.chat_messages()
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "tool", "tool"]
    assert chat[2]["content"] == "let me look"
    assert [c["id"] for c in chat[2]["tool_calls"]] == [r1.call_id, r2.call_id]


def test_chat_messages_render_only_new_messages(monkeypatch):
    mm = MessageManager()
    for i in range(5):
        mm.add_message(instruction=str(i))
    first = mm.chat_messages()
    rendered = []
    original = Instruction.chat_msg

    def counting(self):
        rendered.append(self.instruction)
        return original(self)

    monkeypatch.setattr(Instruction, "chat_msg", counting)
    mm.add_message(instruction="new")
    second = mm.chat_messages()
    assert rendered == ["new"]
    assert second[:5] == first and second[5]["content"] == "new"


def test_chat_messages_see_edits_removals_and_subsets():
    mm = MessageManager()
    a = mm.add_message(instruction="a")
    b = mm.add_message(assistant_response="b")
    mm.chat_messages()
    b.response = "edited"
    assert mm.chat_messages()[1]["content"] == "edited"
    mm.remove_message(a.id)
    assert [m["content"] for m in mm.chat_messages()] == ["edited"]
    assert mm.chat_messages([b.id]) == [{"role": "assistant", "content": "edited"}]


def test_returned_lists_are_independent_of_the_cache():
    mm = MessageManager()
    mm.add_message(instruction="a")
    out = mm.chat_messages()
    out.append({"role": "user", "content": "junk"})
    assert len(mm.chat_messages()) == 1


def test_reordering_the_progression_rebuilds_the_request():
    mm = MessageManager(system=System(system_message="s"))
    a = mm.add_message(instruction="a")
    b = mm.add_message(instruction="b")
    mm.add_message(instruction="c")
    assert [m["content"] for m in mm.chat_messages()] == ["s", "a", "b", "c"]
    prog = mm.messages.progression
    prog.remove(b.id)
    prog.insert(prog.index(a.id), b.id)  # move b before a; the tail is unchanged
    assert [m["content"] for m in mm.chat_messages()] == ["s", "b", "a", "c"]
