"""Provider batches (``map(..., via="batch")``) through cassettes, against the emulated OpenAI
Batch API and Anthropic Message Batches (`tests.fakes.batch_api` on a `FakeProvider`).

A batch is recorded as one exchange (every item's request; the final status and the result
lines), then replayed with the server stopped: submitted, ended and collected with no
network, each item's branch recorded exactly as in the recorded run.

Cases -> tests:
- record a batch, stop the server, replay; item branches equal except ids and timestamps
  (a failed item included) -> test_a_recorded_batch_replays_with_the_server_stopped
- `none` with a changed prompt names the field, and nothing is sent
  -> test_none_with_a_changed_prompt_names_the_item_field_and_sends_nothing
- `none` never reaches the network for a batch -> test_env_none_refuses_a_batch_*,
  test_a_replay_only_cassette_refuses_to_poll_a_batch_it_does_not_hold
- a batch resumed by id replays too -> test_a_batch_resumed_by_id_is_replayed_by_its_id
- no secret in a batch cassette -> test_a_batch_cassette_passes_the_secret_scan
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from lion_nb import Session, iModel
from lion_nb.models.cassettes import ENV_MODE, CassetteError, cassette, use_cassette
from tests.fakes.batch_api import BatchEmulator
from tests.fakes.http_server import FakeProvider
from tests.models.cassette_support import snapshot
from tests.models.cassettes.test_cassette_secrets import ARG_KEY, ENV_KEY, HEADER_SECRET, PATTERNS

PROVIDERS = ("openai", "anthropic")
ITEMS = ["red", "green", "blue"]


@pytest.fixture(autouse=True)
def _no_forced_mode(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(ENV_MODE, raising=False)
    yield
    use_cassette(None)


def model(url: str, provider: str, **kw: Any) -> iModel:
    return iModel(provider=provider, model="m", base_url=url, max_retries=0, **kw)


def url_of(fake: FakeProvider, provider: str) -> str:
    return fake.openai_url if provider == "openai" else fake.anthropic_url


def mapped(chat_model: iModel, items: list[str], fails: Any = None) -> tuple[Session, Any]:
    """A fresh session that maps ``items`` through the provider's batch service; waiting
    for the run raises ``fails`` (an exception class) when given."""
    session = Session()
    session.default_branch.chat_model = chat_model
    session.default_branch.msgs.add_message(system="Name a fruit of this colour.")

    async def main() -> Any:
        run = session.map(items, "Colour: {item}", via="batch", poll_interval=0.01)
        if fails is None:
            await run.wait()
        else:
            with pytest.raises(fails):
                await run.wait()
        return run

    return session, anyio.run(main)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def outcome(run: Any) -> list[tuple[str, Any, str | None]]:
    return [(r.status, r.value, r.error_text) for r in run.items]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_recorded_batch_replays_with_the_server_stopped(provider, tmp_path):
    path = tmp_path / "batch.jsonl"
    with FakeProvider() as server:
        emulator = BatchEmulator(server, fail=lambda cid, _body: cid == "item-2")
        url = url_of(server, provider)
        with cassette(path) as tape:
            _, recorded = mapped(model(url, provider), ITEMS)
        assert tape.recorded == 1 and len(emulator.batches) == 1
    # the server is gone: a replay that reached for it would fail to connect
    assert [x["kind"] for x in lines(path)] == ["batch"]  # no capture, no per-item call
    assert recorded.state == "finished"
    assert [r.status for r in recorded.items] == ["done", "done", "failed"]

    with cassette(path, mode="none") as tape:
        _, replayed = mapped(model(url, provider), ITEMS)
    assert (tape.replayed, tape.recorded) == (1, 0)
    assert replayed.state == "finished" and replayed.batch_id == recorded.batch_id
    assert outcome(replayed) == outcome(recorded)
    assert replayed.results == ["answer: Colour: red", "answer: Colour: green", None]
    assert [b.name for b in replayed.branches] == [b.name for b in recorded.branches]
    for mine, theirs in zip(replayed.branches, recorded.branches, strict=True):
        assert snapshot(mine) == snapshot(theirs)
    assert replayed.progress().tokens == recorded.progress().tokens > 0


@pytest.mark.parametrize("provider", PROVIDERS)
def test_none_with_a_changed_prompt_names_the_item_field_and_sends_nothing(provider, tmp_path):
    path = tmp_path / "batch.jsonl"
    with FakeProvider() as server:
        BatchEmulator(server)
        url = url_of(server, provider)
        with cassette(path):
            mapped(model(url, provider), ITEMS)
        sent = len(server.requests)
        with cassette(path, mode="none"):
            _, run = mapped(model(url, provider), ["red", "green", "violet"], CassetteError)
        assert len(server.requests) == sent
    assert run.state == "failed" and run.batch_id is None
    assert isinstance(run.error, CassetteError)
    message = str(run.error)
    assert "items[2].messages[1].content" in message
    assert 'recorded "Colour: blue", now "Colour: violet"' in message
    assert "(line 1)" in message and "mode `none`" in message and "--mode new" in message
    assert [r.status for r in run.items] == ["failed"] * 3


def test_new_mode_replays_a_recorded_batch_and_records_a_changed_one(tmp_path):
    path = tmp_path / "batch.jsonl"
    with FakeProvider() as server:
        emulator = BatchEmulator(server)
        with cassette(path):
            mapped(model(server.openai_url, "openai"), ITEMS)
        with cassette(path, mode="new") as tape:
            _, same = mapped(model(server.openai_url, "openai"), ITEMS)
            _, other = mapped(model(server.openai_url, "openai"), ["black"])
        assert (tape.replayed, tape.recorded, len(emulator.batches)) == (1, 1, 2)
    assert same.results == [f"answer: Colour: {c}" for c in ITEMS]
    assert other.results == ["answer: Colour: black"]
    assert [len(x["request"]["items"]) for x in lines(path)] == [3, 1]


def test_env_none_refuses_a_batch_with_no_cassette_before_sending(monkeypatch):
    with FakeProvider() as server:
        BatchEmulator(server)
        url = server.openai_url
        session, earlier = mapped(model(url, "openai"), ["white"])  # live, saved for resuming
        sent = len(server.requests)
        monkeypatch.setenv(ENV_MODE, "none")
        with pytest.raises(CassetteError, match="forbids live model calls") as info:
            session.map(ITEMS, "Colour: {item}", via="batch")
        with pytest.raises(CassetteError, match="forbids live model calls"):
            Session().resume_batch(earlier.batch_id, model=model(url, "openai"))
        assert len(server.requests) == sent
    assert "openai/m" in str(info.value)


def test_a_replay_only_cassette_refuses_to_poll_a_batch_it_does_not_hold(tmp_path):
    path = tmp_path / "batch.jsonl"
    with FakeProvider() as server:
        BatchEmulator(server)
        url = server.openai_url
        _, live = mapped(model(url, "openai"), ["white"])  # submitted with no cassette
        with cassette(path):
            mapped(model(url, "openai"), ITEMS)
        sent = len(server.requests)
        fresh = Session()
        with cassette(path, mode="none"), pytest.raises(CassetteError):
            run = fresh.resume_batch(live.batch_id, model=model(url, "openai"))
            anyio.run(run.wait)
        assert len(server.requests) == sent
    assert run.state == "failed" and isinstance(run.error, CassetteError)
    assert f"holds no recording of batch `{live.batch_id}`" in str(run.error)


def test_a_batch_resumed_by_id_is_replayed_by_its_id(tmp_path):
    path = tmp_path / "batch.jsonl"
    with FakeProvider() as server:
        BatchEmulator(server)
        url = server.openai_url
        with cassette(path):
            _, recorded = mapped(model(url, "openai"), ITEMS)
    fresh = Session()  # a new kernel: the branches are rebuilt from the saved record
    with cassette(path, mode="none") as tape:
        run = fresh.resume_batch(recorded.batch_id, model=model(url, "openai"))
        results = anyio.run(run.wait)
    assert tape.replayed == 1 and run.state == "finished"
    assert results == recorded.results
    for mine, theirs in zip(run.branches, recorded.branches, strict=True):
        assert str(mine.id) == str(theirs.id)
        assert [m.rendered for m in mine.messages] == [m.rendered for m in theirs.messages]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_batch_cassette_passes_the_secret_scan(provider, monkeypatch, tmp_path):
    """Keys in the environment, in ``api_key=`` and in a header, a prompt quoting a key and
    answers echoing keys back: the batch's line holds none of them."""
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ENV_KEY)
    path = tmp_path / "keys.jsonl"
    with FakeProvider() as server:
        # a provider echoing the keys back (a misbehaving proxy, an error text)
        echoed: list[str] = []

        def echo(text: str) -> str:
            echoed.append(f"{text} Keys: {ENV_KEY}, {ARG_KEY}.")
            return echoed[-1]

        BatchEmulator(server, answer=echo)
        chat_model = iModel(
            provider=provider,
            model="m",
            base_url=url_of(server, provider),
            api_key=ARG_KEY,
            headers={"X-Team-Token": HEADER_SECRET},
        )
        with cassette(path):
            _, run = mapped(chat_model, [f"{ARG_KEY} or {ENV_KEY}?"])
        sent = server.requests
    # the keys were really in play: the provider got them, and the answer quotes them
    assert all(ARG_KEY in json.dumps(dict(r.headers)) for r in sent)
    assert all(r.headers["x-team-token"] == HEADER_SECRET for r in sent)
    assert ARG_KEY in echoed[0] and ENV_KEY in echoed[0]
    # the prompt was redacted, and so is the answer as it enters the branch
    assert run.results[0] == "Colour: **** or ****? Keys: ****, ****."
    text = path.read_text()
    assert len(text.splitlines()) == 1 and json.loads(text)["kind"] == "batch"
    for secret in (ENV_KEY, ARG_KEY, HEADER_SECRET):
        assert secret not in text
    assert not PATTERNS.search(text), PATTERNS.search(text)
    item = json.loads(text)["request"]["items"][0]
    assert item["messages"][-1]["content"] == "Colour: **** or ****?"
