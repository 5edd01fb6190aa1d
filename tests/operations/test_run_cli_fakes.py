"""`Branch.run()` end to end against the fake `claude`, `codex` and `gemini` executables.

The fakes (``tests/fakes/bin``) are real programs run as real subprocesses, first on ``PATH``;
they replay the provider transcripts and record each run's argv and PID
(``FAKE_CLI_RECORD``), so the tests check resumption by argv and cleanup by PID.

ADR-0021 D3 / D4 (run) and the CLI acceptance points -> tests:

- D3: chunks become Instruction -> AssistantResponse -> ActionRequest/ActionResponse pairs ->
  final AssistantResponse with usage (and cost where the CLI reports one)
  -> test_run_yields_the_recorded_conversation_of_each_cli
- D3: the provider session id is passed as `resume` on the next run
  -> test_second_run_resumes_the_provider_session
- D3: one absolute deadline; on expiry the process (and its children) are gone and a
  TimeoutError is raised -> test_hanging_cli_times_out_and_leaves_no_process
- D3: a consumer that stops early closes the stream, which stops the process
  -> test_consumer_stopping_after_its_first_answer_stops_the_cli,
  test_consumer_stopping_after_the_instruction_never_starts_the_cli
- D3: a non-zero exit without an error event is raised after the received text is kept
  -> test_cli_failure_keeps_what_was_received
- D4: RunStart then RunFailed for the timeout -> test_hanging_cli_times_out_and_leaves_no_process
"""

from __future__ import annotations

import time
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import pytest

from lion_nb.errors import CLIError
from lion_nb.models.imodel import iModel
from lion_nb.protocols.messages import (
    ActionRequest,
    ActionResponse,
    AssistantResponse,
    Instruction,
)
from lion_nb.protocols.signals import RunEnd, RunFailed, RunStart
from lion_nb.session.branch import Branch
from tests.fakes.cli import FakeCLI, alive, fake_cli_on_path

PROVIDERS = {"claude_code": "claude", "codex": "codex", "gemini_cli": "gemini"}


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeCLI:
    return fake_cli_on_path(monkeypatch, tmp_path)


def run_all(branch: Branch, instruction: str = "How many .py files are here?", **kw: Any) -> list:
    async def main() -> list:
        async with aclosing(branch.run(instruction, **kw)) as stream:
            return [message async for message in stream]

    return anyio.run(main)


def shape(messages: list) -> list[str]:
    return [type(m).__name__ for m in messages]


# -- the conversation ------------------------------------------------------------------------------
@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_run_yields_the_recorded_conversation_of_each_cli(fakes, provider):
    branch = Branch(chat_model=iModel(provider=provider))
    seen: list = []
    for cls in (RunStart, RunEnd, RunFailed):
        branch.observe(cls, seen.append)
    out = run_all(branch)

    assert list(branch.messages) == out  # every message yielded was recorded, in order
    assert isinstance(out[0], Instruction)
    final = out[-1]
    assert isinstance(final, AssistantResponse)
    assert "3" in final.response
    usage = final.metadata["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    # cost is always present: a number where the CLI reports one, None (unknown) otherwise
    assert "cost_usd" in final.metadata
    if provider != "claude_code":
        assert final.metadata["cost_usd"] is None
    # between them: answers and linked tool call pairs
    middle = out[1:-1]
    requests = [m for m in middle if isinstance(m, ActionRequest)]
    responses = [m for m in middle if isinstance(m, ActionResponse)]
    assert requests and len(requests) == len(responses)
    for request in requests:
        response = middle[middle.index(request) + 1]
        assert isinstance(response, ActionResponse)
        assert response.action_request_id == str(request.id)
        assert request.action_response_id == str(response.id)
        assert response.call_id == request.call_id
    assert {type(m) for m in middle} <= {AssistantResponse, ActionRequest, ActionResponse}
    assert [type(s) for s in seen] == [RunStart, RunEnd]
    (record,) = fakes.records()
    assert not alive(record["pid"])


def test_claude_run_has_text_before_its_tool_call_and_usage_and_cost_at_the_end(fakes):
    branch = Branch(chat_model=iModel(provider="claude_code", model="sonnet"))
    out = run_all(branch)
    assert shape(out) == [
        "Instruction",
        "AssistantResponse",
        "ActionRequest",
        "ActionResponse",
        "AssistantResponse",
    ]
    _, first, request, response, final = out
    assert first.response == "I'll count the Python files."
    assert first.metadata["thinking"] == "Count the .py files with a shell command."
    assert (request.function, request.arguments["command"]) == ("Bash", "ls *.py | wc -l")
    assert response.output == "3" and response.is_error is False
    assert final.response == "There are 3 Python files in the project root."
    assert final.metadata["cost_usd"] == pytest.approx(0.0213)
    assert final.metadata["usage"]["output_tokens"] == 88
    assert final.metadata["session_id"] == "7f3c2a9e-1b4d-4e8a-9c6f-2d5e8a1b3c4d"


def test_codex_run_keeps_its_reasoning_next_to_its_tool_calls(fakes):
    branch = Branch(chat_model=iModel(provider="codex"))
    out = run_all(branch)
    assert shape(out) == [
        "Instruction",
        "AssistantResponse",
        *["ActionRequest", "ActionResponse"] * 3,
        "AssistantResponse",
    ]
    assert out[1].response == "" and out[1].metadata["thinking"] == "**Counting Python files**"
    assert out[3].output == "3\n"
    assert out[-1].response == "There are 3 Python files; I wrote NOTES.md."
    assert out[-1].metadata["usage"]["output_tokens"] == 122


# -- resumption ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("provider", "session", "resume_args"),
    [
        ("claude_code", "7f3c2a9e-1b4d-4e8a-9c6f-2d5e8a1b3c4d", ["--resume"]),
        ("codex", "0199a213-81c0-7800-8aa1-bbab2a035a53", ["resume"]),
    ],
)
def test_second_run_resumes_the_provider_session(fakes, provider, session, resume_args):
    branch = Branch(system="Answer in one line.", chat_model=iModel(provider=provider))
    run_all(branch)
    assert branch.chat_model.provider_session_id == session
    run_all(branch, "And how many tests?")
    first, second = fakes.records()
    assert session not in first["argv"]
    argv = second["argv"]
    at = argv.index(session)
    assert argv[at - 1 : at] == resume_args
    assert argv[-1].endswith("And how many tests?")
    # the system text went with the first turn only
    assert any("Answer in one line." in a for a in first["argv"])
    assert not any("Answer in one line." in a for a in argv)


