"""A lone surrogate (``"\\ud800"``) is replaced with U+FFFD where text enters, so nothing
downstream breaks for good.

Before, one from a provider's JSON escape or typed into an instruction or a tool result made
every later turn on the branch fail (``'utf-8' codec can't encode``), turned autosave off with
a "folder writable" warning, stopped `BranchView` drawing and made `export_branch` raise.
"""

from __future__ import annotations

import json
import warnings

import anyio

from lion_nb import ActionResponse, Branch, Session, iModel
from lion_nb.models.stream import StreamChunk
from lion_nb.store.export import export_branch
from lion_nb.widgets import BranchView
from tests.fakes.http_server import openai_completion
from tests.store.helpers import RecordingStore

LONE = "\ud800"
FIXED = "\ufffd"


def http_model(fake) -> iModel:
    return iModel(provider="openai", model="gpt-4o", base_url=fake.openai_url, max_retries=0)


def broken_branch(fake) -> Branch:
    """A branch whose provider answered with a lone surrogate as a JSON escape."""
    branch = Branch(name="main", chat_model=http_model(fake))
    fake.push_json(openai_completion(f"half a pair: {LONE}."))  # sent as ``\\ud800``
    anyio.run(branch.communicate, "Say something odd")
    return branch


def encodable(value) -> bool:
    json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
    return True


def test_later_turns_work_after_a_provider_sent_a_lone_surrogate(http_fake):
    branch = broken_branch(http_fake)
    http_fake.push_json(openai_completion("Fine."))
    assert anyio.run(branch.communicate, "And now?") == "Fine."  # raised before
    sent = http_fake.requests[-1].body["messages"]
    assert f"half a pair: {FIXED}." in [m["content"] for m in sent]
    assert encodable(branch.to_dict(mode="json"))
    assert all(encodable(log.content) for log in branch.logs)  # the raw answer too


def test_a_streamed_lone_surrogate_is_replaced(http_fake):
    from lion_nb.models.endpoints.base import streaming_to
    from tests.hardening.test_echoed_keys import openai_stream

    branch = Branch(chat_model=http_model(http_fake))
    # the escape as the provider writes it (json.dumps writes a lone surrogate that way)
    http_fake.push_sse(openai_stream(f"streamed {LONE} text", size=4))
    fragments: list[str] = []

    async def main():
        with streaming_to(fragments.append):
            return await branch.communicate("Stream it")

    assert anyio.run(main) == f"streamed {FIXED} text"
    assert "".join(fragments) == f"streamed {FIXED} text"


def test_typed_text_and_tool_results_are_made_whole():
    branch = Branch(chat_model=iModel(provider="offline", model="auto"))
    assert "hello" in anyio.run(branch.communicate, f"hello {LONE}")
    assert branch.messages[0].instruction == f"hello {FIXED}"
    result = ActionResponse(function="f", output={f"k{LONE}": [f"v{LONE}", b"\xff"]})
    assert result.output == {f"k{FIXED}": [f"v{FIXED}", result.output[f"k{FIXED}"][1]]}
    branch.msgs.add_message(action_response=result)
    branch.messages[0].guidance = f"assigned {LONE}"  # an edit in place
    assert branch.messages[0].guidance == f"assigned {FIXED}"
    chunk = StreamChunk(type="tool_result", content=LONE, tool_output={"x": LONE})
    assert (chunk.content, chunk.tool_output) == (FIXED, {"x": FIXED})
    assert encodable(branch.to_dict(mode="json"))


def test_autosave_stays_on(http_fake, tmp_path):
    store = RecordingStore(tmp_path / "sessions.db")
    try:
        session = Session()
        branch = session.default_branch
        branch.chat_model = http_model(http_fake)
        saver = store.autosave(session)
        http_fake.push_json(openai_completion(f"half a pair: {LONE}."))
        http_fake.push_json(openai_completion("Fine."))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            anyio.run(branch.communicate, "Say something odd")
            anyio.run(branch._drain_signals)
            saver.checkpoint()
            store.flush()
        said = [str(w.message) for w in caught if not issubclass(w.category, ResourceWarning)]
        assert said == []  # was: autosave off, "folder writable"
        anyio.run(branch.communicate, "And now?")
        anyio.run(branch._drain_signals)
        saver.checkpoint()
        store.flush()
        loaded = store.load(str(session.id)).default_branch
        assert [m.rendered for m in loaded.messages][-3:] == [
            f"half a pair: {FIXED}.",
            "And now?",
            "Fine.",
        ]
    finally:
        store.close()


def test_branch_view_draws_and_export_branch_writes(http_fake, tmp_path):
    branch = broken_branch(http_fake)
    view = BranchView(branch)
    assert [e["role"] for e in view.entries] == ["user", "assistant"]  # none drawn before
    assert f"half a pair: {FIXED}." in view.entries[-1]["html"]
    view.stream(f"live {LONE}")
    view.refresh()
    assert FIXED in view.stream_html
    for name in ("branch.json", "branch.md"):  # raised before
        text = export_branch(branch, tmp_path / name).read_text(encoding="utf-8")
        assert f"half a pair: {FIXED}." in text
