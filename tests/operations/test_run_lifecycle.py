"""`run`'s lifecycle signals (ADR-0021 D4) and stream persistence, against the offline CLI agent.

The helpers (the scripted agent, the probe endpoint, `collect`, `watch`) are `test_run.py`'s.

ADR-0021 D3 (stream persistence) and D4 (run rows) -> tests:

- D3: stream_persist writes snapshot + chunk buffer, final snapshot, removes the buffer
  -> test_stream_persist_writes_snapshot_and_buffer, test_snapshot_dir_falls_back_to_persist_dir,
  test_nothing_is_written_without_stream_persist
- D4: one RunStart and exactly one terminal; abandonment is RunEnd; failure and cancellation
  are RunFailed -> test_lifecycle_completed_run, test_lifecycle_abandoned_run_ends_cleanly,
  test_lifecycle_failed_run (cancellation: test_cancelled_run_records_partial_text in
  tests/operations/test_run.py)
- D4: message signals are delivered before the terminal signal
  -> test_message_signals_are_drained_before_run_end
- D4: nested turns emit no lifecycle but still clean up -> test_nested_run_emits_no_lifecycle_but_cleans_up;
  the suppression is task-scoped -> test_nested_suppression_is_task_scoped
- (decision) a consumer that stops at the text flushed before an error still gets RunFailed
  -> test_consumer_stopping_at_the_text_flushed_before_an_error_reports_the_failure
"""

from __future__ import annotations

import json
from contextlib import aclosing

import anyio
import pytest

from lion_nb.errors import CLIError
from lion_nb.models.imodel import iModel
from lion_nb.models.stream import StreamChunk
from lion_nb.operations.run_op import run
from lion_nb.operations.types import RunParam
from lion_nb.protocols.messages import ActionRequest, AssistantResponse, Instruction
from lion_nb.protocols.signals import MessageAdded, RunEnd, RunFailed, RunStart
from lion_nb.runtime.lifecycle import nested_turns
from lion_nb.session.branch import Branch
from tests.operations.test_run import ProbeCLI, collect, make_branch, result, text, watch


# -- lifecycle (D4) --------------------------------------------------------------------------------------
def test_lifecycle_completed_run():
    branch = make_branch([text("a"), result()])
    seen = watch(branch)
    out = collect(branch)
    assert [type(s) for s in seen] == [RunStart, RunEnd]
    assert seen[0].operation == "run" and seen[0].run_id == seen[1].run_id
    assert seen[1].result == out


def test_lifecycle_abandoned_run_ends_cleanly():
    branch = make_branch([text("a"), {"type": "tool_use", "tool_id": "t"}, text("b")])
    seen = watch(branch)

    async def main():
        async with aclosing(run(branch, "x", RunParam())) as stream:
            async for message in stream:
                if isinstance(message, AssistantResponse):
                    break

    anyio.run(main)
    assert [type(s) for s in seen] == [RunStart, RunEnd]


def test_lifecycle_failed_run():
    branch = make_branch([{"type": "error", "content": "nope"}])
    seen = watch(branch)
    with pytest.raises(CLIError) as info:
        collect(branch)
    assert [type(s) for s in seen] == [RunStart, RunFailed]
    assert seen[1].error is info.value


def test_message_signals_are_drained_before_run_end():
    branch = make_branch([text("a")])
    order: list[str] = []

    async def on_message(signal):
        await anyio.sleep(0.05)
        order.append(type(signal.message).__name__)

    branch.observe(MessageAdded, on_message)
    branch.observe(RunEnd, lambda s: order.append("RunEnd"))
    collect(branch)
    assert order == ["Instruction", "AssistantResponse", "RunEnd"]


