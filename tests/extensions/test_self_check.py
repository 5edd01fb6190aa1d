"""Self-check: a Middle that performs three recorded exchanges inside one `operate` call
(ADR-0021 D5: a Middle is one logical exchange, not one provider message).

ADR-0021 D5 clause -> test
- an adapter may run a bounded series of recorded inner exchanges (cardinality)
    -> test_operate_through_self_check_records_three_tagged_exchanges,
       test_tools_are_offered_in_the_final_step_and_run_by_operate
"""

from __future__ import annotations

from pathlib import Path

import anyio
from pydantic import BaseModel

from extensions.self_check import CHECK_PROMPT, FINAL_PROMPT, SelfCheck
from lion_nb import Session, iModel
from lion_nb.extensions import load_extension

EXAMPLES = Path(__file__).resolve().parents[2] / "extensions"


class Count(BaseModel):
    primes: int


def recording(requests: list, final: str = '{"primes": 10}'):
    def model(messages, **request):
        requests.append({"asked": messages[-1]["content"], **request})
        asked = messages[-1]["content"]
        if asked.startswith(CHECK_PROMPT):
            return "The draft missed 29."
        if asked.startswith(FINAL_PROMPT):  # followed by the schema it must answer in
            return final
        return "About 9."

    return iModel(provider="offline", model="function", function=model)


def test_operate_through_self_check_records_three_tagged_exchanges():
    requests: list = []
    branch = Session().new_branch(system="Count carefully.", chat_model=recording(requests))
    result = anyio.run(
        lambda: branch.operate(
            instruction="How many primes are below 30?", response_format=Count, middle=SelfCheck()
        )
    )
    assert result == Count(primes=10)
    exchange = list(branch.messages)[1:]
    assert [m.kind for m in exchange] == ["instruction", "assistant_response"] * 3
    assert [m.metadata["self_check"] for m in exchange] == [
        "draft", "draft", "check", "check", "final", "final",
    ]  # fmt: skip
    assert exchange[0].rendered.startswith("How many primes are below 30?")
    assert [r["asked"][: len(CHECK_PROMPT)] for r in requests][1:2] == [CHECK_PROMPT]
    assert requests[2]["asked"].startswith(FINAL_PROMPT)
    # only the final step asks for the schema; the draft and the check are plain text
    assert [r["response_format"] is not None for r in requests] == [False, False, True]


def test_the_later_steps_see_the_earlier_ones():
    seen: list = []

    def model(messages, **request):
        seen.append([m["content"] for m in messages if m["role"] == "assistant"])
        return "ok"

    branch = Session().new_branch(
        system="s", chat_model=iModel(provider="offline", model="function", function=model)
    )
    anyio.run(lambda: branch.operate(instruction="q", middle=SelfCheck()))
    assert [len(s) for s in seen] == [0, 1, 2]


def test_tools_are_offered_in_the_final_step_and_run_by_operate():
    requests: list = []

    def lookup(n: int) -> str:
        """Look a number up."""
        return f"looked up {n}"

    def model(messages, **request):
        requests.append(request.get("tools"))
        if messages[-1]["role"] == "user" and messages[-1]["content"].startswith(FINAL_PROMPT):
            return {"tool_calls": [{"name": "lookup", "arguments": {"n": 29}}]}
        return "fine"

    session = Session()
    branch = session.new_branch(
        system="s", chat_model=iModel(provider="offline", model="function", function=model)
    )
    load_extension(session, EXAMPLES / "self_check.py")
    result = anyio.run(
        lambda: session.run_operation("self_check", branch=branch, instruction="q", tools=[lookup])
    )
    assert [bool(t) for t in requests] == [False, False, True]
    assert [r["output"] for r in result["action_responses"]] == ["looked up 29"]
    kinds = [m.kind for m in branch.messages][-2:]
    assert kinds == ["action_request", "action_response"]


def test_clear_messages_clears_once_before_the_draft():
    branch = Session().new_branch(system="s", chat_model=recording([], final="done"))
    anyio.run(lambda: branch.communicate("an old question"))
    anyio.run(lambda: branch.operate(instruction="new", middle=SelfCheck(), clear_messages=True))
    texts = [m.rendered for m in branch.messages]
    assert "an old question" not in texts
    assert len(branch.messages) == 1 + 6  # the system message and three exchanges


def test_as_an_extension_it_is_the_self_check_operation():
    session = Session()
    session.default_branch.chat_model = recording([], final="Ten.")
    record = load_extension(session, EXAMPLES / "self_check.py")
    assert record.operations == ("self_check",)
    result = anyio.run(lambda: session.run_operation("self_check", instruction="Primes < 30?"))
    assert result == "Ten."
    assert len(session.default_branch.messages) == 6
