"""Cancelling `operate` while a tool runs leaves a history every provider accepts.

The requests of a tool-call batch are recorded before the tools run. A cancellation used to
leave them without responses, and the next OpenAI-style request was then refused as
malformed. Now every request gets a response -- the real one for a call that finished, an
error marked ``metadata["cancelled"]`` for one that had not -- before the cancellation goes
on. Checked against the real loopback server: the next request it receives is valid.
"""

from __future__ import annotations

import anyio

from lion_nb import Branch, iModel
from lion_nb.protocols.messages import ActionRequest, ActionResponse
from tests.hardening.wire import anthropic_problems, openai_problems

KEY = "sk-test-cancel-0123456789"


def two_calls() -> dict:
    calls = [
        {"id": "call_fast", "type": "function", "function": {"name": "fast", "arguments": "{}"}},
        {"id": "call_slow", "type": "function", "function": {"name": "slow", "arguments": "{}"}},
    ]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    return {
        "id": "c1",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }


def text(answer: str) -> dict:
    message = {"role": "assistant", "content": answer}
    return {"id": "c2", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


async def fast() -> str:
    """Answers at once."""
    return "fast result"


async def slow() -> str:
    """Takes a long time."""
    await anyio.sleep(30)
    return "never"


def test_cancelling_operate_while_a_tool_runs_keeps_the_history_valid(http_fake):
    model = iModel(
        provider="openai", model="gpt-4o-mini", base_url=http_fake.openai_url, api_key=KEY
    )
    branch = Branch(chat_model=model)
    http_fake.push_json(two_calls())
    http_fake.push_json(text("after the cancel"))

    async def main():
        with anyio.move_on_after(1.0) as scope:
            await branch.operate("check both", tools=[fast, slow])
        answer = await branch.communicate("what now?")
        await model.aclose()
        return scope.cancelled_caught, answer

    cancelled, answer = anyio.run(main)
    assert cancelled
    requests = [m for m in branch.messages if isinstance(m, ActionRequest)]
    responses = {m.call_id: m for m in branch.messages if isinstance(m, ActionResponse)}
    assert [r.call_id for r in requests] == ["call_fast", "call_slow"]
    assert responses["call_fast"].output == "fast result"  # it had finished: kept
    assert not responses["call_fast"].is_error
    assert responses["call_slow"].is_error and responses["call_slow"].metadata["cancelled"]
    assert "cancelled" in responses["call_slow"].output["error"]
    assert all(r.is_responded for r in requests)

    # the request the server received next is one OpenAI accepts, and so is the history
    sent = http_fake.requests[-1].body["messages"]
    assert openai_problems(sent) == []
    assert answer == "after the cancel"
    history = branch.msgs.chat_messages()
    assert openai_problems(history) == []
    assert anthropic_problems(history) == []


def test_a_cancelled_sequential_batch_closes_every_call():
    branch = Branch()
    branch.acts.register_tools([fast, slow])

    async def main():
        with anyio.move_on_after(0.5):
            await branch.act(
                [{"function": "slow", "arguments": {}}, {"function": "fast", "arguments": {}}],
                strategy="sequential",
            )

    anyio.run(main)
    kinds = [m.kind for m in branch.messages]
    assert kinds == ["action_request", "action_request", "action_response", "action_response"]
    assert all(m.is_error for m in branch.messages if isinstance(m, ActionResponse))
    assert openai_problems(branch.msgs.chat_messages()) == []
