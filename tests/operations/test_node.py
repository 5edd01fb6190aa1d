"""The `Operation` graph node.

ADR clauses covered (clause -> test):

ADR-0021 D2 (_invoke uses Branch.get_operation, same as run_operation) -> test_node_and_run_operation_share_one_lookup
ADR-0021 D2 (attribute-first: registry never shadows a built-in)     -> test_builtin_wins_over_registered_name
ADR-0021 D2 (missing -> OperationError "Unsupported operation type") -> test_missing_operation_is_operation_error
ADR-0021 D2 (ordinary operations are awaited)                        -> test_builtin_verb_awaited_and_recorded
ADR-0021 D2 (ReActStream consumed into a list)                       -> test_react_stream_consumed_into_list
this project (any async-generator verb settles to a list: run)        -> test_run_stream_consumed_into_list
ADR-0021 D1 (implementation exceptions propagate unchanged)          -> test_operation_exception_recorded_and_reraised
this project (registered op called as func(branch, **parameters))     -> test_registered_operation_receives_branch_first
"""

from __future__ import annotations

import anyio
import pytest

from lion_nb.errors import OperationError
from lion_nb.models.imodel import iModel
from lion_nb.operations.node import Operation
from lion_nb.protocols.messages import AssistantResponse, Instruction
from lion_nb.session.branch import Branch
from lion_nb.session.session import Session


def scripted(*responses: str) -> iModel:
    return iModel(provider="offline", model="scripted", responses=list(responses))


def test_builtin_verb_awaited_and_recorded():
    branch = Branch(chat_model=scripted("node answer"))
    node = Operation(operation="communicate", parameters={"instruction": "question"})
    assert node.status == "pending" and node.result is None
    result = anyio.run(node.invoke, branch)
    assert result == "node answer"
    assert node.status == "completed" and node.result == "node answer" and node.error is None
    assert node.started_at is not None and node.duration is not None and node.duration >= 0
    assert [type(m) for m in branch.messages] == [Instruction, AssistantResponse]


def test_registered_operation_receives_branch_first():
    session = Session()
    got = {}

    async def tag(branch: Branch, *, label: str) -> str:
        got["branch"] = branch
        return f"{label}:{branch.name}"

    session.register_operation("tag", tag)
    branch = session.new_branch(name="b1")
    node = Operation(operation="tag", parameters={"label": "x"})
    assert anyio.run(node.invoke, branch) == "x:b1"
    assert got["branch"] is branch
    assert node.parameters == {"label": "x"}


def test_node_and_run_operation_share_one_lookup():
    session = Session()

    async def double(branch: Branch, *, n: int) -> int:
        return n * 2

    session.register_operation("double", double)
    branch = session.default_branch
    via_node = anyio.run(Operation(operation="double", parameters={"n": 4}).invoke, branch)
    via_session = anyio.run(lambda: session.run_operation("double", n=4))
    assert via_node == via_session == 8
    # after removal both paths lose the registered name, in their own error type
    session.remove_branch(branch)
    node = Operation(operation="double", parameters={"n": 4})
    with pytest.raises(OperationError, match="Unsupported operation type: double"):
        anyio.run(node.invoke, branch)


def test_builtin_wins_over_registered_name():
    session = Session(default_branch=Branch(chat_model=scripted("built-in")))

    async def fake(branch: Branch, **kwargs) -> str:
        return "registered"

    with pytest.warns(UserWarning):
        session.register_operation("chat", fake)
    node = Operation(operation="chat", parameters={"instruction": "hi"})
    assert anyio.run(node.invoke, session.default_branch) == "built-in"


def test_missing_operation_is_operation_error():
    branch = Session().default_branch
    node = Operation(operation="nowhere")
    with pytest.raises(OperationError) as info:
        anyio.run(node.invoke, branch)
    assert str(info.value).startswith("Unsupported operation type: nowhere")
    assert "register_operation" in str(info.value)
    assert node.status == "failed"
    assert node.error.startswith("OperationError: Unsupported operation type: nowhere")
    assert node.result is None and node.ended_at is not None


