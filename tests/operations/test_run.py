"""`run` and `run_and_collect` against the offline CLI agent (and one probe endpoint).

The run lifecycle signals (D4) and stream persistence are in `test_run_lifecycle.py`, which
shares this module's helpers.

ADR-0021 D3 (run / run_and_collect) and D4 (run rows) -> tests:

- D3: `RunParam.imodel` replaces the branch's chat model -> test_param_imodel_replaces_chat_model
- D3: a non-CLI model is rejected with a ValueError naming the CLI providers and
  communicate()/operate(); no fallback -> test_non_cli_model_is_rejected_without_fallback
- D3: the instruction is recorded and yielded before any chunk is consumed
  -> test_instruction_is_recorded_and_yielded_before_the_provider_starts
- D3: the provider session id is passed as `resume` -> test_second_run_resumes_the_provider_session
  (prompt = rendered instruction, system text on the first turn only
  -> test_prompt_is_the_rendered_instruction_and_system_goes_on_the_first_turn_only,
  context providers as for chat -> test_context_providers_add_to_the_system_text)
- D3: system chunks update the session id -> test_system_chunk_updates_the_session_id
- D3: thinking accumulates into metadata -> test_thinking_accumulates_into_the_answer_metadata
- D3: text accumulates (deltas concatenate, full blocks join by a blank line)
  -> test_text_deltas_concatenate_and_full_blocks_join_as_paragraphs
- D3: tool_use / matching tool_result become linked, recorded and yielded action messages
  -> test_tool_use_and_result_become_linked_action_messages
- D3: unmatched tool results are ignored -> test_unmatched_tool_results_are_ignored
- D3: result metadata goes on the final answer -> test_result_metadata_is_attached_to_the_final_answer,
  test_result_without_pending_text_records_an_empty_answer_with_it
- D3: text is flushed before a tool request, before an error, at the end; several answers
  per stream -> test_tool_use_and_result_become_linked_action_messages,
  test_thinking_alone_before_a_tool_call_is_flushed_with_empty_text,
  test_text_is_flushed_before_an_error_is_raised, test_text_is_flushed_at_the_end_without_a_result
- D3: benign_eos ends normally -> test_benign_eos_error_ends_the_run_normally
- D3: other errors raise a classified provider error; empty -> "(empty error)"
  -> test_error_chunk_raises_a_classified_provider_error, test_empty_error_text_reads_empty_error
- D3: positive numeric timeout = one absolute deadline for the stream
  -> test_timeout_is_one_absolute_deadline_for_the_whole_stream,
  test_call_options_override_the_model_timeout
- D3: None / 0 / negative / non-number timeout -> no deadline -> test_no_deadline_unless_a_positive_number
- D3: the provider stream is closed on every exit; a close failure is logged and never
  replaces the propagating error -> test_consumer_stopping_early_closes_the_provider_stream,
  test_provider_stream_is_closed_on_end_error_and_cancellation,
  test_close_failure_is_logged_and_never_replaces_the_error
- D3: a cancelled or abandoned run records what it received, marked partial
  -> test_cancelled_run_records_partial_text, test_abandoned_run_records_pending_text_as_partial
- D3: stream_persist writes snapshot + chunk buffer, final snapshot, removes the buffer
  -> tests/operations/test_run_lifecycle.py
- D3: run_and_collect clears first, promotes ChatParam, joins non-empty answers with blank
  lines, None when none, raw text when skipping validation or nothing to parse, else parses
  once -> test_run_and_collect_clears_promotes_and_joins, test_run_and_collect_returns_none_without_answers,
  test_run_and_collect_returns_raw_text_when_validation_is_skipped,
  test_run_and_collect_parses_once_after_collection
- D4: one RunStart and exactly one terminal; abandonment is RunEnd; failure and cancellation
  are RunFailed -> test_cancelled_run_records_partial_text (cancellation; the completed,
  abandoned and failed runs are in tests/operations/test_run_lifecycle.py)
- D4: message signals before the terminal signal, nested turns, and the (decision) on a
  consumer that stops at the text flushed before an error
  -> tests/operations/test_run_lifecycle.py
"""

