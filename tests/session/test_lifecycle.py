"""ADR-0021 D4: who owns the run lifecycle.

ADR-0021 D4 clause -> test
- communicate / operate run under the observed wrapper, one start + one terminal -> test_communicate_emits_one_start_and_one_end
- failure -> RunFailed carrying the exception, and the exception still propagates -> test_failure_emits_run_failed_and_propagates
- chat_and_record: message-add signals but no lifecycle -> test_chat_and_record_has_no_lifecycle
- message-add signals drained before the terminal signal -> test_async_message_signals_are_drained_before_run_end
- observer failures never change the result -> test_failing_observer_changes_nothing
- nested turns suppressed via a task-scoped ContextVar; concurrent tasks unaffected -> test_nested_turns_are_suppressed_per_task
- a cancelled run reports exactly one terminal signal -> test_cancelled_run_reports_one_terminal
"""

from __future__ import annotations

import anyio
import pytest

from lion_nb import Branch, MessageAdded, RunEnd, RunFailed, RunStart, Signal, iModel
from lion_nb.errors import ExecutionError
from lion_nb.runtime.lifecycle import nested_turns


def _kinds(seen):
    return [type(s).__name__ for s in seen]


def test_communicate_emits_one_start_and_one_end():
    b = Branch()
    seen: list = []
    b.observe(Signal, seen.append)
    result = anyio.run(b.communicate, "hello")
    assert _kinds(seen) == ["RunStart", "MessageAdded", "MessageAdded", "RunEnd"]
    assert seen[0].run_id == seen[-1].run_id and seen[-1].result == result
    assert seen[0].operation == "communicate" and seen[-1].duration >= 0


def test_failure_emits_run_failed_and_propagates():
    b = Branch(
        chat_model=iModel(
            provider="offline", model="scripted", responses=[{"error": "down", "status": 500}]
        )
    )
    seen: list = []
    b.observe(Signal, seen.append)
    with pytest.raises(ExecutionError):
        anyio.run(b.communicate, "hello")
    assert _kinds(seen) == ["RunStart", "RunFailed"]
    assert isinstance(seen[-1].error, ExecutionError)


def test_chat_and_record_has_no_lifecycle():
    b = Branch()
    seen: list = []
    b.observe(Signal, seen.append)
    anyio.run(b.chat_and_record, "hello")
    assert _kinds(seen) == ["MessageAdded", "MessageAdded"]


def test_async_message_signals_are_drained_before_run_end():
    b = Branch()
    order: list = []

    async def slow_message_observer(signal):
        await anyio.sleep(0.05)
        order.append(signal.message.kind)

    b.observe(MessageAdded, slow_message_observer)
    b.observe(RunEnd, lambda s: order.append("RunEnd"))
    anyio.run(b.communicate, "hello")
    assert order == ["instruction", "assistant_response", "RunEnd"]


def test_failing_observer_changes_nothing(caplog):
    b = Branch(chat_model=iModel(provider="offline", model="scripted", responses=["fine"]))

    def broken(signal):
        raise RuntimeError("observer bug")

    async def broken_async(signal):
        raise RuntimeError("async observer bug")

    b.observe(Signal, broken)
    b.observe(RunStart, broken_async)
    assert anyio.run(b.communicate, "x") == "fine"
    assert "observer" in caplog.text and len(b.messages) == 2


def test_nested_turns_are_suppressed_per_task():
    b = Branch()
    seen: list = []
    b.observe(RunStart, seen.append)

    async def nested():
        with nested_turns():
            await b.communicate("inner")

    async def main():
        async with anyio.create_task_group() as tg:
            tg.start_soon(nested)
            tg.start_soon(b.communicate, "outer")

    anyio.run(main)
    assert len(seen) == 1


def test_facade_calls_inside_an_observed_run_are_nested():
    b = Branch()
    seen: list = []
    b.observe(RunStart, seen.append)

    async def middle(
        branch,
        instruction,
        chat_param,
        parse_param=None,
        clear_messages=False,
        skip_validation=False,
    ):
        await branch.communicate("inner one")
        return await branch.communicate("inner two")

    anyio.run(lambda: b.operate(instruction="outer", middle=middle))
    assert [s.operation for s in seen] == ["operate"]


def test_cancelled_run_reports_one_terminal():
    b = Branch(chat_model=iModel(provider="offline", model="auto", delay=0.2))
    seen: list = []

    async def slow_observer(signal):  # awaits inside the cancelled scope: needs the shield
        await anyio.sleep(0)
        seen.append(signal)

    b.observe(Signal, slow_observer)

    async def main():
        with anyio.move_on_after(0.1):
            await b.communicate("a long answer please")

    anyio.run(main)
    terminals = [s for s in seen if isinstance(s, (RunEnd, RunFailed))]
    assert _kinds(seen)[0] == "RunStart" and len(terminals) == 1
    assert isinstance(terminals[0], RunFailed)


def test_a_turn_on_another_branch_inside_a_run_is_that_branch_s_own_run():
    main, helper = Branch(name="main"), Branch(name="helper")
    seen: list = []
    main.observe(RunStart, seen.append)
    helper.observe(RunStart, seen.append)

    async def middle(
        branch,
        instruction,
        chat_param,
        parse_param=None,
        clear_messages=False,
        skip_validation=False,
    ):
        await helper.communicate("consulted")  # another branch: its own, reported run
        return await branch.communicate("inner")  # same branch: nested, not reported

    anyio.run(lambda: main.operate(instruction="outer", middle=middle))
    assert [(s.branch_name, s.operation) for s in seen] == [
        ("main", "operate"),
        ("helper", "communicate"),
    ]