# -- deadline and early exit ---------------------------------------------------------------------
def test_hanging_cli_times_out_and_leaves_no_process(fakes):
    fakes.set(mode="child")  # prints one line, starts a child, then hangs
    branch = Branch(chat_model=iModel(provider="claude_code", timeout=2))
    seen: list = []
    for cls in (RunStart, RunEnd, RunFailed):
        branch.observe(cls, seen.append)
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        run_all(branch)
    elapsed = time.monotonic() - start
    assert elapsed < 30, elapsed  # the 2 s deadline, not the hang; a guard only
    (record,) = fakes.records()
    assert record["child_pid"]
    assert not alive(record["pid"])
    assert not alive(record["child_pid"])
    assert shape(branch.messages) == ["Instruction"]
    assert [type(s) for s in seen] == [RunStart, RunFailed]
    assert isinstance(seen[1].error, TimeoutError)


def test_consumer_stopping_after_its_first_answer_stops_the_cli(fakes):
    fakes.set(delay=0.5)  # seven lines: three seconds if it were left running
    branch = Branch(chat_model=iModel(provider="claude_code"))
    state: dict[str, Any] = {}

    async def main():
        async with aclosing(branch.run("How many .py files are here?")) as stream:
            async for message in stream:
                if isinstance(message, AssistantResponse):
                    (record,) = fakes.records()
                    state["pid"] = record["pid"]
                    state["alive_at_stop"] = alive(record["pid"])
                    break
        state["alive_after"] = alive(state["pid"])

    anyio.run(main)
    assert state["alive_at_stop"] is True
    assert state["alive_after"] is False  # left running, it would print for seconds more
    assert shape(branch.messages) == [
        "Instruction", "AssistantResponse", "ActionRequest", "ActionResponse"
    ]  # fmt: skip
    assert branch.messages[-1].metadata["cancelled"] is True  # its result never came


def test_consumer_stopping_after_the_instruction_never_starts_the_cli(fakes):
    branch = Branch(chat_model=iModel(provider="codex"))

    async def main():
        async with aclosing(branch.run("x")) as stream:
            async for _ in stream:
                break

    anyio.run(main)
    assert fakes.records() == []
    assert shape(branch.messages) == ["Instruction"]


def test_cli_failure_keeps_what_was_received(fakes):
    fakes.set(exit=3, stderr="disk on fire")
    branch = Branch(chat_model=iModel(provider="gemini_cli"))
    with pytest.raises(CLIError) as info:
        run_all(branch)
    assert info.value.exit_code == 3
    assert isinstance(branch.messages[-1], AssistantResponse)
    assert branch.messages[-1].response == "There are 3 Python files."
