"""What no CLI may do: leak its own credentials, or break a run with an unexpected event shape.

Each test runs the real fake executables (``tests/fakes/bin``) as real subprocesses.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import anyio
import pytest

from lion_nb.errors import CLIError
from lion_nb.models.endpoints._subprocess import ChunkTranslator
from lion_nb.models.endpoints.claude_code import ClaudeCodeEndpoint
from lion_nb.models.imodel import iModel
from lion_nb.models.stream import StreamChunk
from lion_nb.session.branch import Branch

CODEX_KEY = "codex-live-key-9f8e7d6c5b4a"
OAUTH = "fake-oauth-token-0123456789abcdef"


# -- credentials a CLI prints on stderr ------------------------------------------------------------
def test_credentials_a_cli_prints_on_stderr_never_reach_the_error_or_the_logs(
    fake_cli, monkeypatch
):
    monkeypatch.setenv("CODEX_API_KEY", CODEX_KEY)
    monkeypatch.setenv("CLAUDE_CODE_OAUTH_TOKEN", OAUTH)
    fake_cli.replay([{"type": "thread.started", "thread_id": "t-1"}])
    fake_cli.set(exit=3, stderr=f"401 Unauthorized: key {CODEX_KEY}, fallback token {OAUTH}")
    branch = Branch(chat_model=iModel(provider="codex"))

    async def main() -> None:
        async for _message in branch.run("hi"):
            pass

    with pytest.raises(CLIError) as info:
        anyio.run(main)
    error = info.value
    assert error.exit_code == 3
    assert "401 Unauthorized" in error.stderr and "401 Unauthorized" in str(error)
    texts = [
        str(error),
        repr(error),
        error.stderr,
        json.dumps(branch.to_dict(include_logs=True), default=str),
    ]
    assert "401 Unauthorized" in texts[-1]  # the failure was logged ...
    for text in texts:  # ... without either credential
        assert CODEX_KEY not in text
        assert OAUTH not in text


# -- unexpected event shapes -----------------------------------------------------------------------
def test_claude_events_of_unexpected_shapes_do_not_break_the_run(fake_cli, collect, briefs):
    fake_cli.replay(
        [
            {"type": "stream_event", "event": "x"},
            {"type": "assistant", "message": {"content": "plain text"}},
            {"type": "assistant", "message": {"content": ["x", {"type": "text", "text": "ok"}]}},
            {"type": "assistant", "message": "not a message"},
            {"type": "user", "message": {"content": [{"type": "tool_result", "content": None}]}},
            {"type": "result", "usage": "n/a", "subtype": "success"},
        ]
    )
    chunks = collect(iModel(provider="claude_code"), "x")
    assert briefs(chunks) == [
        {"type": "text", "content": "plain text"},
        {"type": "text", "content": "ok"},
        {"type": "tool_result"},
        {"type": "result"},
    ]
    assert chunks[-1].metadata["usage"]["total_tokens"] == 0


def test_codex_events_of_unexpected_shapes_do_not_break_the_run(fake_cli, collect, briefs):
    fake_cli.replay(
        [
            {"type": "item.completed", "item": "x"},
            {
                "type": "item.completed",
                "item": {"type": "mcp_tool_call", "id": "1", "result": "str"},
            },
            {"type": "turn.completed", "usage": {"input_tokens": "x", "output_tokens": 7}},
        ]
    )
    chunks = collect(iModel(provider="codex"), "x")
    assert briefs(chunks) == [
        {"type": "tool_use", "tool_id": "1", "tool_name": "mcp_tool_call", "tool_input": {}},
        {"type": "tool_result", "tool_id": "1", "tool_output": "str"},
        {"type": "result"},
    ]
    usage = chunks[-1].metadata["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (0, 7)


def test_gemini_events_of_unexpected_shapes_do_not_break_the_run(fake_cli, collect, briefs):
    fake_cli.replay(
        [
            {"type": "init", "session_id": 42},
            {"type": "tool_result", "tool_id": 7, "error": "boom", "status": "error"},
            {"type": "message", "role": "assistant", "content": {"text": "?"}},
            {"type": "result", "status": "success", "stats": {"input_tokens": None}},
        ]
    )
    chunks = collect(iModel(provider="gemini_cli"), "x")
    assert briefs(chunks) == [
        {"type": "system"},
        {"type": "tool_result", "tool_output": "boom", "is_error": True},
        {"type": "result"},
    ]


class _Fragile(ChunkTranslator):
    """A translator that cannot read ``assistant`` events, like one facing a new format."""

    def feed(self, event: dict[str, Any]) -> list[StreamChunk]:
        if event.get("type") == "assistant":
            return [StreamChunk(type="text", content=event["message"]["no_such_field"])]
        return []


class _FragileClaude(ClaudeCodeEndpoint):
    provider: ClassVar[str] = "claude_code"

    def new_translator(self) -> ChunkTranslator:
        return _Fragile()


def test_a_translator_failure_is_a_cli_error_naming_the_cli_and_event(fake_cli, collect, alive):
    fake_cli.set(delay=0.3)  # the CLI is still running when the event cannot be read
    model = iModel(endpoint=_FragileClaude("sonnet"))
    with pytest.raises(CLIError) as info:
        collect(model, "x")
    text = str(info.value)
    assert "`claude`" in text and "`assistant` event" in text
    assert "KeyError" in text and "no_such_field" in text
    assert isinstance(info.value.__cause__, KeyError)
    assert info.value.provider == "claude_code"
    assert not alive(fake_cli.records()[0]["pid"])
