"""A known key reaches no widget and no file: a provider (the loopback fake) that echoes the
key in its answer, and a password in ``base_url``.

Each output named below read the echoed key unmasked before keys were masked where text
enters a message: `BranchView` and `Chat` synced state and static HTML, the explorer's
export payloads, the provider batch record; and ``to_dict()``, the store, reprs and errors
held a ``base_url`` password.
"""

from __future__ import annotations

import asyncio
import base64
import json

import anyio
import pytest

from lion_nb import Branch, Session, iModel
from lion_nb.errors import ExecutionError, ProviderError
from lion_nb.models.secrets import MASK
from lion_nb.session.batch_records import records_dir
from lion_nb.store import SessionStore
from lion_nb.widgets import BranchView, Chat, SessionExplorer
from tests.fakes.batch_api import BatchEmulator
from tests.fakes.http_server import openai_completion

KEY = "sk-test-not-a-real-key-echoed-0123456789"
PASSWORD = "pw-test-not-a-real-password-4242"
ECHO = f"Your key is {KEY}; keep it safe."


def echoing_model(fake, **kw) -> iModel:
    return iModel(provider="openai", model="gpt-4o", base_url=fake.openai_url, api_key=KEY, **kw)


def echoed_branch(fake) -> Branch:
    """A branch whose last answer is the provider echoing the key it was sent."""
    branch = Branch(name="main", chat_model=echoing_model(fake, max_retries=0))
    fake.push_json(openai_completion(ECHO))
    anyio.run(branch.communicate, "What is my key?")
    assert KEY in fake.requests[-1].headers["authorization"]  # the key was really in play
    return branch


def openai_stream(text: str, size: int = 7) -> list[str]:
    """An OpenAI chat completion stream of ``text`` in deltas of ``size`` characters (a key
    in it arrives split over several)."""

    def event(delta: dict, finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice]}
        return "data: " + json.dumps(chunk)

    deltas = [event({"content": text[i : i + size]}) for i in range(0, len(text), size)]
    return [*deltas, event({}, "stop"), "data: [DONE]"]


def bundle(widget) -> str:
    data = widget._repr_mimebundle_()
    data = data[0] if isinstance(data, tuple) else data
    return data["text/html"] + data["text/plain"]


def test_branch_view_state_and_static_html_hold_no_echoed_key(http_fake):
    branch = echoed_branch(http_fake)
    view = BranchView(branch)
    state = json.dumps(view.get_state(), default=str)
    assert f"Your key is {MASK}" in state  # the answer is shown, its key masked
    assert KEY not in state
    assert f"Your key is {MASK}" in bundle(view) and KEY not in bundle(view)
    # text still streaming is not a message yet: masked as it is drawn, even when split
    view.stream(f"Again: {KEY[:12]}")
    view.stream(KEY[12:])
    view.refresh()
    assert MASK in view.stream_html and KEY not in view.stream_html


def test_chat_state_and_static_html_hold_no_echoed_key(http_fake):
    chat = Chat(Branch(name="main", chat_model=echoing_model(http_fake, max_retries=0)))
    http_fake.push_sse(openai_stream(ECHO))  # the chat streams its answers
    http_fake.push_sse(openai_stream(ECHO))

    async def main():
        recorded = await chat.send("What is my key?")
        unrecorded = await chat.send("And again?", operation="chat")
        return recorded, unrecorded

    recorded, unrecorded = asyncio.run(main())
    assert str(recorded) == f"Your key is {MASK}; keep it safe."
    assert KEY not in str(unrecorded)
    shown = json.dumps([chat.view.get_state(), chat.note.get_state(), bundle(chat)], default=str)
    assert shown.count(f"Your key is {MASK}") >= 3  # the view, its static HTML, the note
    assert KEY not in shown


