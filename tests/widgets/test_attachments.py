"""Images and files in the widgets, by state: the turn view, `BranchView` and `Chat` show a
message's images (data: URLs only, each kept once in the view's state) and files as chips,
and Chat's "Attach a file" sends the picked file with the next message."""

from __future__ import annotations

import asyncio
import json

import pytest

from lion_nb import Branch, Instruction, iModel
from lion_nb.models.media import data_url, file_part
from lion_nb.widgets import BranchView, Chat, TurnWidget


def _png(width: int = 640, height: int = 480, pad: int = 40_000) -> bytes:
    head = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
    return head + width.to_bytes(4, "big") + height.to_bytes(4, "big") + b"\x05" * pad


PNG = data_url(_png())
PDF_BYTES = b"%PDF-1.4\n" + b"/Type /Page\n" * 3 + b"x" * 3000
PDF = file_part("report.pdf", PDF_BYTES)


def _branch(**kw) -> Branch:
    model = iModel(provider="offline", model="auto")
    return Branch(name="main", system="Be brief.", chat_model=model, **kw)


def _front_end(widget, payload: dict, buffers: list | None = None) -> None:
    """A custom message from the front end, as the kernel's comm delivers it."""
    msg = {"content": {"data": {"method": "custom", "content": payload}}, "buffers": buffers or []}
    widget._handle_msg(msg)


def test_branch_view_shows_images_and_file_chips_and_keeps_each_image_once():
    branch = _branch()
    for i in range(30):
        branch.msgs.add_message(instruction=f"look {i}", images=[PNG], files=[PDF])
        branch.msgs.add_message(assistant_response="seen")
    view = BranchView(branch)
    first = next(e for e in view.entries if e["role"] == "user")
    assert sum(1 for e in view.entries if e.get("attachments")) == 25  # the window's 50
    image, chip = first["attachments"]
    assert image == {
        "type": "image",
        "ref": image["ref"],
        "alt": "an image of 640×480 pixels (PNG)",
    }
    assert chip == {"type": "file", "name": "report.pdf", "label": "PDF · 3 pages · 3 KB"}
    assert view.media == {image["ref"]: PNG}
    state = json.dumps({"entries": view.entries, "media": view.media})
    assert state.count(PNG[:300]) == 1  # 30 messages show it; the state holds it once
    assert "media" not in first  # moved out of the entries into the one map
    text = view.static_text()
    assert "[an image of 640×480 pixels (PNG)] [report.pdf: PDF · 3 pages · 3 KB]" in text
    assert "base64" not in view.static_html()  # a saved notebook names images, no copies


def test_an_image_given_by_a_link_is_a_chip_never_an_image():
    branch = _branch()
    branch.msgs.add_message(instruction="see", images=["https://evil.test/x.png?k=secret"])
    view = BranchView(branch)
    (item,) = view.entries[1]["attachments"]
    assert item == {
        "type": "file",
        "name": "image",
        "label": "an image given by a link, not fetched",
    }
    assert view.media == {}
    assert "evil.test" not in json.dumps(view.entries)


def test_the_turn_view_shows_the_turns_images_and_files_after_it_ends():
    widget = TurnWidget("main · communicate")
    widget.start()
    widget.message(Instruction(instruction="what is this?", images=[PNG, PNG], files=[PDF]))
    widget.finish("an answer")
    kinds = [a["type"] for a in widget.attachments]
    assert kinds == ["image", "image", "file"]
    assert widget.attachments[0]["alt"] == "an image of 640×480 pixels (PNG)"
    assert list(widget.media.values()) == [PNG]  # the same image twice: kept once


def test_attach_a_file_sends_it_with_the_next_message_then_the_chip_goes():
    branch = _branch()
    chat = Chat(branch)
    _front_end(chat.input, {"event": "attach", "name": "../../secret/report.pdf"}, [PDF_BYTES])
    assert chat.input.attached == [{"name": "report.pdf", "label": "PDF · 3 pages · 3 KB"}]

    async def main() -> None:
        chat.input.value = "Summarize it"
        _front_end(chat.input, {"event": "submit"})
        await chat.task

    asyncio.run(main())
    instruction = branch.messages[1]
    assert instruction.files[0]["file"]["filename"] == "report.pdf"
    assert "a PDF of 3 pages (report.pdf)" in branch.messages[2].response  # the offline model
    assert chat.input.attached == [] and chat.input.files == []
    assert chat.view.entries[1]["attachments"][0]["name"] == "report.pdf"


