"""``map(via="batch")`` under a budget, against the loopback batch-service fake: the whole
submission's worst case is checked before anything is sent, and what does not fit is left
"not started (budget)", as a live run leaves it."""

from __future__ import annotations

import anyio
import pytest

from lion_nb import Budget, Session, iModel
from tests.fakes.batch_api import BatchEmulator

KEY = "sk-test-batch-budget-0123"
PRICE = {"input": 1000.0, "output": 1000.0}  # a dollar per thousand tokens


def setup(fake) -> Session:
    BatchEmulator(fake)
    session = Session()
    session.default_branch.chat_model = iModel(
        provider="openai", model="gpt-4o-mini", base_url=fake.openai_url, api_key=KEY, price=PRICE
    )
    return session


def batches_sent(fake) -> list:
    return [r for r in fake.requests if r.path.endswith("/batches") and r.method == "POST"]


def run_batch(session, items, **kw):
    async def main():
        run = session.map(items, "Say {item}", via="batch", poll_interval=0.01, **kw)
        await run
        return run

    return anyio.run(main)


def test_a_run_budget_too_small_for_any_item_submits_nothing(http_fake):
    session = setup(http_fake)
    run = run_batch(session, [f"item {i}" for i in range(30)], budget=0.001, max_tokens=50)
    assert not batches_sent(http_fake)
    assert session.cost().calls == 0 and session.cost().usd == 0
    assert {r.status for r in run.items} == {"pending"}
    assert {r.reason for r in run.items} == {"not started (budget)"}
    assert run.state == "stopped"


def test_a_session_budget_cuts_the_batch_to_what_fits(http_fake):
    session = setup(http_fake)
    session.budget = Budget(usd=0.4, warn_at=None)
    # each item's worst case: about 12 input + 50 output tokens at half price, ~$0.03
    run = run_batch(session, [f"item {i}" for i in range(30)], max_tokens=50)
    assert len(batches_sent(http_fake)) == 1
    done = [r for r in run.items if r.status == "done"]
    pending = [r for r in run.items if r.status == "pending"]
    assert 0 < len(done) < 30 and len(done) + len(pending) == 30
    assert {r.reason for r in pending} == {"not started (budget)"}
    assert session.cost().usd <= 0.4


def test_raising_the_run_budget_and_retrying_submits_the_rest(http_fake):
    session = setup(http_fake)
    run = run_batch(session, [f"item {i}" for i in range(6)], budget=0.1, max_tokens=50)
    first = sum(r.status == "done" for r in run.items)
    assert 0 < first < 6
    run.budget.usd = 10.0

    async def again():
        await run.retry()

    anyio.run(again)
    assert [r.status for r in run.items] == ["done"] * 6
    assert run._meter().usd == pytest.approx(session.cost().usd)
