"""`codex`: transcripts to chunks, resume argument order, flags, failures (against a fake `codex`)."""

from __future__ import annotations

import pytest

from lion_nb.errors import CLIError, ConfigurationError
from lion_nb.models.endpoints import CLIRequest
from lion_nb.models.imodel import iModel

THREAD = "0199a213-81c0-7800-8aa1-bbab2a035a53"


def codex(**kwargs) -> iModel:
    return iModel(provider="codex", model="gpt-5-codex", **kwargs)


def test_tool_run_maps_to_the_exact_chunk_sequence(fake_cli, collect, briefs):
    model = codex()
    chunks = collect(model, "Count the Python files and write NOTES.md")
    assert briefs(chunks) == [
        {"type": "system"},
        {"type": "thinking", "content": "**Counting Python files**"},
        {
            "type": "tool_use",
            "tool_id": "item_1",
            "tool_name": "command_execution",
            "tool_input": {"command": "bash -lc 'ls *.py | wc -l'"},
        },
        {"type": "tool_result", "tool_id": "item_1", "tool_output": "3\n"},
        {
            "type": "tool_use",
            "tool_id": "item_2",
            "tool_name": "docs.search",
            "tool_input": {"q": "pytest fixtures"},
        },
        {"type": "tool_result", "tool_id": "item_2", "tool_output": "fixtures are functions..."},
        {
            "type": "tool_use",
            "tool_id": "item_3",
            "tool_name": "file_change",
            "tool_input": {"changes": [{"path": "/home/user/proj/NOTES.md", "kind": "add"}]},
        },
        {
            "type": "tool_result",
            "tool_id": "item_3",
            "tool_output": [{"path": "/home/user/proj/NOTES.md", "kind": "add"}],
        },
        {"type": "text", "content": "There are 3 Python files; I wrote NOTES.md."},
        {"type": "result"},
    ]
    assert chunks[0].metadata["session_id"] == THREAD
    assert chunks[3].metadata["exit_code"] == 0
    usage = chunks[-1].metadata["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["total_tokens"]) == (
        24763,
        122,
        24885,
    )
    assert usage["cached_input_tokens"] == 24448
    assert model.provider_session_id == THREAD


def test_failed_command_is_an_error_result(fake_cli, collect):
    item = {
        "id": "i",
        "type": "command_execution",
        "command": "false",
        "aggregated_output": "",
        "status": "failed",
    }
    fake_cli.replay(
        [
            {"type": "item.completed", "item": {**item, "exit_code": 1}},
            {"type": "turn.completed", "usage": {}},
        ]
    )
    use, result, end = collect(codex(), "x")
    assert (use.type, use.tool_input) == ("tool_use", {"command": "false"})
    assert result.is_error and result.metadata["exit_code"] == 1
    assert end.metadata["usage"]["total_tokens"] == 0


def test_transient_notice_is_not_fatal_and_the_real_failure_is_one_error(fake_cli, collect, briefs):
    fake_cli.replay("codex_fail.jsonl")
    fake_cli.set(exit=1)  # a failed turn exits 1
    chunks = collect(codex(), "x")  # no CLIError: the failure was reported as a chunk
    assert [c.type for c in chunks] == ["system", "system", "error"]
    notice = chunks[1].metadata
    assert notice["transient"] is True and notice["notice"].startswith("Reconnecting... 1/5")
    assert notice["session_id"] == "0199a213-81c0-7800-8aa1-bbab2a035a54"
    assert chunks[2].content == "You've hit your usage limit. Try again at 3:05 PM."


def test_error_without_turn_failed_is_reported_at_the_end(fake_cli, collect):
    fake_cli.replay(
        [{"type": "thread.started", "thread_id": "t"}, {"type": "error", "message": "boom"}]
    )
    fake_cli.set(exit=1)
    chunks = collect(codex(), "x")
    assert [(c.type, c.content) for c in chunks] == [("system", None), ("error", "boom")]


def test_recovered_error_becomes_a_notice(fake_cli, collect):
    fake_cli.replay(
        [{"type": "error", "message": "tool hiccup"}, {"type": "turn.completed", "usage": {}}]
    )
    chunks = collect(codex(), "x")
    assert [c.type for c in chunks] == ["system", "result"]
    assert chunks[0].metadata == {"notice": "tool hiccup", "transient": False}


def test_transient_only_run_with_nonzero_exit_raises(fake_cli, collect):
    fake_cli.replay([{"type": "error", "message": "Reconnecting... 5/5"}])
    fake_cli.set(exit=1, stderr="stream disconnected")
    with pytest.raises(CLIError) as info:
        collect(codex(), "x")
    assert info.value.exit_code == 1 and "stream disconnected" in str(info.value)


def test_resume_goes_after_the_exec_flags_and_before_the_prompt(fake_cli, collect):
    model = codex(sandbox="read-only", skip_git_repo_check=True)
    collect(model, "first")
    collect(model, CLIRequest(prompt="second", resume=model.provider_session_id, images=["a.png"]))
    first, second = (r["argv"] for r in fake_cli.records())
    assert first == [
        "exec", "--json", "--model", "gpt-5-codex", "--sandbox", "read-only",
        "--skip-git-repo-check", "first",
    ]  # fmt: skip
    assert second == [
        "exec", "--json", "--model", "gpt-5-codex", "--sandbox", "read-only",
        "--skip-git-repo-check", "--image", "a.png", "resume", THREAD, "second",
    ]  # fmt: skip


def test_permission_flags_only_when_asked_and_system_goes_first(fake_cli, collect):
    collect(iModel(provider="codex", model="default"), CLIRequest(prompt="q", system="Be terse."))
    collect(codex(bypass_permissions=True), "-v?")
    plain, bypass = (r["argv"] for r in fake_cli.records())
    assert plain == ["exec", "--json", "Be terse.\n\nq"]
    assert bypass[-3:] == ["--dangerously-bypass-approvals-and-sandbox", "--", "-v?"]


def test_settings_round_trip_and_are_checked():
    model = codex(sandbox="workspace-write", bypass_permissions=True)
    assert model.to_dict()["endpoint"] == {"sandbox": "workspace-write", "bypass_permissions": True}
    with pytest.raises(ConfigurationError, match=r"`sandbox='everything'`.*read-only"):
        codex(sandbox="everything")


def test_reasoning_becomes_codexs_own_effort_setting_before_the_prompt(fake_cli, collect):
    collect(codex(reasoning="high"), "plan it")
    collect(codex(reasoning="high"), CLIRequest(prompt="quick", options={"reasoning": "low"}))
    collect(codex(), "plain")
    model_level, run_level, plain = (r["argv"] for r in fake_cli.records())
    assert model_level == [
        "exec", "--json", "--model", "gpt-5-codex", "-c", 'model_reasoning_effort="high"', "plan it",
    ]  # fmt: skip
    assert run_level[4:6] == ["-c", 'model_reasoning_effort="low"']  # the run's own level wins
    assert "-c" not in plain


def test_a_reasoning_level_codex_cannot_take_is_refused_before_it_starts(fake_cli, collect):
    with pytest.raises(ConfigurationError, match=r"`reasoning='extreme'`.*'minimal'"):
        collect(codex(), CLIRequest(prompt="q", options={"reasoning": "extreme"}))
    assert fake_cli.records() == []  # no process was started
