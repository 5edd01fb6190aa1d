"""No secret in any cassette: recording with keys in play writes none, and every ``.jsonl``
file in the repository is free of key patterns and of every key value the tests use.

Issue acceptance -> tests:
- no secret appears in a cassette recorded with a key in the environment and in `api_key=`
  -> test_recording_with_keys_in_play_writes_no_secret
- a scan of every cassette in the repository -> test_no_cassette_in_the_repository_holds_a_secret
- an MCP server's headers and secret environment values are not written, even when the
  server echoes them -> test_recording_mcp_servers_writes_no_header_or_env_secret
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest

from lion_nb import Branch, iModel
from lion_nb.models.cassettes import cassette
from lion_nb.models.endpoints.base import streaming_to
from tests.fakes.http_server import FakeProvider
from tests.fakes.mcp_fixtures import TOKEN as MCP_TOKEN
from tests.fakes.mcp_fixtures import mcp_http, server_command  # noqa: F401 - a fixture

ROOT = Path(__file__).resolve().parents[3]
ENV_KEY = "sk-test-not-a-real-key-from-the-environment"
ARG_KEY = "sk-ant-test-not-a-real-key-given-as-an-argument"
HEADER_SECRET = "tok-test-not-a-real-header-token"
MCP_ENV_SECRET = "env-test-not-a-real-mcp-server-token"
PATTERNS = re.compile(r"sk-[A-Za-z0-9]|sk-ant-|Bearer\s|x-api-key", re.IGNORECASE)


def _test_key_values() -> set[str]:
    """Every key-like literal in the test sources (``"sk-..."``), these tests' own included."""
    found: set[str] = set()
    for source in (ROOT / "tests").rglob("*.py"):
        text = source.read_text(encoding="utf-8", errors="replace")
        found.update(re.findall(r"[\"'](sk-[A-Za-z0-9_-]{6,})[\"']", text))
    return found | {HEADER_SECRET, MCP_TOKEN, MCP_ENV_SECRET}


def _cassettes() -> list[Path]:
    skip = {".git", ".venv", ".venv-ci", "node_modules", ".lion_nb"}
    return [p for p in ROOT.rglob("*.jsonl") if not skip & set(p.relative_to(ROOT).parts)]


def test_recording_with_keys_in_play_writes_no_secret(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    path = tmp_path / "keys.jsonl"
    with FakeProvider() as server:
        server.push_json(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": "gpt-4o-mini",
                # a provider echoing the key back (a misbehaving proxy, an error text)
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": f"Your key is {ENV_KEY}."},
                        "finish_reason": "stop",
                    }
                ],
            }
        )
        server.push_fixture("anthropic_stream_tool.sse")
        openai = iModel(provider="openai", model="gpt-4o-mini", base_url=server.openai_url)
        anthropic = iModel(
            provider="anthropic",
            model="claude-sonnet-4-5",
            base_url=server.anthropic_url,
            api_key=ARG_KEY,
            headers={"X-Team-Token": HEADER_SECRET},
        )

        async def main() -> None:
            await Branch(chat_model=openai).communicate(f"Is {ARG_KEY} a valid key?")
            with streaming_to(lambda _: None):
                await Branch(chat_model=anthropic).communicate("Weather?")

        with cassette(path):
            anyio.run(main)
        sent = server.requests
    # the keys were really in play: the server received each one
    assert sent[0].headers["authorization"] == f"Bearer {ENV_KEY}"
    assert sent[1].headers["x-api-key"] == ARG_KEY
    assert sent[1].headers["x-team-token"] == HEADER_SECRET
    text = path.read_text()
    assert len(text.splitlines()) == 2
    for secret in (ENV_KEY, ARG_KEY, HEADER_SECRET):
        assert secret not in text
    assert not PATTERNS.search(text), PATTERNS.search(text)
    first = json.loads(text.splitlines()[0])
    assert first["request"]["messages"][0]["content"] == "Is **** a valid key?"
    assert first["response"]["text"] == "Your key is ****."


@pytest.mark.timeout(180)
def test_recording_mcp_servers_writes_no_header_or_env_secret(mcp_http, tmp_path):  # noqa: F811
    url, _log = mcp_http
    path = tmp_path / "mcp.jsonl"

    async def main() -> list:
        branch = Branch()
        await branch.connect_mcp("web", url=url, headers={"Authorization": f"Bearer {MCP_TOKEN}"})
        await branch.connect_mcp(
            "local", command=server_command(), env={"NOTES_API_TOKEN": MCP_ENV_SECRET}
        )
        try:  # each server echoes its secret back in a result
            return [
                await branch.act({"function": "leak", "arguments": {"header": "authorization"}}),
                await branch.act(
                    {"function": "local_leak", "arguments": {"env": "NOTES_API_TOKEN"}}
                ),
            ]
        finally:
            await branch.aclose()

    with cassette(path):
        answers = anyio.run(main)
    # the secrets were in play: the HTTP server refuses a request without its token, and
    # each server answered with its secret
    assert [a[0].is_error for a in answers] == [False, False]
    calls = [json.loads(x) for x in path.read_text().splitlines()]
    echoed = [c["result"]["content"][0]["text"] for c in calls if c["request"].get("tool")]
    # (what is masked is exactly the secret: an unset variable would read "env (unset)")
    assert echoed == ["header ****", "env ****"]
    text = path.read_text()
    assert len(text.splitlines()) == 4  # two tool lists, two calls
    for secret in (MCP_TOKEN, MCP_ENV_SECRET):
        assert secret not in text
    assert not PATTERNS.search(text), PATTERNS.search(text)


def test_no_cassette_in_the_repository_holds_a_secret():
    files = _cassettes()
    assert any(p.parent.name == "cassettes" for p in files), "the tutorial cassettes are missing"
    values = _test_key_values()
    assert ENV_KEY in values and ARG_KEY in values and MCP_TOKEN in values
    for path in files:
        text = path.read_text(encoding="utf-8")
        match = PATTERNS.search(text)
        assert match is None, f"{path.relative_to(ROOT)}: {match.group(0)!r}"
        leaked = [v for v in values if v in text]
        assert not leaked, f"{path.relative_to(ROOT)} holds a test key"


@pytest.mark.parametrize("pattern", ["sk-proj-example", "Bearer example", "sk-ant-example"])
def test_the_scan_would_catch_a_leak(pattern: str):
    """The control: the patterns do match what a leaked key looks like."""
    assert PATTERNS.search(f'{{"text": "{pattern}"}}')
