"""Messages: the tagged union, rendering, the one adapter, cloning and revisions."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from lion_nb import (
    ActionRequest,
    ActionResponse,
    AssistantResponse,
    Instruction,
    MessageRole,
    System,
)
from lion_nb.protocols.messages import dump_message, load_message, load_messages


@pytest.mark.parametrize(
    "message",
    [
        System(system_message="be brief", system_datetime="2026-01-01T00:00"),
        Instruction(
            instruction="sum",
            guidance="show work",
            context={"x": 1},
            request_fields={"total": "int"},
            tool_schemas=[{"name": "f"}],
            images=["data:image/png;base64,AAAA"],
            image_detail="low",
        ),
        AssistantResponse(response="42", metadata={"usage": {"input_tokens": 3}}),
        ActionRequest(function="add", arguments={"a": 1, "b": 2}),
        ActionResponse(function="add", arguments={"a": 1}, output=3, call_id="c1"),
    ],
)
def test_every_message_round_trips_through_the_one_adapter(message):
    for mode in ("python", "json"):
        data = dump_message(message, mode)
        if mode == "json":
            data = json.loads(json.dumps(data))
        again = load_message(data)
        assert type(again) is type(message)
        assert again.model_dump() == message.model_dump()


def test_roles_follow_the_wire():
    assert System().role is MessageRole.SYSTEM
    assert Instruction().role is MessageRole.USER
    assert AssistantResponse().role is MessageRole.ASSISTANT
    assert ActionRequest(function="f").role is MessageRole.ASSISTANT
    assert ActionResponse(function="f").role is MessageRole.TOOL


def test_unknown_kind_and_unknown_field_are_rejected():
    with pytest.raises(ValidationError):
        load_message({"kind": "memo", "text": "x"})
    with pytest.raises(ValidationError):
        Instruction(instruction="x", surprise=1)


def test_instruction_renders_sections_and_plain_content_wins():
    ins = Instruction(instruction="Add", guidance="carefully", context={"a": 1})
    text = ins.rendered
    assert text.startswith("Add") and "Guidance:\ncarefully" in text and '"a": 1' in text
    fmt = Instruction(instruction="x", response_format={"type": "object"})
    assert "JSON schema" in fmt.rendered
    assert Instruction(instruction="x", plain_content="only this").rendered == "only this"


def test_instruction_with_images_renders_content_parts():
    msg = Instruction(instruction="what is it", images=["http://x/img.png"], image_detail="high")
    chat = msg.chat_msg()
    assert chat["content"][0] == {"type": "text", "text": "what is it"}
    assert chat["content"][1]["image_url"] == {"url": "http://x/img.png", "detail": "high"}


def test_action_messages_render_as_tool_calls():
    req = ActionRequest(function="add", arguments={"a": 1})
    call = req.chat_msg()["tool_calls"][0]
    assert call["id"] == req.call_id and call["function"]["name"] == "add"
    assert json.loads(call["function"]["arguments"]) == {"a": 1}
    res = ActionResponse(function="add", output={"sum": 1}, call_id=req.call_id)
    assert res.chat_msg() == {"role": "tool", "tool_call_id": req.call_id, "content": res.rendered}


def test_clone_gets_new_identity_and_names_its_origin():
    msg = Instruction(instruction="x", sender="u")
    copy = msg.clone(recipient="r")
    assert copy.id != msg.id and copy.instruction == "x"
    assert copy.metadata["clone_from"] == str(msg.id) and copy.recipient == "r"


def test_field_assignment_bumps_the_revision():
    msg = AssistantResponse(response="a")
    assert msg.revision == 0
    msg.response = "b"
    assert msg.revision == 1


def test_assistant_response_exposes_raw_response_and_usage():
    res = AssistantResponse(response="x", metadata={"model_response": {"id": 1}, "usage": {"t": 2}})
    assert res.model_response == {"id": 1} and res.usage == {"t": 2}


def test_bulk_load_matches_single_load():
    msgs = [Instruction(instruction=str(i)) for i in range(3)]
    data = [dump_message(m) for m in msgs]
    assert [m.id for m in load_messages(data)] == [m.id for m in msgs]


def test_a_sender_or_recipient_becomes_text_or_is_refused_as_one_error():
    from uuid import uuid4

    uid, other = uuid4(), Instruction(instruction="o")
    cases = [
        (None, None),
        ("u", "u"),
        (MessageRole.USER, "user"),
        (uid, str(uid)),
        (other, str(other.id)),
        (5, "5"),
        (b"ab", "b'ab'"),
    ]
    for given, text in cases:
        msg = Instruction(instruction="x", sender=given, recipient=given)
        assert (msg.sender, msg.recipient) == (text, text), given
        assert msg.sender is None or type(msg.sender) is str
    saved = [dump_message(Instruction(instruction="x", sender="u", recipient=str(uid)))]
    assert load_messages(saved)[0].recipient == str(uid)
    for bad in ({"id": "x"}, ["x"], ("x",), {"x"}):
        with pytest.raises(ValidationError) as raised:
            Instruction(instruction="x", sender=bad)
        errors = raised.value.errors()
        assert len(errors) == 1 and errors[0]["loc"] == ("sender",), errors
        assert "an id or a name" in errors[0]["msg"]
