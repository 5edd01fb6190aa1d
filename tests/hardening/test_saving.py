"""A branch can always be saved, whatever its metadata, logs or tool results hold.

Bytes that are not UTF-8, objects pydantic cannot serialize and objects whose ``__str__``
raises once made ``to_dict(mode="json")`` fail, and a tool result that could not be printed
broke every later turn. Tool results are now made plain JSON data when recorded (with a note
of what was replaced, under ``metadata["replaced"]``), and saving falls back to a plain form
for anything else.
"""

from __future__ import annotations

import json

import anyio
import pytest

from lion_nb import Branch, Session


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text for you")

    __repr__ = __str__


class Custom:
    def __str__(self) -> str:
        return "a custom object"


def saved(branch: Branch) -> dict:
    """The branch saved and read back as JSON text (what a file or a store holds)."""
    return json.loads(json.dumps(branch.to_dict(mode="json")))


@pytest.mark.parametrize(
    "value", [b"\xff\xfe", object(), Unprintable(), {1, 2}, {(1, 2): "tuple key"}, Custom()]
)
@pytest.mark.parametrize("where", ["branch metadata", "message metadata", "log entry"])
def test_any_value_in_metadata_or_logs_can_be_saved(where, value):
    branch = Branch()
    if where == "branch metadata":
        branch.metadata["value"] = value
    elif where == "message metadata":
        branch.msgs.add_message(instruction="hi", metadata={"value": value})
    else:
        branch.log_manager.log({"value": value})
    data = saved(branch)
    again = Branch.from_dict(data)
    assert len(again.messages) == len(branch.messages)
    if where == "log entry":
        assert "value" in data["logs"]["collections"][0]["content"]


def test_a_session_with_odd_metadata_can_be_saved():
    session = Session()
    session.metadata["blob"] = b"\x00\xff"
    session.default_branch.metadata["obj"] = Unprintable()
    data = json.loads(json.dumps(session.to_dict(mode="json")))
    assert Session.from_dict(data).default_branch is not None


def bytes_tool() -> bytes:
    """Return raw bytes."""
    return b"\xff\xfe\x00"


def text_bytes_tool() -> bytes:
    """Return UTF-8 bytes."""
    return "héllo".encode()


def unprintable_tool() -> object:
    """Return an object that cannot be printed."""
    return Unprintable()


def mixed_tool() -> dict:
    """Return a mixture."""
    return {"ok": 1, "raw": b"\xff", "items": {3, 4}, "obj": Custom()}


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        (bytes_tool, "<3 bytes, base64: //4A>"),
        (text_bytes_tool, "héllo"),
        (unprintable_tool, "<unprintable Unprintable>"),
        (
            mixed_tool,
            {"ok": 1, "raw": "<1 bytes, base64: /w==>", "items": [3, 4], "obj": "a custom object"},
        ),
    ],
)
def test_tool_results_are_recorded_as_plain_data_with_a_note(tool, expected):
    branch = Branch(tools=[tool])

    async def main():
        (response,) = await branch.act({"function": tool.__name__, "arguments": {}})
        # every later turn renders the history: this used to raise for ever after
        first = await branch.communicate("and now?")
        second = await branch.communicate("once more")
        return response, first, second

    response, first, second = anyio.run(main)
    assert response.output == expected
    assert not response.is_error
    notes = response.metadata["replaced"]
    assert notes and all({"at", "was", "now"} <= set(n) for n in notes)
    assert isinstance(first, str) and isinstance(second, str)
    data = saved(branch)
    restored = Branch.from_dict(data)
    assert restored.messages[response.id].output == expected


def test_a_plain_tool_result_is_recorded_unchanged_without_a_note():
    result = {"city": "Paris", "temps": [1.5, 2.5], "nested": {"ok": True}}

    def weather() -> dict:
        """Weather."""
        return result

    branch = Branch(tools=[weather])
    (response,) = anyio.run(branch.act, {"function": "weather", "arguments": {}})
    assert response.output == result
    assert "replaced" not in response.metadata


def test_a_tool_whose_exception_cannot_be_printed_is_a_contained_error():
    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    def fails() -> str:
        """Fail."""
        raise Broken

    branch = Branch(tools=[fails])
    (response,) = anyio.run(branch.act, {"function": "fails", "arguments": {}})
    assert response.is_error
    assert response.output["error"] == "Broken: Broken()"  # its repr, since str() raised
    json.dumps(branch.to_dict(mode="json"))
