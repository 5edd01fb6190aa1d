"""Budgets count a call's thinking: its worst case holds the thinking allowance (Claude's
``budget_tokens``, or the level's allowance for effort-based reasoning) when no
``max_tokens`` bounds it, priced as output; and the ledger prices thinking as output."""

from __future__ import annotations

import anyio
import pytest

from lion_nb import Budget, BudgetExceeded, Session, iModel
from lion_nb.models.anthropic_thinking import BUDGETS
from lion_nb.models.reasoning import thinking_allowance
from tests.fakes.anthropic_thinking import ThinkingAPI
from tests.fakes.http_server import Script, anthropic_message, openai_completion

KEY = "sk-test-thinking-budget-0123"
PRICE = {"input": 1.0, "output": 10.0}


def claude(url: str, **kw) -> iModel:
    return iModel(
        provider="anthropic",
        model="claude-sonnet-4-5-20250929",
        base_url=url,
        api_key=KEY,
        price=PRICE,
        **kw,
    )


def gpt(url: str, **kw) -> iModel:
    return iModel(provider="openai", model="gpt-5.2", base_url=url, api_key=KEY, price=PRICE, **kw)


def branch_with(model: iModel, budget: Budget):
    branch = Session().default_branch
    branch.chat_model = model
    branch.budget = budget
    return branch


def answer_chat(fake) -> None:
    def route(rec):
        if rec.path.endswith("/chat/completions"):
            return Script(body=openai_completion("ok", prompt_tokens=20, completion_tokens=5))
        return None

    fake.routes.append(route)


def test_the_allowance_comes_from_thinking_then_reasoning():
    assert thinking_allowance({}) == 0
    assert thinking_allowance({"reasoning": "medium"}) == BUDGETS["medium"] == 8192
    assert thinking_allowance({"thinking": {"type": "enabled", "budget_tokens": 3000}}) == 3000
    assert thinking_allowance({"thinking": {"type": "adaptive"}}) == BUDGETS["high"]
    assert thinking_allowance({"thinking": {"type": "adaptive"}, "reasoning": "low"}) == 2048
    assert thinking_allowance({"thinking": {"type": "disabled"}, "reasoning": "high"}) == 0


def test_a_token_budget_refuses_a_call_whose_thinking_budget_would_cross_it(http_fake):
    ThinkingAPI(http_fake, [anthropic_message("ok")])
    branch = branch_with(claude(http_fake.anthropic_url, reasoning="medium"), Budget(tokens=5000))
    with pytest.raises(BudgetExceeded) as caught:
        anyio.run(branch.communicate, "Think hard.")
    assert http_fake.requests == []  # not started
    assert caught.value.limit == "tokens" and caught.value.needed > 8192
    assert len(branch.messages) == 0


def test_the_apis_own_thinking_budget_counts_too(http_fake):
    ThinkingAPI(http_fake, [anthropic_message("ok")])
    thinking = {"type": "enabled", "budget_tokens": 6000}
    model = claude(http_fake.anthropic_url, thinking=thinking, max_tokens=None)
    branch = branch_with(model, Budget(tokens=5000))
    with pytest.raises(BudgetExceeded):
        anyio.run(branch.communicate, "Think hard.")
    assert http_fake.requests == []


def test_a_budget_that_bounds_the_call_leaves_the_thinking_its_budget(http_fake):
    ThinkingAPI(http_fake, [anthropic_message("ok")])
    branch = branch_with(claude(http_fake.anthropic_url, reasoning="low"), Budget(tokens=4000))
    assert anyio.run(branch.communicate, "Think a little.") == "ok"
    [sent] = http_fake.requests
    assert sent.body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert 2048 + 16 < sent.body["max_tokens"] <= 4000


def test_a_usd_budget_prices_the_effort_allowance_as_output(http_fake):
    answer_chat(http_fake)
    # high effort: 16,384 tokens at $10 per million could cost $0.16, over a $0.10 budget
    branch = branch_with(gpt(http_fake.openai_url, api="chat", reasoning="high"), Budget(usd=0.1))
    with pytest.raises(BudgetExceeded) as caught:
        anyio.run(branch.communicate, "Prove it.")
    assert caught.value.limit == "usd" and caught.value.needed > 0.16
    assert http_fake.requests == []
    # a `max_tokens` that bounds thinking and answer together is the worst case instead
    assert anyio.run(lambda: branch.communicate("Prove it.", max_tokens=2000)) == "ok"
    assert http_fake.requests[0].body["reasoning_effort"] == "high"


def test_the_ledger_prices_claudes_thinking_as_output(http_fake):
    ThinkingAPI(http_fake, ["anthropic_stream_thinking_tool.sse"])
    branch = Session().default_branch
    branch.chat_model = claude(http_fake.anthropic_url, reasoning="low", stream=True)
    anyio.run(branch.communicate, "What's the weather in Paris?")
    # 618 input, 142 output with the thinking inside
    assert branch.messages[-1].metadata["cost_usd"] == pytest.approx((618 + 142 * 10.0) / 1e6)


def test_a_provider_batch_counts_each_items_thinking_allowance(http_fake):
    from tests.fakes.batch_api import BatchEmulator

    BatchEmulator(http_fake)
    session = Session()
    url = http_fake.openai_url
    session.default_branch.chat_model = gpt(url, api="chat", reasoning="low")
    session.budget = Budget(tokens=10_000, warn_at=None)

    async def main():
        run = session.map(
            [f"item {i}" for i in range(10)], "Say {item}", via="batch", poll_interval=0.01
        )
        await run
        return run

    run = anyio.run(main)
    # each item may think 2,048 tokens: four fit in 10,000, not ten
    done = [r for r in run.items if r.status == "done"]
    assert len(done) == 4
    assert {r.reason for r in run.items if r.status == "pending"} == {"not started (budget)"}


def test_a_budget_bounds_a_chat_completions_reasoning_model_with_max_completion_tokens(
    http_fake,
):
    answer_chat(http_fake)
    branch = branch_with(
        gpt(http_fake.openai_url, api="chat", reasoning="low"), Budget(tokens=4000)
    )
    assert anyio.run(branch.communicate, "Think a little.") == "ok"
    [sent] = http_fake.requests
    assert "max_tokens" not in sent.body  # OpenAI refuses it for reasoning models
    assert 2048 + 16 < sent.body["max_completion_tokens"] <= 4000
    assert sent.body["reasoning_effort"] == "low"
