"""A cassette keeps each image or file once, on a line of its own, however many requests
of a conversation carry it (against the loopback server)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from lion_nb import Branch, iModel
from lion_nb.models.cassettes import ENV_MODE, CassetteError, cassette, use_cassette
from lion_nb.models.media import data_url
from tests.fakes.http_server import FakeProvider, openai_completion

PNG = data_url(
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + (64).to_bytes(4, "big") * 2 + b"\x01" * 9000
)


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


@pytest.fixture(autouse=True)
def _no_forced_mode(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(ENV_MODE, raising=False)
    yield
    use_cassette(None)


def _model(server: FakeProvider) -> iModel:
    return iModel(provider="openai", model="gpt-4o-mini", base_url=server.openai_url)


def _talk(m: iModel, *questions: str) -> list[str]:
    async def main() -> list[str]:
        branch = Branch(system="Be brief.", chat_model=m)
        return [await branch.communicate(q, images=[PNG]) for q in questions]

    return anyio.run(main)


def _lines(path: Any) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_an_image_in_every_request_is_written_once_and_replays(server, tmp_path):
    path = tmp_path / "c.jsonl"
    for text in ("one", "two", "three"):
        server.push_json(openai_completion(text, prompt_tokens=5, completion_tokens=1))
    with cassette(path):
        assert _talk(_model(server), "a?", "b?", "c?") == ["one", "two", "three"]
    sent = server.requests[-1].body["messages"]
    assert sum(1 for m in sent for p in m["content"] if isinstance(p, dict)
               and p.get("type") == "image_url") == 3  # fmt: skip
    found = _lines(path)
    assert [x["kind"] for x in found] == ["blob", "chat", "chat", "chat"]
    assert found[0]["data"] == PNG
    assert path.read_text().count(PNG[:200]) == 1
    with cassette(path, mode="none") as tape:
        assert _talk(_model(server), "a?", "b?", "c?") == ["one", "two", "three"]
    assert tape.replayed == 3 and len(server.requests) == 3


def test_a_different_image_is_a_miss_naming_the_image(server, tmp_path):
    path = tmp_path / "c.jsonl"
    server.push_json(openai_completion("one"))
    with cassette(path):
        _talk(_model(server), "a?")
    other = iModel(provider="openai", model="gpt-4o-mini", base_url=server.openai_url)

    async def main() -> None:
        branch = Branch(system="Be brief.", chat_model=other)
        await branch.communicate("a?", images=[PNG.replace("AQEB", "AgIC", 1)])

    with cassette(path, mode="none"), pytest.raises(CassetteError, match="image_url"):
        anyio.run(main)


def test_a_line_recorded_with_the_image_inline_still_matches(server, tmp_path):
    path = tmp_path / "c.jsonl"
    server.push_json(openai_completion("one"))
    with cassette(path):
        _talk(_model(server), "a?")
    blob, line = _lines(path)
    text = json.dumps(line).replace(f"lion-blob:sha256:{blob['hash']}", blob["data"])
    path.write_text(text + "\n")  # the form written before images were kept once
    with cassette(path, mode="none") as tape:
        assert _talk(_model(server), "a?") == ["one"]
    assert tape.replayed == 1


def test_re_recording_writes_the_blob_again_once(server, tmp_path):
    path = tmp_path / "c.jsonl"
    for text in ("old", "new", "newer"):
        server.push_json(openai_completion(text))
    with cassette(path):
        _talk(_model(server), "a?")
    with cassette(path, mode="all"):
        assert _talk(_model(server), "a?", "b?") == ["new", "newer"]
    assert [x["kind"] for x in _lines(path)] == ["blob", "chat", "chat"]


def test_a_blob_line_whose_hash_is_wrong_is_named(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"kind": "blob", "hash": "0" * 64, "data": PNG}) + "\n")
    with pytest.raises(CassetteError, match=r"line 1.*SHA-256"):
        cassette(path, mode="none").__enter__()
