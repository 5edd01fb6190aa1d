"""The ledger (`branch.cost()`, `session.cost()`, `session.costs()`, a restart) and budgets
that stop spend before it happens, against a real loopback server."""

from __future__ import annotations

import warnings

import anyio
import pytest

from lion_nb import Budget, BudgetExceeded, Cost, LionError, Session, iModel
from lion_nb.protocols.messages import AssistantResponse, Instruction
from lion_nb.runtime.budget import BudgetWarning, budget_scope
from lion_nb.store.store import SessionStore
from tests.fakes.http_server import Script, openai_completion

KEY = "sk-test-budget-abcdef"
FIVE = {"input": 5.0, "output": 5.0}  # $5 per million each: 1,000 + 1,000 tokens = $0.01


def thousand_each(fake) -> None:
    """Every chat completion reports 1,000 input and 1,000 output tokens."""

    def route(rec):
        if rec.path.endswith("/chat/completions"):
            body = openai_completion("ok", prompt_tokens=1000, completion_tokens=1000)
            return Script(body=body)
        return None

    fake.routes.append(route)


def priced_model(fake, price=FIVE) -> iModel:
    return iModel(
        provider="openai", model="gpt-4o-mini", base_url=fake.openai_url, api_key=KEY, price=price
    )


def _calls(fake) -> int:
    return sum(1 for r in fake.requests if r.path.endswith("/chat/completions"))


def test_a_loop_stops_at_the_usd_budget_with_whole_turns_only(http_fake):
    thousand_each(http_fake)
    session = Session()
    branch = session.default_branch
    branch.chat_model = priced_model(http_fake)
    branch.budget = Budget(usd=0.05, warn_at=None)

    async def main():
        done = 0
        with pytest.raises(BudgetExceeded) as caught:
            for i in range(100):
                await branch.communicate(f"step {i}")
                done += 1
        return done, caught.value

    done, error = anyio.run(main)
    # the server counts 2,000 tokens a call: after four ($0.04) the fifth could cost $0.01
    # more on that count (the history only grows), which would cross $0.05
    assert done == _calls(http_fake) == 4
    assert "branch budget of $0.05" in str(error) and "branch.budget" in str(error)
    assert error.where == "branch" and error.spent_usd == pytest.approx(0.04)
    kinds = [type(m) for m in branch.messages]
    assert kinds == [Instruction, AssistantResponse] * 4  # nothing half-recorded
    assert isinstance(error, LionError)
    assert branch.cost().usd == pytest.approx(0.04)


def test_a_session_budget_and_a_scope_budget_apply_too(http_fake):
    thousand_each(http_fake)
    session = Session()
    session.default_branch.chat_model = priced_model(http_fake)
    other = session.new_branch(chat_model=priced_model(http_fake))
    session.budget = 0.03  # dollars

    async def main():
        await session.default_branch.communicate("a")
        await other.communicate("b")
        with pytest.raises(BudgetExceeded, match="session budget"):
            await other.communicate("c")  # $0.02 spent + about $0.01 more > $0.03
        session.budget = Budget(usd=1.0)
        scope = Budget(usd=0.015, warn_at=None)
        with budget_scope(scope), pytest.raises(BudgetExceeded, match="cell budget"):
            await other.communicate("e")
            # $0.01 spent + this call's 2,000 tokens (the server's last count) > $0.015
            await other.communicate("f")

    anyio.run(main)
    assert _calls(http_fake) == 3
    assert session.cost().usd == pytest.approx(0.03)
    assert session.cost().calls == 3


def test_a_token_budget_counts_input_and_output(http_fake):
    thousand_each(http_fake)
    branch = Session().default_branch
    branch.chat_model = priced_model(http_fake, price=None)  # tokens need no price
    branch.budget = Budget(tokens=5000, warn_at=None)

    async def main():
        with pytest.raises(BudgetExceeded, match="5,000 tokens"):
            for i in range(10):
                await branch.communicate(f"step {i}")

    anyio.run(main)
    # 4,000 used; a third call needs about 2,000 more on the server's last count: no third
    assert _calls(http_fake) == 2