from __future__ import annotations

import logging
import time
from contextlib import aclosing
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from lion_nb.errors import CLIError, ProviderTimeoutError, RateLimitError, ServerError
from lion_nb.models.endpoints import CLIEndpoint, CLIRequest
from lion_nb.models.imodel import iModel
from lion_nb.models.stream import StreamChunk
from lion_nb.operations.run_op import run, run_and_collect
from lion_nb.operations.types import ChatParam, ParseParam, RunParam
from lion_nb.protocols.messages import (
    ActionResponse,
    AssistantResponse,
    Instruction,
)
from lion_nb.protocols.signals import RunEnd, RunFailed, RunStart
from lion_nb.session.branch import Branch
from tests.waiting import until


# -- helpers -----------------------------------------------------------------------------------------
def cli(*turns: list[dict], **kw: Any) -> iModel:
    return iModel(provider="offline_cli", model="scripted", turns=list(turns), **kw)


def make_branch(*turns: list[dict], system: str | None = None, **kw: Any) -> Branch:
    return Branch(system=system, chat_model=cli(*turns, **kw))


def collect(branch: Branch, instruction: Any = "go", **param: Any) -> list:
    async def main() -> list:
        out = []
        async with aclosing(run(branch, instruction, RunParam(**param))) as stream:
            async for message in stream:
                out.append(message)
        return out

    return anyio.run(main)


def watch(branch: Branch) -> list:
    seen: list = []
    for cls in (RunStart, RunEnd, RunFailed):
        branch.observe(cls, seen.append)
    return seen


def kinds(messages: list) -> list[str]:
    return [type(m).__name__ for m in messages]


def text(content: str, delta: bool = False) -> dict:
    return {"type": "text", "content": content, "is_delta": delta}


def result(**meta: Any) -> dict:
    return {"type": "result", "metadata": meta}


class ProbeCLI(CLIEndpoint):
    """A CLI endpoint that reports when its stream is started and closed."""

    __test__ = False
    provider = "probe_cli"

    def __init__(self, chunks: list[dict], *, delay: float = 0.0, fail_on_close: bool = False):
        super().__init__("probe")
        self.chunks = [StreamChunk.model_validate(c) for c in chunks]
        self.delay = delay
        self.fail_on_close = fail_on_close
        self.started = 0
        self.closed = 0
        self.sent = 0

    def stream(self, request: CLIRequest):
        return self._stream(request)

    async def _stream(self, request: CLIRequest):
        self.started += 1
        try:
            for chunk in self.chunks:
                if self.delay:
                    await anyio.sleep(self.delay)
                self.sent += 1
                yield chunk
        finally:
            self.closed += 1
            if self.fail_on_close:
                raise RuntimeError("the probe failed while closing")


# -- model selection -----------------------------------------------------------------------------------
def test_param_imodel_replaces_chat_model():
    branch = Branch()
    model = cli([text("hi")])
    collect(branch, "x", imodel=model)
    assert branch.chat_model is model
    assert len(model.endpoint.calls) == 1


def test_non_cli_model_is_rejected_without_fallback():
    api = iModel(provider="offline", model="scripted", responses=["should never be used"])
    branch = Branch(chat_model=api)
    seen = watch(branch)
    with pytest.raises(ValueError) as info:
        collect(branch, "x")
    message = str(info.value)
    for name in ("claude_code", "codex", "gemini_cli", "offline_cli", "communicate()", "operate()"):
        assert name in message
    assert len(branch.messages) == 0
    assert api.endpoint.calls == []
    assert seen == []
    # a rejected RunParam.imodel does not replace the chat model either
    keep = cli([text("x")])
    branch2 = Branch(chat_model=keep)
    with pytest.raises(ValueError):
        collect(branch2, "x", imodel=api)
    assert branch2.chat_model is keep