def test_nested_run_emits_no_lifecycle_but_cleans_up(tmp_path):
    endpoint = ProbeCLI([text("a"), {"type": "tool_use", "tool_id": "t"}, text("b")])
    branch = Branch(chat_model=iModel(endpoint=endpoint))
    seen = watch(branch)

    async def main():
        with nested_turns():
            async with aclosing(
                run(branch, "x", RunParam(stream_persist=True, persist_dir=tmp_path))
            ) as stream:
                async for message in stream:
                    if isinstance(message, AssistantResponse):
                        break

    anyio.run(main)
    assert seen == []
    assert endpoint.closed == 1
    assert [p.name for p in tmp_path.iterdir()] == [f"{branch.id}.json"]  # buffer removed


def test_nested_suppression_is_task_scoped():
    branch = make_branch([text("nested")], [text("top level")])
    seen = watch(branch)
    inside = anyio.Event()

    async def nested():
        with nested_turns():
            async with aclosing(run(branch, "inner", RunParam())) as stream:
                async for _ in stream:
                    inside.set()  # the nested run is under way while the top-level one runs
                    await anyio.sleep(0.05)

    async def top():
        await inside.wait()
        async with aclosing(run(branch, "outer", RunParam())) as stream:
            async for _ in stream:
                pass

    async def main():
        async with anyio.create_task_group() as tg:
            tg.start_soon(nested)
            tg.start_soon(top)

    anyio.run(main)
    assert [type(s) for s in seen] == [RunStart, RunEnd]  # the top-level run only


def test_consumer_stopping_at_the_text_flushed_before_an_error_reports_the_failure():
    branch = make_branch([text("so far"), {"type": "error", "content": "broken"}])
    seen = watch(branch)

    async def main():
        async with aclosing(run(branch, "x", RunParam())) as stream:
            async for message in stream:
                if isinstance(message, AssistantResponse):
                    break

    anyio.run(main)
    assert [type(s) for s in seen] == [RunStart, RunFailed]
    assert isinstance(seen[1].error, CLIError) and "broken" in str(seen[1].error)


# -- persistence -----------------------------------------------------------------------------------------
def test_stream_persist_writes_snapshot_and_buffer(tmp_path):
    branch = make_branch(
        [text("a"), {"type": "tool_use", "tool_id": "t", "tool_name": "Bash"}, text("b"), result()]
    )
    persist, snaps = tmp_path / "runs", tmp_path / "snaps"
    snapshot = snaps / f"{branch.id}.json"
    mid: dict = {}

    async def main():
        param = RunParam(stream_persist=True, persist_dir=persist, snapshot_dir=snaps)
        async with aclosing(run(branch, "x", param)) as stream:
            async for message in stream:
                if isinstance(message, Instruction):
                    start = json.loads(snapshot.read_text())
                    mid["start_messages"] = len(start["messages"]["collections"])
                if isinstance(message, ActionRequest):
                    (buffer,) = persist.glob("*.buffer.jsonl")
                    mid["buffer"] = [json.loads(x) for x in buffer.read_text().splitlines()]

    anyio.run(main)
    assert mid["start_messages"] == 1  # the instruction
    assert [c["type"] for c in mid["buffer"]] == ["system", "text", "tool_use"]
    assert StreamChunk.model_validate(mid["buffer"][2]).tool_name == "Bash"
    final = json.loads(snapshot.read_text())
    # the call the agent never reported a result for is closed before its next answer
    assert len(final["messages"]["collections"]) == len(branch.messages) == 5
    restored = Branch.from_dict(final).messages
    assert restored[-2].kind == "action_response" and restored[-2].is_error
    assert restored[-1].response == "b"
    assert list(persist.iterdir()) == []  # the live buffer is gone


def test_snapshot_dir_falls_back_to_persist_dir(tmp_path):
    branch = make_branch([text("a")])
    collect(branch, stream_persist=True, persist_dir=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [f"{branch.id}.json"]


def test_nothing_is_written_without_stream_persist(tmp_path):
    branch = make_branch([text("a")])
    collect(branch, persist_dir=tmp_path / "runs", snapshot_dir=tmp_path / "snaps")
    assert list(tmp_path.iterdir()) == []
