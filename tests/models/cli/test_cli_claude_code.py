"""`claude_code`: transcripts to chunks, flags, sessions, error endings (against a fake `claude`)."""

from __future__ import annotations

import pytest

from lion_nb.errors import ConfigurationError
from lion_nb.models.endpoints import CLIRequest, streaming_to
from lion_nb.models.imodel import iModel

SESSION = "7f3c2a9e-1b4d-4e8a-9c6f-2d5e8a1b3c4d"


def test_tool_run_maps_to_the_exact_chunk_sequence(fake_cli, collect, briefs):
    model = iModel(provider="claude_code", model="sonnet")
    chunks = collect(model, "How many .py files?")
    assert briefs(chunks) == [
        {"type": "system"},
        {"type": "thinking", "content": "Count the .py files with a shell command."},
        {"type": "text", "content": "I'll count the Python files."},
        {
            "type": "tool_use",
            "tool_id": "toolu_01VdNvyRGtzZvniXJGQQjvEP",
            "tool_name": "Bash",
            "tool_input": {"command": "ls *.py | wc -l", "description": "Count Python files"},
        },
        {"type": "tool_result", "tool_id": "toolu_01VdNvyRGtzZvniXJGQQjvEP", "tool_output": "3"},
        {"type": "text", "content": "There are 3 Python files in the project root."},
        {"type": "result"},
    ]
    assert chunks[0].metadata["session_id"] == SESSION
    assert chunks[0].metadata["model"] == "claude-sonnet-4-5-20250929"
    result = chunks[-1].metadata
    assert result["session_id"] == SESSION
    assert result["cost_usd"] == 0.0213
    assert result["num_turns"] == 2 and result["duration_ms"] == 6431
    usage = result["usage"]
    assert usage["input_tokens"] == 9 + 3300 + 32563
    assert usage["output_tokens"] == 88
    assert usage["total_tokens"] == 9 + 3300 + 32563 + 88
    assert usage["cached_input_tokens"] == 32563
    assert usage["raw"]["cache_creation_input_tokens"] == 3300
    assert model.provider_session_id == SESSION


def test_default_flags_are_the_safe_minimum(fake_cli, collect):
    collect(iModel(provider="claude_code", model="default"), "hi")
    (run,) = fake_cli.records()
    assert run["argv"] == ["-p", "--output-format", "stream-json", "--verbose", "hi"]
    assert run["pid"] == run["pgid"], "the CLI must lead its own process group"


def test_resume_is_passed_on_the_second_call(fake_cli, collect):
    model = iModel(provider="claude_code", model="sonnet")
    collect(model, "first")
    collect(model, CLIRequest(prompt="second", resume=model.provider_session_id))
    first, second = fake_cli.records()
    assert "--resume" not in first["argv"]
    index = second["argv"].index("--resume")
    assert second["argv"][index + 1] == SESSION
    assert second["argv"][-1] == "second"


def test_permission_flags_only_when_asked(fake_cli, collect):
    collect(iModel(provider="claude_code", model="sonnet"), "a")
    collect(iModel(provider="claude_code", model="sonnet", permission_mode="acceptEdits"), "b")
    collect(iModel(provider="claude_code", model="sonnet", bypass_permissions=True), "c")
    plain, mode, bypass = (r["argv"] for r in fake_cli.records())
    assert not any("permission" in a for a in plain)
    assert mode[mode.index("--permission-mode") + 1] == "acceptEdits"
    assert "--dangerously-skip-permissions" not in mode
    assert "--dangerously-skip-permissions" in bypass
    assert "--permission-mode" not in bypass


def test_model_system_turns_and_a_dash_prompt(fake_cli, collect, tmp_path):
    model = iModel(provider="claude_code", model="opus", max_turns=3, cwd=str(tmp_path))
    collect(model, CLIRequest(prompt="-rf is a flag?", system="Be brief."))
    (run,) = fake_cli.records()
    argv = run["argv"]
    assert argv[argv.index("--model") + 1] == "opus"
    assert argv[argv.index("--append-system-prompt") + 1] == "Be brief."
    assert argv[argv.index("--max-turns") + 1] == "3"
    assert argv[-2:] == ["--", "-rf is a flag?"]
    assert run["cwd"] == str(tmp_path)


def test_partial_messages_are_deltas_without_the_duplicate_snapshot(fake_cli, collect, briefs):
    fake_cli.replay("claude_partial.jsonl")
    model = iModel(provider="claude_code", model="sonnet", include_partial=True)
    chunks = collect(model, "ping")
    assert briefs(chunks) == [
        {"type": "text", "content": "po", "is_delta": True},
        {"type": "text", "content": "ng", "is_delta": True},
    ]
    assert "--include-partial-messages" in fake_cli.records()[0]["argv"]