def test_an_unpriced_model_under_a_usd_budget_fails_closed_before_any_request(http_fake):
    thousand_each(http_fake)
    branch = Session().default_branch
    branch.chat_model = iModel(
        provider="openai", model="no-such-model-xyz", base_url=http_fake.openai_url, api_key=KEY
    )
    branch.budget = Budget(usd=1.0)

    async def main():
        with pytest.raises(LionError, match=r"no-such-model-xyz.*price=") as caught:
            await branch.communicate("hi")
        return caught.value

    error = anyio.run(main)
    assert not isinstance(error, BudgetExceeded)
    assert _calls(http_fake) == 0 and len(branch.messages) == 0


def test_one_warning_at_warn_at(http_fake):
    thousand_each(http_fake)
    branch = Session().default_branch
    branch.chat_model = priced_model(http_fake)
    branch.budget = Budget(usd=0.1, warn_at=0.5)

    async def main():
        for i in range(8):
            await branch.communicate(f"step {i}")

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        anyio.run(main)
    budget_warnings = [w for w in seen if issubclass(w.category, BudgetWarning)]
    assert len(budget_warnings) == 1
    assert "$0.0500 of the branch budget of $0.1" in str(budget_warnings[0].message)


def test_a_batch_stops_starting_items_at_its_budget_and_retry_finishes_them(http_fake):
    thousand_each(http_fake)
    session = Session()
    session.default_branch.chat_model = priced_model(http_fake)

    async def main():
        run = session.map(
            [f"item {i}" for i in range(100)],
            "Say {item}",
            concurrency=1,
            budget=Budget(usd=0.05, warn_at=None),
        )
        await run
        first = [r.status for r in run.items]
        reasons = {r.reason for r in run.items if r.status == "pending"}
        line = run.progress().line()
        run.budget.usd = 2.0
        await run.retry()
        return run, first, reasons, line

    run, first, reasons, line = anyio.run(main)
    assert first.count("done") <= 5 and first.count("done") == 5
    assert first.count("failed") == 0 and first.count("pending") == 95
    assert reasons == {"not started (budget)"}
    assert "95 not started (budget)" in line
    assert [r.status for r in run.items] == ["done"] * 100
    assert _calls(http_fake) == 100
    assert session.cost().usd == pytest.approx(1.0)


def test_costs_rows_and_their_dataframe(http_fake):
    thousand_each(http_fake)
    session = Session()
    session.default_branch.chat_model = priced_model(http_fake)
    session.default_branch.name = "main"

    async def main():
        await session.default_branch.communicate("a")
        await session.default_branch.communicate("b")

    anyio.run(main)
    rows = session.costs()
    assert [r["branch"] for r in rows] == ["main", "main"]
    assert rows[0]["model"] == "openai/gpt-4o-mini" and rows[0]["usd"] == pytest.approx(0.01)
    frame = rows.to_dataframe()
    assert list(frame["input_tokens"]) == [1000, 1000]
    assert isinstance(session.cost(), Cost)


def test_costs_survive_a_restart_through_the_store(http_fake, tmp_path):
    thousand_each(http_fake)
    session = Session()
    branch = session.default_branch
    branch.chat_model = priced_model(http_fake)

    async def main():
        for i in range(3):
            await branch.communicate(f"step {i}")

    anyio.run(main)
    clone = branch.clone()  # its copies of the history were paid for by `branch`
    session.include_branches(clone)
    store = SessionStore(tmp_path / "sessions.db")
    try:
        store.save(session)
        store.flush()
        restored = store.load(str(session.id))
    finally:
        store.close()
    again = restored.get_branch(branch.id)
    assert again.cost() == branch.cost()
    assert again.cost().usd == pytest.approx(0.03) and again.cost().calls == 3
    assert restored.get_branch(clone.id).cost().calls == 0
    assert restored.cost().usd == pytest.approx(0.03)