# -- the instruction and the request ---------------------------------------------------------------------
def test_instruction_is_recorded_and_yielded_before_the_provider_starts():
    branch = make_branch([text("answer")])
    endpoint = branch.chat_model.endpoint

    async def main():
        async with aclosing(run(branch, "what?", RunParam(guidance="briefly"))) as stream:
            first = await stream.__anext__()
            assert isinstance(first, Instruction)
            assert list(branch.messages) == [first]
            assert endpoint.calls == []  # nothing consumed yet
            rest = [m async for m in stream]
        return first, rest

    first, rest = anyio.run(main)
    assert first.instruction == "what?" and first.guidance == "briefly"
    assert kinds(rest) == ["AssistantResponse"]
    assert len(endpoint.calls) == 1


def test_prompt_is_the_rendered_instruction_and_system_goes_on_the_first_turn_only():
    branch = make_branch([text("a")], [text("b")], system="You are terse.")
    out = collect(branch, "Count files", context={"dir": "src"})
    collect(branch, "again")
    first, second = branch.chat_model.endpoint.calls
    assert first.prompt == out[0].rendered
    assert "Count files" in first.prompt and '"dir": "src"' in first.prompt
    assert first.system == "You are terse."
    assert second.system is None  # the resumed session already has it


def test_second_run_resumes_the_provider_session():
    branch = make_branch(
        [{"type": "system", "metadata": {"session_id": "sess-1"}}, text("a")],
        [text("b")],
    )
    collect(branch)
    assert branch.chat_model.provider_session_id == "sess-1"
    collect(branch)
    first, second = branch.chat_model.endpoint.calls
    assert first.resume is None
    assert second.resume == "sess-1"


# -- chunk handling --------------------------------------------------------------------------------------
def test_system_chunk_updates_the_session_id():
    endpoint = ProbeCLI([{"type": "system", "metadata": {"session_id": "probe-42"}}, text("x")])
    model = iModel(endpoint=endpoint)
    branch = Branch(chat_model=model)
    collect(branch)
    assert model.provider_session_id == "probe-42"
    # a system chunk without a session id (a notice) leaves it alone
    endpoint.chunks = [
        StreamChunk(type="system", metadata={"notice": "warming up"}),
        endpoint.chunks[1],
    ]
    collect(branch)
    assert model.provider_session_id == "probe-42"


def test_thinking_accumulates_into_the_answer_metadata():
    branch = make_branch(
        [
            {"type": "thinking", "content": "Let me ", "is_delta": True},
            {"type": "thinking", "content": "think.", "is_delta": True},
            text("Done."),
        ]
    )
    import time

    began = time.monotonic()
    (_, answer) = collect(branch)
    took = time.monotonic() - began
    assert answer.response == "Done."
    assert answer.metadata["thinking"] == "Let me think."
    seconds = answer.metadata["thinking_seconds"]  # first thinking chunk to first text chunk
    assert isinstance(seconds, float) and 0 <= seconds <= took


def test_an_answer_without_thinking_records_no_thinking_time():
    (_, answer) = collect(make_branch([text("Plain.")]))
    assert "thinking" not in answer.metadata and "thinking_seconds" not in answer.metadata


def test_text_deltas_concatenate_and_full_blocks_join_as_paragraphs():
    branch = make_branch(
        [text("Hel", True), text("lo", True), text("Second block."), text(" more", True)]
    )
    (_, answer) = collect(branch)
    assert answer.response == "Hello\n\nSecond block. more"