def test_remove_takes_a_file_back_and_a_file_that_cannot_be_sent_is_refused_with_why():
    chat = Chat(_branch())
    _front_end(chat.input, {"event": "attach", "name": "a.png"}, [_png(8, 8, 10)])
    _front_end(chat.input, {"event": "attach", "name": "b.bin"}, [b"\x00\x01\x02"])
    assert [c["name"] for c in chat.input.attached] == ["a.png"]
    assert chat.view.status.startswith("error · `b.bin` not attached: ")
    assert "PDF, an image" in chat.view.status
    _front_end(chat.input, {"event": "detach", "index": 0})
    assert chat.input.attached == [] and chat.input.files == []


def test_an_operation_that_takes_no_files_refuses_them_and_keeps_them():
    chat = Chat(_branch(), operations=["communicate", "interpret"])
    chat.attach(PDF_BYTES, name="report.pdf")
    chat.operation = "interpret"

    async def main() -> None:
        chat.input.value = "Summarize it"
        _front_end(chat.input, {"event": "submit"})

    asyncio.run(main())
    assert "`interpret` takes no files" in chat.view.status
    assert not chat.running and len(chat.input.files) == 1
    assert chat.input.value == "Summarize it"


def test_files_from_python():
    branch = _branch()
    chat = Chat(branch)
    asyncio.run(chat.send("What is it?", files=[_png(10, 20, 10)]))
    assert branch.messages[1].images and "an image of 10×20 pixels" in branch.messages[2].response
    with pytest.raises(ValueError, match="takes no files"):
        asyncio.run(chat.send("again", operation="interpret", files=[PDF_BYTES]))


def test_undo_puts_the_turns_files_back_and_rerun_sends_them_again():
    branch = _branch()
    chat = Chat(branch, operations=["communicate", "interpret"])
    _front_end(chat.input, {"event": "attach", "name": "report.pdf"}, [PDF_BYTES])

    async def main() -> None:
        chat.input.value = "Summarize it"
        _front_end(chat.input, {"event": "submit"})
        await chat.task
        assert chat.input.files == []
        await chat.rerun()  # the same text and the same file, sent again

    asyncio.run(main())
    assert len(branch.messages) == 3  # the system message and one turn: the re-run's
    assert branch.messages[1].files[0]["file"]["filename"] == "report.pdf"
    assert "a PDF of 3 pages (report.pdf)" in branch.messages[2].response

    chat.operation = "interpret"  # takes no files: refused before the turn is removed
    with pytest.raises(ValueError, match="`interpret` takes no files and the last turn sent 1"):
        asyncio.run(chat.rerun())
    assert len(branch.messages) == 3

    assert chat.undo() == "Summarize it"
    assert len(branch.messages) == 1
    assert chat.input.value == "Summarize it"
    assert chat.input.attached == [{"name": "report.pdf", "label": "PDF · 3 pages · 3 KB"}]
    assert chat.input.files[0].files[0]["file"]["filename"] == "report.pdf"


def test_undo_gives_files_sent_from_python_a_chip(tmp_path):
    path = tmp_path / "plan.pdf"
    path.write_bytes(PDF_BYTES)
    branch = _branch()
    chat = Chat(branch)
    asyncio.run(chat.send("Read the plan", files=[path, _png(10, 20, 10)]))
    chat.undo()
    assert chat.input.attached == [
        {"name": "plan.pdf", "label": "PDF · 3 pages · 3 KB"},
        {"name": "file", "label": "an image of 10×20 pixels (PNG)"},
    ]
    assert chat.input.files == [path, _png(10, 20, 10)]
    asyncio.run(chat.send(chat.input.value, files=chat.input.take_files()))
    assert "a PDF of 3 pages (plan.pdf)" in branch.messages[2].response