def test_partial_snapshot_keeps_tool_calls_and_unstreamed_messages(fake_cli, collect, briefs):
    meta = {"session_id": "s", "parent_tool_use_id": None}
    fake_cli.replay(
        [
            {
                "type": "stream_event",
                "event": {"type": "message_start", "message": {"id": "m1"}},
                **meta,
            },
            {
                "type": "stream_event",
                "event": {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": "hm"},
                },
                **meta,
            },
            {
                "type": "assistant",
                "message": {"id": "m1", "content": [{"type": "thinking", "thinking": "hm"}]},
                **meta,
            },
            {
                "type": "assistant",
                "message": {
                    "id": "m1",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "t1",
                            "name": "Read",
                            "input": {"file_path": "a"},
                        }
                    ],
                },
                **meta,
            },
            {
                "type": "assistant",
                "message": {"id": "m2", "content": [{"type": "text", "text": "whole"}]},
                **meta,
            },
        ]
    )
    chunks = collect(iModel(provider="claude_code", model="", include_partial=True), "x")
    assert briefs(chunks) == [
        {"type": "thinking", "content": "hm", "is_delta": True},
        {
            "type": "tool_use",
            "tool_id": "t1",
            "tool_name": "Read",
            "tool_input": {"file_path": "a"},
        },
        {"type": "text", "content": "whole"},
    ]


def test_api_error_reported_as_success_becomes_an_error_chunk(fake_cli, collect):
    lines = (fake_cli.replay("claude_errors.jsonl")).read_text().splitlines()
    fake_cli.replay([lines[0]])
    fake_cli.set(exit=1)  # the real CLI exits 1 after this ending
    (chunk,) = collect(iModel(provider="claude_code", model="sonnet"), "x")
    assert chunk.type == "error"
    assert chunk.content.startswith("API Error: 429")
    assert chunk.metadata["api_error_status"] == 429
    assert chunk.metadata["session_id"] == SESSION


def test_max_turns_ending_becomes_an_error_chunk(fake_cli, collect):
    lines = (fake_cli.replay("claude_errors.jsonl")).read_text().splitlines()
    fake_cli.replay([lines[1]])
    fake_cli.set(exit=1)
    model = iModel(provider="claude_code", model="sonnet")
    (chunk,) = collect(model, "x")
    assert chunk.type == "error"
    assert chunk.content == "Reached maximum number of turns (1)"
    assert chunk.metadata["subtype"] == "error_max_turns"
    assert chunk.metadata["usage"]["output_tokens"] == 410
    assert model.provider_session_id == "b1cacbdf-32f5-479b-97ed-4a869575dda8"  # resumable


def test_text_reaches_the_streaming_sink(fake_cli):
    import anyio

    seen: list[str] = []
    model = iModel(provider="claude_code", model="sonnet")

    async def main():
        with streaming_to(seen.append):
            return [c async for c in model.stream_cli(CLIRequest(prompt="x"))]

    anyio.run(main)
    assert seen == ["I'll count the Python files.", "There are 3 Python files in the project root."]


def test_config_round_trips_without_the_timeout_leaking_into_settings(fake_cli):
    model = iModel(
        provider="claude_code",
        model="sonnet",
        cli_path="claude",
        permission_mode="plan",
        include_partial=True,
        max_turns=2,
        timeout=30,
    )
    data = model.to_dict(include_request_options=True)
    assert data["endpoint"] == {
        "cli_path": "claude",
        "permission_mode": "plan",
        "include_partial": True,
        "max_turns": 2,
    }
    assert data["options"] == {"timeout": 30}
    clone = iModel.from_dict(data)
    assert clone.endpoint.config() == model.endpoint.config()
    assert clone.is_cli


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"permission_mode": "yolo"}, "`permission_mode='yolo'`"),
        ({"temperature": 0.2}, "`temperature`"),
        ({"max_turns": 0}, "`max_turns=0`"),
    ],
)
def test_bad_settings_are_named(kwargs, needle):
    with pytest.raises(ConfigurationError) as info:
        iModel(provider="claude_code", model="sonnet", **kwargs)
    assert needle in str(info.value)


def test_images_are_refused_with_a_fix(fake_cli, collect):
    with pytest.raises(ConfigurationError, match="mention the file paths"):
        collect(iModel(provider="claude_code", model="s"), CLIRequest(prompt="x", images=["a.png"]))
    assert fake_cli.records() == []