def test_tool_use_and_result_become_linked_action_messages():
    branch = make_branch(
        [
            {"type": "thinking", "content": "Use the shell."},
            text("I'll count."),
            {
                "type": "tool_use",
                "tool_id": "t1",
                "tool_name": "Bash",
                "tool_input": {"command": "ls"},
            },
            {"type": "tool_result", "tool_id": "t1", "tool_output": "3", "is_error": False},
            {"type": "tool_use", "tool_id": "t2", "tool_name": "Read"},
            {
                "type": "tool_result",
                "tool_id": "t2",
                "tool_output": "no such file",
                "is_error": True,
            },
            text("There are 3."),
            result(usage={"input_tokens": 5, "output_tokens": 2}, cost_usd=0.01),
        ]
    )
    out = collect(branch)
    assert kinds(out) == [
        "Instruction",
        "AssistantResponse",
        "ActionRequest",
        "ActionResponse",
        "ActionRequest",
        "ActionResponse",
        "AssistantResponse",
    ]
    assert list(branch.messages) == out  # everything yielded was recorded, in order
    _, first, req1, res1, req2, res2, final = out
    assert first.response == "I'll count." and first.metadata["thinking"] == "Use the shell."
    assert (req1.function, req1.arguments, req1.call_id) == ("Bash", {"command": "ls"}, "t1")
    assert (res1.function, res1.arguments, res1.output, res1.is_error) == (
        "Bash",
        {"command": "ls"},
        "3",
        False,
    )
    assert res1.call_id == "t1" and res1.action_request_id == str(req1.id)
    assert req1.action_response_id == str(res1.id)
    assert req2.arguments == {} and res2.is_error is True and res2.output == "no such file"
    assert final.response == "There are 3."
    assert final.metadata["usage"] == {"input_tokens": 5, "output_tokens": 2}


def test_thinking_alone_before_a_tool_call_is_flushed_with_empty_text():
    branch = make_branch(
        [
            {"type": "thinking", "content": "A shell command will do."},
            {"type": "tool_use", "tool_id": "t1", "tool_name": "Bash"},
            {"type": "tool_result", "tool_id": "t1", "tool_output": "3"},
            text("3 files."),
        ]
    )
    out = collect(branch)
    assert kinds(out) == [
        "Instruction",
        "AssistantResponse",
        "ActionRequest",
        "ActionResponse",
        "AssistantResponse",
    ]
    assert out[1].response == "" and out[1].metadata["thinking"] == "A shell command will do."
    assert "thinking" not in out[4].metadata
    # rendered for a later API request as one assistant turn carrying the call
    rendered = branch.msgs.chat_messages()
    assert [m["role"] for m in rendered] == ["user", "assistant", "tool", "assistant"]
    assert rendered[1]["tool_calls"][0]["id"] == "t1"


def test_context_providers_add_to_the_system_text():
    class Notes:
        name = "notes"

        async def provide(self, branch, instruction):
            return f"Notes for: {instruction.instruction}"

    branch = make_branch([text("a")], [text("b")], system="Base.")
    branch.providers.register(Notes())
    collect(branch, "first")
    collect(branch, "second")
    first, second = branch.chat_model.endpoint.calls
    assert first.system == "Base.\n\nNotes for: first"
    assert second.system == "Notes for: second"  # resumed: only the fresh context
    assert branch._context_injection is None


def test_unmatched_tool_results_are_ignored():
    branch = make_branch(
        [
            {"type": "tool_use", "tool_id": "t1", "tool_name": "Bash", "tool_input": {}},
            {"type": "tool_result", "tool_id": "elsewhere", "tool_output": "?"},
            {"type": "tool_result", "tool_id": "t1", "tool_output": "ok"},
            {"type": "tool_result", "tool_id": "t1", "tool_output": "duplicate"},
            text("end"),
        ]
    )
    out = collect(branch)
    assert kinds(out) == ["Instruction", "ActionRequest", "ActionResponse", "AssistantResponse"]
    assert out[2].output == "ok"


def test_result_metadata_is_attached_to_the_final_answer():
    branch = make_branch(
        [
            text("answer"),
            result(usage={"total_tokens": 9}, cost_usd=0.25, session_id="s-9", num_turns=1),
        ]
    )
    (_, answer) = collect(branch)
    assert answer.response == "answer"
    assert answer.usage == {"total_tokens": 9}
    assert answer.metadata["cost_usd"] == 0.25 and answer.metadata["num_turns"] == 1
    assert branch.chat_model.provider_session_id == "s-9"