def test_a_cli_agents_reported_cost_is_used(tmp_path):
    from lion_nb.models.stream import StreamChunk

    result = StreamChunk(
        type="result",
        metadata={"usage": {"input_tokens": 5, "output_tokens": 2}, "cost_usd": 0.0123},
    )
    model = iModel(
        provider="offline_cli",
        model="scripted",
        turns=[[{"type": "text", "content": "hi"}, result.model_dump()]],
    )
    branch = Session().default_branch
    branch.chat_model = model

    async def main():
        async for _ in branch.run("go"):
            pass

    anyio.run(main)
    cost = branch.cost()
    assert cost.usd == pytest.approx(0.0123) and cost.input_tokens == 5


def test_the_turn_widget_footer_shows_model_tokens_cached_share_and_dollars():
    from lion_nb.widgets.turn import TurnWidget

    widget = TurnWidget("main · communicate")
    answer = AssistantResponse(
        response="ok",
        metadata={
            "model": "anthropic/claude-sonnet-4-5",
            "usage": {"input_tokens": 1000, "output_tokens": 50, "cache_read_tokens": 900},
            "cost_usd": 0.0012,
        },
    )
    widget.message(answer)
    assert widget.footer == "anthropic/claude-sonnet-4-5 · 1,050 tokens (90% cached) · $0.0012"
    widget.branch_total(Cost(usd=0.25, calls=7))
    assert widget.footer.endswith(" · branch $0.2500")
    unpriced = AssistantResponse(
        response="?", metadata={"model": "openai/x", "usage": {"input_tokens": 5}, "cost_usd": None}
    )
    widget.message(unpriced)
    assert "unknown" in widget.footer and "price=" in widget.footer


def test_batch_progress_shows_spend_and_projected_spend(http_fake):
    from lion_nb.widgets.progress import BatchProgress

    thousand_each(http_fake)
    session = Session()
    session.default_branch.chat_model = priced_model(http_fake)

    async def main():
        run = session.map(
            [f"item {i}" for i in range(10)], "Say {item}", concurrency=1, budget=0.03
        )
        await run
        return run

    with pytest.warns(BudgetWarning, match="of the batch budget of"):  # at 80% of $0.03
        run = anyio.run(main)
    widget = BatchProgress(run)
    assert widget.cost.startswith("$0.0300") and "(projected $0.1000)" in widget.cost


def test_a_cli_run_is_checked_against_the_budget_before_it_starts():
    model = iModel(
        provider="offline_cli",
        model="scripted",
        turns=[[{"type": "text", "content": "hi"}]] * 3,
        price={"input": 1000.0, "output": 1000.0},
    )
    branch = Session().default_branch
    branch.chat_model = model
    branch.budget = Budget(usd=0.000001)

    async def main():
        with pytest.raises(BudgetExceeded, match="branch budget"):
            async for _ in branch.run("go on, a long task " * 20):
                pass

    anyio.run(main)
    assert len(branch.messages) == 0  # not even the instruction


def test_a_budget_made_after_calls_without_one_still_applies():
    # budgets are not looked at until one exists: the first one made must take effect at once
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import anyio\n"
        "from lion_nb import Branch, Budget, iModel\n"
        "from lion_nb.errors import BudgetExceeded\n"
        "m = iModel(provider='offline', model='function', function=lambda ms, **kw: 'ok' * 50,"
        " price={'input': 1000.0, 'output': 1000.0})\n"
        "b = Branch(chat_model=m)\n"
        "anyio.run(b.communicate, 'free so far')\n"
        "b.budget = Budget(usd=b.cost().usd + 1e-9)\n"
        "try:\n"
        "    anyio.run(b.communicate, 'over')\n"
        "except BudgetExceeded as exc:\n"
        "    print('refused:', type(exc).__name__)\n"
    )
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "refused: BudgetExceeded"