def test_non_callable_attribute_is_not_an_operation():
    node = Operation(operation="messages")
    with pytest.raises(OperationError, match="is a Branch attribute, not something"):
        anyio.run(node.invoke, Branch())


def test_standalone_branch_hint_mentions_inclusion():
    node = Operation(operation="custom")
    with pytest.raises(OperationError, match="belongs to no session"):
        anyio.run(node.invoke, Branch())


def test_operation_exception_recorded_and_reraised():
    session = Session()

    async def explode(branch: Branch) -> None:
        raise KeyError("missing key")

    session.register_operation("explode", explode)
    node = Operation(operation="explode")
    with pytest.raises(KeyError):
        anyio.run(node.invoke, session.default_branch)
    assert node.status == "failed" and "KeyError" in node.error and "missing key" in node.error


def test_run_stream_consumed_into_list():
    branch = Branch(chat_model=iModel(provider="offline_cli", model="auto"))
    node = Operation(operation="run", parameters={"instruction": "list files"})
    result = anyio.run(node.invoke, branch)
    assert isinstance(result, list) and len(result) >= 2
    assert isinstance(result[0], Instruction) and isinstance(result[-1], AssistantResponse)
    assert node.result is result and node.status == "completed"


def test_react_stream_consumed_into_list():
    import lion_nb.operations.react  # noqa: F401 - must exist; a broken import fails

    branch = Branch(chat_model=iModel("offline/auto"))
    node = Operation(
        operation="ReActStream", parameters={"instruct": {"instruction": "say something short"}}
    )
    result = anyio.run(node.invoke, branch)
    assert isinstance(result, list) and len(result) >= 1
    assert node.status == "completed"


def test_parameters_override_is_for_one_call_only():
    session = Session()

    async def echo(branch: Branch, **kwargs) -> dict:
        return kwargs

    session.register_operation("echo", echo)
    node = Operation(operation="echo", parameters={"a": 1})
    out = anyio.run(lambda: node.invoke(session.default_branch, parameters={"a": 2, "b": 3}))
    assert out == {"a": 2, "b": 3}
    assert node.parameters == {"a": 1}


def test_reinvoke_resets_and_cancellation_is_recorded():
    session = Session()
    calls = []

    async def slow(branch: Branch, *, seconds: float) -> str:
        calls.append(seconds)
        await anyio.sleep(seconds)
        return "done"

    session.register_operation("slow", slow)
    node = Operation(operation="slow", parameters={"seconds": 5})

    async def cancelled():
        with anyio.move_on_after(0.05):
            await node.invoke(session.default_branch)

    anyio.run(cancelled)
    assert node.status == "failed" and node.error == "cancelled"
    node.parameters["seconds"] = 0
    assert anyio.run(node.invoke, session.default_branch) == "done"
    assert node.status == "completed" and node.error is None
    assert calls == [5, 0]


def test_concurrent_invoke_of_one_node_refused():
    session = Session()
    gate, entered = anyio.Event(), anyio.Event()

    async def wait(branch: Branch) -> str:
        entered.set()
        await gate.wait()
        return "ok"

    session.register_operation("wait", wait)
    node = Operation(operation="wait")
    errors = []

    async def main():
        async with anyio.create_task_group() as tg:
            tg.start_soon(node.invoke, session.default_branch)
            await entered.wait()  # the first invocation is running
            try:
                await node.invoke(session.default_branch)
            except OperationError as exc:
                errors.append(str(exc))
            gate.set()

    anyio.run(main)
    assert errors and "already running" in errors[0]
    assert node.status == "completed"


def test_validation_and_label():
    with pytest.raises(ValueError, match="`operation` needs the name"):
        Operation(operation="")
    branch = Branch()
    node = Operation(operation="chat", branch_id=branch.id)
    assert node.branch_id == str(branch.id)
    assert node.label == f"chat#{node.id.hex[:8]}"
    assert Operation(operation="chat", name="ask").label == "ask"