def test_the_explorer_exports_hold_no_echoed_key(http_fake, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    session = Session()
    session.include_branches(echoed_branch(http_fake))
    explorer = SessionExplorer(session)
    explorer.select(session.get_branch("main"))
    sent: list = []
    explorer.tree.send = lambda content, buffers=None: sent.append((content, buffers))
    for fmt in ("json", "markdown"):
        explorer._on_front_end(explorer.tree, {"type": "export", "fmt": fmt}, [])
    assert [content["filename"] for content, _ in sent] == ["main.json", "main.md"]
    for _content, buffers in sent:
        payload = buffers[0].decode("utf-8")
        assert f"Your key is {MASK}" in payload and KEY not in payload
    for name in ("main.json", "main.md"):
        assert KEY not in (tmp_path / name).read_text(encoding="utf-8")


def test_the_provider_batch_record_holds_no_key_and_no_url_password(http_fake):
    BatchEmulator(http_fake)
    session = Session()
    source = session.default_branch  # the batch's source: a branch where a key was echoed
    source.chat_model = echoing_model(http_fake, max_retries=0)
    http_fake.push_json(openai_completion(ECHO))
    anyio.run(source.communicate, "What is my key?")
    url = http_fake.openai_url.replace("http://", f"http://proxy:{PASSWORD}@")
    source.chat_model = iModel(provider="openai", model="m", base_url=url, api_key=KEY)

    async def main():
        run = session.map(["red"], "Colour: {item}", via="batch", poll_interval=0.01)
        await run.wait()
        return run

    run = anyio.run(main)
    assert run.state == "finished"
    text = (records_dir() / f"{run.batch_id}.json").read_text(encoding="utf-8")
    assert f"Your key is {MASK}" in text  # the source branch's projection is in the record
    assert KEY not in text and PASSWORD not in text


def test_a_url_password_is_masked_everywhere_and_still_authenticates(http_fake, tmp_path):
    url = http_fake.openai_url.replace("http://", f"http://proxy:{PASSWORD}@")
    model = iModel(provider="openai", model="gpt-4o", base_url=url, max_retries=0)
    assert model.endpoint.base_url == url.replace(PASSWORD, MASK)
    session = Session()
    session.default_branch.chat_model = model
    http_fake.push_json(openai_completion("Hello."))
    anyio.run(session.default_branch.communicate, "Hi")
    sent = http_fake.requests[-1].headers["authorization"]
    assert sent == "Basic " + base64.b64encode(f"proxy:{PASSWORD}".encode()).decode()
    copy = model.copy()  # an in-process copy keeps the password (as a secret)
    http_fake.push_json(openai_completion("Hello."))
    anyio.run(Branch(chat_model=copy).communicate, "Hi")
    assert http_fake.requests[-1].headers["authorization"] == sent

    store = SessionStore(tmp_path / "sessions.db")
    try:
        store.save(session)
        store.flush()
    finally:
        store.close()
    written = (tmp_path / "sessions.db").read_bytes()
    texts = [
        json.dumps(model.to_dict(include_request_options=True, include_processor_config=True)),
        json.dumps(session.to_dict(), default=str),
        repr(model),
        repr(model.endpoint),
    ]
    for text in texts:
        assert PASSWORD not in text
    assert f"proxy:{MASK}@" in texts[0]
    assert PASSWORD.encode() not in written and b"proxy:****@" in written


def test_an_error_naming_the_url_holds_no_password():
    model = iModel(
        provider="openai",
        model="m",
        base_url=f"http://proxy:{PASSWORD}@127.0.0.1:9/v1",  # nothing listens on port 9
        max_retries=0,
        connect_timeout=2,
    )
    with pytest.raises(ExecutionError) as caught:
        anyio.run(Branch(chat_model=model).communicate, "Hi")
    cause = caught.value.__cause__
    assert isinstance(cause, ProviderError) and "127.0.0.1:9" in str(cause)
    for text in (str(caught.value), repr(caught.value), str(cause), repr(cause)):
        assert PASSWORD not in text