def test_result_without_pending_text_records_an_empty_answer_with_it():
    branch = make_branch(
        [
            text("checking"),
            {"type": "tool_use", "tool_id": "t1", "tool_name": "Bash"},
            {"type": "tool_result", "tool_id": "t1", "tool_output": "ok"},
            result(usage={"total_tokens": 4}, cost_usd=0.5),
        ]
    )
    out = collect(branch)
    assert kinds(out)[-1] == "AssistantResponse"
    assert out[-1].response == "" and out[-1].metadata["cost_usd"] == 0.5
    assert "cost_usd" not in out[1].metadata  # the earlier answer is left as it was yielded


def test_text_is_flushed_at_the_end_without_a_result():
    branch = make_branch([text("one"), text("two", True)])
    out = collect(branch)
    assert kinds(out) == ["Instruction", "AssistantResponse"]
    assert out[1].response == "onetwo"


# -- errors ----------------------------------------------------------------------------------------------
def test_benign_eos_error_ends_the_run_normally():
    branch = make_branch(
        [
            text("all good"),
            {"type": "error", "content": "eof", "metadata": {"benign_eos": True}},
            text("never"),
        ]
    )
    seen = watch(branch)
    out = collect(branch)
    assert [m.response for m in out[1:]] == ["all good"]
    assert [type(s) for s in seen] == [RunStart, RunEnd]


def test_text_is_flushed_before_an_error_is_raised():
    branch = make_branch(
        [text("half an ans", True), {"type": "error", "content": "boom"}, text("never")]
    )
    got: list = []

    async def main():
        async with aclosing(run(branch, "x", RunParam())) as stream:
            async for message in stream:
                got.append(message)

    with pytest.raises(CLIError, match="boom"):
        anyio.run(main)
    assert kinds(got) == ["Instruction", "AssistantResponse"]
    assert got[1].response == "half an ans"
    assert list(branch.messages) == got


def test_error_chunk_raises_a_classified_provider_error():
    for status, cls in ((429, RateLimitError), (503, ServerError), (None, CLIError)):
        meta = {"api_error_status": status} if status else {}
        branch = make_branch([{"type": "error", "content": "API Error", "metadata": meta}])
        with pytest.raises(cls) as info:
            collect(branch)
        assert info.value.provider == "offline_cli"
        assert info.value.status == status


def test_empty_error_text_reads_empty_error():
    branch = make_branch([{"type": "error", "content": "  "}])
    with pytest.raises(CLIError) as info:
        collect(branch)
    assert info.value.provider_message == "(empty error)"


# -- the deadline ----------------------------------------------------------------------------------------
def _slow_turn(n: int = 8) -> list[dict]:
    return [text(f"part {i} ", True) for i in range(n)]


def test_timeout_is_one_absolute_deadline_for_the_whole_stream():
    # every gap (0.2 s) is far below the deadline; the whole stream (a minute) is not
    branch = make_branch(_slow_turn(300), delay=0.2, timeout=1.0)
    seen = watch(branch)
    start = time.monotonic()
    with pytest.raises(ProviderTimeoutError) as info:
        collect(branch)
    elapsed = time.monotonic() - start
    assert isinstance(info.value, TimeoutError)
    assert 0.9 <= elapsed < 30, elapsed  # the deadline, not the minute; a guard only
    assert "timeout=1.0" in str(info.value) or "timeout=1" in str(info.value)
    received = branch.messages[-1]
    assert isinstance(received, AssistantResponse) and received.response.startswith("part 0 ")
    assert [type(s) for s in seen] == [RunStart, RunFailed]
    assert seen[1].error is info.value


def test_call_options_override_the_model_timeout():
    # the model's deadline is an hour, the stream a minute: only the call's 0.3 s can end it
    branch = make_branch(_slow_turn(300), delay=0.2, timeout=3600)

    async def main():
        async with aclosing(branch.run("x", timeout=0.3)) as stream:
            async for _ in stream:
                pass

    with pytest.raises(TimeoutError):
        anyio.run(main)


