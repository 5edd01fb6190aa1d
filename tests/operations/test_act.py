"""act: run tool calls, contain each error, record requests then responses in request order.

Issue 3 item 4 / ADR-0022 D4 -> test
- accepted request forms (ActionRequest, dict, model, list, provider tool call)
    -> test_act_accepts_every_request_form
- every request then every response is recorded, in request order
    -> test_requests_then_responses_are_recorded_in_request_order
- a request already on the branch is not recorded twice -> test_a_recorded_request_is_not_added_again
- concurrent really overlaps; sequential never does
    -> test_concurrent_strategy_runs_calls_together, test_sequential_strategy_runs_one_at_a_time
- each call's error is contained in its response and recorded
    -> test_tool_errors_are_contained_and_recorded
- an unknown tool is a contained error naming the registered tools
    -> test_unknown_tool_names_the_registered_tools
- suppress_errors=False: everything recorded, then the first failure raises
    -> test_suppress_errors_false_records_all_then_raises_the_first_failure
- the recorded batch renders as one assistant tool-call turn and its tool results
    -> test_recorded_batch_renders_as_one_tool_call_turn
"""

from __future__ import annotations

import anyio
import pytest

from lion_nb import ActionRequest, ActionResponse, Branch
from lion_nb.errors import ExecutionError
from lion_nb.models.endpoints import ToolCall
from lion_nb.operations.act_op import ActionRequestModel, act
from lion_nb.operations.types import ActionParam


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def boom(x: int) -> int:
    """Always fails."""
    raise RuntimeError(f"boom {x}")


def _act(branch, requests, **kw):
    return anyio.run(act, branch, requests, ActionParam(**kw))


def test_act_accepts_every_request_form():
    b = Branch(tools=[add])
    forms = [
        ActionRequest(function="add", arguments={"a": 1, "b": 1}),
        {"function": "add", "arguments": {"a": 1, "b": 2}},
        {"name": "add", "arguments": '{"a": 1, "b": 3}', "id": "call_x"},
        ActionRequestModel(function="add", arguments={"a": 1, "b": 4}),
        ToolCall(id="call_y", name="add", arguments={"a": 1, "b": 5}),
    ]
    responses = _act(b, forms)
    assert [r.output for r in responses] == [2, 3, 4, 5, 6]
    assert [r.call_id for r in responses][2:5:2] == ["call_x", "call_y"]
    assert _act(b, {"function": "add", "arguments": {"a": 2, "b": 2}})[0].output == 4
    with pytest.raises(TypeError, match="`function`"):
        _act(b, {"arguments": {}})


def test_requests_then_responses_are_recorded_in_request_order():
    async def slow(n: int) -> int:
        """Sleeps longer for smaller n, so completion order is reversed."""
        await anyio.sleep(0.02 * (3 - n))
        return n

    b = Branch(tools=[slow])
    responses = _act(b, [{"function": "slow", "arguments": {"n": i}} for i in range(3)])
    assert [r.output for r in responses] == [0, 1, 2]
    kinds = [m.kind for m in b.messages]
    assert kinds == ["action_request"] * 3 + ["action_response"] * 3
    assert [m.output for m in b.messages if isinstance(m, ActionResponse)] == [0, 1, 2]
    requests = [m for m in b.messages if isinstance(m, ActionRequest)]
    assert all(q.action_response_id == str(r.id) for q, r in zip(requests, responses, strict=True))


def test_a_recorded_request_is_not_added_again():
    b = Branch(tools=[add])
    request = ActionRequest(function="add", arguments={"a": 1, "b": 1})
    b.msgs.add_message(action_request=request)
    _act(b, request)
    assert [m.kind for m in b.messages] == ["action_request", "action_response"]


def _overlap_tools():
    state = {"active": 0, "peak": 0}

    async def probe(i: int) -> int:
        """Records how many probes run at once."""
        state["active"] += 1
        state["peak"] = max(state["peak"], state["active"])
        await anyio.sleep(0.02)
        state["active"] -= 1
        return i

    return probe, state


def test_concurrent_strategy_runs_calls_together():
    probe, state = _overlap_tools()
    b = Branch(tools=[probe])
    _act(b, [{"function": "probe", "arguments": {"i": i}} for i in range(4)], strategy="concurrent")
    assert state["peak"] == 4


def test_sequential_strategy_runs_one_at_a_time():
    probe, state = _overlap_tools()
    b = Branch(tools=[probe])
    out = _act(
        b, [{"function": "probe", "arguments": {"i": i}} for i in range(4)], strategy="sequential"
    )
    assert state["peak"] == 1 and [r.output for r in out] == [0, 1, 2, 3]


def test_tool_errors_are_contained_and_recorded():
    b = Branch(tools=[add, boom])
    out = _act(
        b,
        [
            {"function": "boom", "arguments": {"x": 1}},
            {"function": "add", "arguments": {"a": 1, "b": 1}},
        ],
    )
    assert out[0].is_error and "boom 1" in out[0].output["error"]
    assert not out[1].is_error and out[1].output == 2
    assert [m.kind for m in b.messages].count("action_response") == 2


def test_unknown_tool_names_the_registered_tools():
    b = Branch(tools=[add, boom])
    (response,) = _act(b, {"function": "mul", "arguments": {}})
    assert response.is_error
    assert "`mul`" in response.output["error"] and "`add`" in response.output["error"]
    assert "`boom`" in response.output["error"]


def test_suppress_errors_false_records_all_then_raises_the_first_failure():
    b = Branch(tools=[add, boom])
    batch = [
        {"function": "add", "arguments": {"a": 1, "b": 1}},
        {"function": "boom", "arguments": {"x": 7}},
        {"function": "boom", "arguments": {"x": 8}},
    ]
    with pytest.raises(ExecutionError, match="`boom` failed: RuntimeError: boom 7") as info:
        _act(b, batch, suppress_errors=False)
    assert len(info.value.action_responses) == 3
    assert [m.kind for m in b.messages] == ["action_request"] * 3 + ["action_response"] * 3


def test_recorded_batch_renders_as_one_tool_call_turn():
    b = Branch(tools=[add])
    b.msgs.add_message(assistant_response="let me add")
    _act(b, [{"function": "add", "arguments": {"a": 1, "b": i}} for i in range(2)])
    rendered = b.msgs.chat_messages()
    assert [m["role"] for m in rendered] == ["assistant", "tool", "tool"]
    ids = [c["id"] for c in rendered[0]["tool_calls"]]
    assert ids == [m["tool_call_id"] for m in rendered[1:]]


def test_act_facade_records_and_returns_responses():
    b = Branch(tools=[add])

    async def go():
        return await b.act(
            {"function": "add", "arguments": {"a": 2, "b": 3}}, strategy="sequential"
        )

    (response,) = anyio.run(go)
    assert response.output == 5 and len(b.messages) == 2
