"""`gemini_cli`: transcripts to chunks, resume, flags, exit codes (against a fake `gemini`)."""

from __future__ import annotations

import pytest

from lion_nb.errors import CLIError, ConfigurationError
from lion_nb.models.endpoints import CLIRequest
from lion_nb.models.imodel import iModel

SESSION = "c6b1a6f2-2c8e-4f57-9f0e-3f1d2a7b9e10"


def gemini(**kwargs) -> iModel:
    return iModel(provider="gemini_cli", model="gemini-2.5-pro", **kwargs)


def test_tool_run_maps_to_the_exact_chunk_sequence(fake_cli, collect, briefs):
    model = gemini()
    chunks = collect(model, "How many .py files are here?")
    assert briefs(chunks) == [
        {"type": "system"},
        {
            "type": "tool_use",
            "tool_id": "run_shell_command-1768046402100-a1b2c3",
            "tool_name": "run_shell_command",
            "tool_input": {"command": "ls *.py | wc -l"},
        },
        {
            "type": "tool_result",
            "tool_id": "run_shell_command-1768046402100-a1b2c3",
            "tool_output": "3",
        },
        {"type": "text", "content": "There are 3 ", "is_delta": True},
        {"type": "text", "content": "Python files.", "is_delta": True},
        {"type": "result"},
    ]
    assert chunks[0].metadata == {
        "session_id": SESSION,
        "subtype": "init",
        "model": "gemini-2.5-pro",
    }
    result = chunks[-1].metadata
    assert (result["usage"]["input_tokens"], result["usage"]["output_tokens"]) == (1400, 120)
    assert result["usage"]["total_tokens"] == 1520
    assert result["duration_ms"] == 3100 and result["session_id"] == SESSION
    assert model.provider_session_id == SESSION


def test_resume_and_flags(fake_cli, collect):
    model = gemini()
    collect(model, "first")
    collect(model, CLIRequest(prompt="second", resume=model.provider_session_id, system="Short."))
    collect(iModel(provider="gemini_cli", model="", approval_mode="auto_edit"), "-x")
    collect(gemini(bypass_permissions=True), "y")
    first, second, mode, bypass = (r["argv"] for r in fake_cli.records())
    assert first == ["-p", "first", "--output-format", "stream-json", "--model", "gemini-2.5-pro"]
    assert second[:2] == ["-p", "Short.\n\nsecond"]
    assert second[second.index("--resume") + 1] == SESSION
    assert mode == ["--prompt=-x", "--output-format", "stream-json", "--approval-mode", "auto_edit"]
    assert "--yolo" in bypass and "--yolo" not in first + mode


def test_failed_result_and_failed_tool(fake_cli, collect):
    fake_cli.replay(
        [
            {"type": "init", "session_id": "s", "model": "m"},
            {
                "type": "tool_result",
                "tool_id": "t",
                "status": "error",
                "error": {"type": "x", "message": "denied"},
            },
            {"type": "error", "severity": "warning", "message": "loop detected"},
            {
                "type": "result",
                "status": "error",
                "error": {"type": "FatalError", "message": "quota"},
            },
        ]
    )
    fake_cli.set(exit=1)
    system, tool, notice, error = collect(gemini(), "x")
    assert system.metadata["session_id"] == "s"
    assert (tool.type, tool.tool_output, tool.is_error) == ("tool_result", "denied", True)
    assert notice.type == "system" and notice.metadata["notice"] == "loop detected"
    assert (error.type, error.content, error.metadata["error_type"]) == (
        "error",
        "quota",
        "FatalError",
    )


@pytest.mark.parametrize(
    ("code", "needle"),
    [(53, "turn limit"), (42, "rejected its input"), (1, "failed"), (7, "exited with code 7")],
)
def test_exit_codes_have_clear_messages(fake_cli, collect, code, needle):
    fake_cli.replay([{"type": "init", "session_id": "s"}])
    fake_cli.set(exit=code, stderr="details here")
    with pytest.raises(CLIError) as info:
        collect(gemini(), "x")
    assert info.value.exit_code == code
    assert needle in str(info.value) and "details here" in str(info.value)


def test_settings_round_trip_and_are_checked():
    assert gemini(approval_mode="yolo").to_dict()["endpoint"] == {"approval_mode": "yolo"}
    with pytest.raises(ConfigurationError, match="`approval_mode='all'`"):
        gemini(approval_mode="all")