@pytest.mark.parametrize("timeout", [None, 0, -1, "0.05", [0.05], float("nan")])
def test_no_deadline_unless_a_positive_number(timeout):
    branch = make_branch(_slow_turn(5), delay=0.05, timeout=timeout)
    out = collect(branch)
    assert out[-1].response == "part 0 part 1 part 2 part 3 part 4 "


# -- cleanup ---------------------------------------------------------------------------------------------
def test_consumer_stopping_early_closes_the_provider_stream():
    endpoint = ProbeCLI(
        [
            text("first answer"),
            {"type": "tool_use", "tool_id": "t1", "tool_name": "Bash"},
            {"type": "tool_result", "tool_id": "t1", "tool_output": "ok"},
            text("never reached"),
        ],
        delay=0.05,
    )
    branch = Branch(chat_model=iModel(endpoint=endpoint))

    async def main():
        async with aclosing(run(branch, "x", RunParam())) as stream:
            async for message in stream:
                if isinstance(message, AssistantResponse):
                    assert endpoint.closed == 0  # the provider is still running here
                    break
        await until(lambda: endpoint.closed, what="the provider's stream closed")

    anyio.run(main)
    assert endpoint.closed == 1
    assert endpoint.sent == 2  # nothing was read after the consumer stopped
    # the call the agent had started gets an error response: the history stays valid for
    # an API model that reads it later
    assert kinds(branch.messages) == [
        "Instruction", "AssistantResponse", "ActionRequest", "ActionResponse"
    ]  # fmt: skip
    closing = branch.messages[-1]
    assert closing.is_error and closing.metadata["cancelled"] is True
    assert closing.call_id == branch.messages[-2].call_id


def test_consumer_stopping_at_the_instruction_never_starts_the_provider():
    branch = make_branch([text("x")])

    async def main():
        async with aclosing(run(branch, "x", RunParam())) as stream:
            async for _ in stream:
                break

    anyio.run(main)
    assert branch.chat_model.endpoint.calls == []
    assert kinds(branch.messages) == ["Instruction"]


def test_provider_stream_is_closed_on_end_error_and_cancellation():
    ended = ProbeCLI([text("a")])
    collect(Branch(chat_model=iModel(endpoint=ended)))
    assert (ended.started, ended.closed) == (1, 1)

    failed = ProbeCLI([text("a"), {"type": "error", "content": "bad"}, text("b")])
    with pytest.raises(CLIError):
        collect(Branch(chat_model=iModel(endpoint=failed)))
    assert (failed.closed, failed.sent) == (1, 2)

    slow = ProbeCLI([text("a"), text("b")], delay=5)

    async def main():
        with anyio.move_on_after(0.2):
            async with aclosing(
                run(Branch(chat_model=iModel(endpoint=slow)), "x", RunParam())
            ) as s:
                async for _ in s:
                    pass

    anyio.run(main)
    assert slow.closed == 1


def test_close_failure_is_logged_and_never_replaces_the_error(caplog):
    endpoint = ProbeCLI(
        [text("a"), {"type": "error", "content": "the real error"}], fail_on_close=True
    )
    branch = Branch(chat_model=iModel(endpoint=endpoint))
    with caplog.at_level(logging.WARNING, logger="lion_nb.operations.run_op"):
        with pytest.raises(CLIError, match="the real error"):
            collect(branch)
    assert endpoint.closed == 1
    assert any("closing the provider stream failed" in r.getMessage() for r in caplog.records)

    # and a consumer that stops early sees a clean stop, not the close failure
    endpoint2 = ProbeCLI(
        [text("a"), {"type": "tool_use", "tool_id": "t"}, text("b")], fail_on_close=True
    )
    branch2 = Branch(chat_model=iModel(endpoint=endpoint2))

    async def main():
        async with aclosing(run(branch2, "x", RunParam())) as stream:
            async for message in stream:
                if isinstance(message, AssistantResponse):
                    break

    anyio.run(main)
    assert endpoint2.closed == 1


def test_cancelled_run_records_partial_text():
    # chunks arrive every 1 s (system, "partial answer", " never", ...); cancelled at 1.5 s,
    # half a second from either chunk
    turn = [text("partial answer", True), *[text(" never", True)] * 3, result()]
    branch = make_branch(turn, delay=1.0)
    seen = watch(branch)

    async def main():
        with anyio.move_on_after(1.5):
            async with aclosing(run(branch, "x", RunParam())) as stream:
                async for _ in stream:
                    pass

    anyio.run(main)  # ends at the cancel: no deadline of its own ended it earlier
    last = branch.messages[-1]
    assert isinstance(last, AssistantResponse)
    assert last.response == "partial answer" and last.metadata["partial"] is True
    assert [type(s) for s in seen] == [RunStart, RunFailed]
    assert type(seen[1].error).__name__ == "CancelledError"


def test_abandoned_run_records_pending_text_as_partial():
    branch = make_branch(
        [
            {"type": "tool_use", "tool_id": "t1", "tool_name": "Bash"},
            text("while it runs"),
            {"type": "tool_result", "tool_id": "t1", "tool_output": "ok"},
            text(" and after"),
        ]
    )

    async def main():
        async with aclosing(run(branch, "x", RunParam())) as stream:
            async for message in stream:
                if isinstance(message, ActionResponse):
                    break

    anyio.run(main)
    assert kinds(branch.messages) == [
        "Instruction",
        "ActionRequest",
        "ActionResponse",
        "AssistantResponse",
    ]
    partial = branch.messages[-1]
    assert partial.response == "while it runs" and partial.metadata["partial"] is True


# -- run_and_collect --------------------------------------------------------------------------------------
def test_run_and_collect_clears_promotes_and_joins():
    branch = make_branch(
        [
            text("first"),
            {"type": "tool_use", "tool_id": "t", "tool_name": "Bash"},
            {"type": "tool_result", "tool_id": "t", "tool_output": "ok"},
            text("second"),
            result(cost_usd=0.1),
        ],
        system="sys",
    )
    branch.msgs.add_message(instruction="old question")
    value = anyio.run(run_and_collect, branch, "now", ChatParam(guidance="be brief"), None, True)
    assert value == "first\n\nsecond"
    assert kinds(branch.messages) == [
        "System",
        "Instruction",
        "AssistantResponse",
        "ActionRequest",
        "ActionResponse",
        "AssistantResponse",
    ]
    assert branch.messages[1].instruction == "now" and branch.messages[1].guidance == "be brief"


def test_run_and_collect_returns_none_without_answers():
    branch = make_branch([result(cost_usd=0.0)])
    assert anyio.run(run_and_collect, branch, "x", ChatParam()) is None


class Count(BaseModel):
    files: int


def test_run_and_collect_returns_raw_text_when_validation_is_skipped():
    raw = '{"files": 3}'
    branch = make_branch([text(raw)], [text(raw)])
    parse = ParseParam(response_format=Count)
    assert anyio.run(run_and_collect, branch, "x", ChatParam(), parse, False, True) == raw
    assert anyio.run(run_and_collect, branch, "x", ChatParam(), None) == raw


def test_run_and_collect_parses_once_after_collection():
    branch = make_branch(
        [
            text("Counting."),
            {"type": "tool_use", "tool_id": "t", "tool_name": "Bash"},
            {"type": "tool_result", "tool_id": "t", "tool_output": "3"},
            text('```json\n{"files": 3}\n```'),
        ]
    )
    parse = ParseParam(
        response_format=Count, imodel=iModel(provider="offline", model="scripted", responses=[])
    )
    value = anyio.run(run_and_collect, branch, "x", ChatParam(response_format=Count), parse)
    assert value == Count(files=3)
    assert "files" in branch.chat_model.endpoint.calls[0].prompt  # the schema went with the prompt
