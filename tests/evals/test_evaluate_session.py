"""An evaluation belongs to its session: its graders' calls are under the session's budget
and in its ledger, each case is its own conversation whatever the source branch holds, the
cells' branches stay with the run, and a run whose calls all failed says why."""

from __future__ import annotations

from collections import Counter

import anyio
import pytest

from lion_nb import Budget, Session, iModel
from lion_nb.evals import contains, judge

CASES = [{"id": f"c{n}", "n": n} for n in range(4)]
PROMPTS = ["Double #{n}#", "Twice #{n}#"]


def answering(seen: list | None = None, price: float = 0.0) -> iModel:
    """Right for every case; records the messages of each call in ``seen``."""

    def play(messages, **_):
        if seen is not None:
            seen.append(list(messages))
        n = int(messages[-1]["content"].split("#")[1])
        return f"It is {2 * n}."

    return iModel(
        provider="offline",
        model="function",
        function=play,
        price={"input": price, "output": price},
    )


def grader(calls: Counter) -> iModel:
    """A grader at $0.02 a call (about a hundred input tokens at $200 per million)."""

    def play(messages, **_):
        calls["graded"] += 1
        return '{"pass": true, "reason": "doubles it"}'

    return iModel(
        provider="offline",
        model="function",
        function=play,
        price={"input": 200.0, "output": 0.0},
    )


def evaluate(session: Session, **kw):
    async def main():
        return await session.evaluate(CASES, save=False, **kw)

    return anyio.run(main)


# -- the graders' calls are the session's -----------------------------------------------------
def test_a_judge_under_a_session_budget_is_not_started_past_it():
    calls: Counter = Counter()
    session = Session()
    session.budget = Budget(usd=0.001, warn_at=None)
    run = evaluate(
        session,
        prompt=PROMPTS,
        models=[answering()],
        checks=[judge("Doubles the number.", model=grader(calls))],
    )
    assert calls["graded"] == 0  # not one grader call ran past the budget
    assert len(run.rows) == 8
    for row in run.rows:
        assert row.error is None and row.passed is False
        assert "budget of $0.001 is reached" in row.checks[0].reason
    assert session.cost().usd <= 0.001


def test_a_judges_calls_count_against_the_runs_own_budget():
    calls: Counter = Counter()
    run = evaluate(
        Session(),
        prompt=PROMPTS,
        models=[answering()],
        checks=[judge("Doubles the number.", model=grader(calls))],
        budget=Budget(usd=0.03, warn_at=None),
        concurrency=1,
    )
    assert calls["graded"] == 1  # $0.02 spent: a second verdict could pass $0.03
    reasons = [row.checks[0].reason for row in run.rows]
    assert reasons.count("doubles it") == 1
    assert sum("batch budget of $0.03 is reached" in r for r in reasons) == 7


def test_a_judges_calls_are_in_the_session_ledger_and_cost():
    calls: Counter = Counter()
    session = Session()
    run = evaluate(
        session,
        prompt=PROMPTS,
        models=[answering()],
        checks=[judge("Doubles the number.", model=grader(calls))],
    )
    assert calls["graded"] == 8 and all(r.passed for r in run.rows)
    cost = session.cost()
    assert cost.calls == 16  # eight answers, eight verdicts
    rows = session.costs()
    graded = [r for r in rows if r["usd"] > 0]  # the answers are free
    assert len(graded) == 8
    assert sum(r["usd"] for r in graded) > 8 * 0.01
    assert cost.usd == pytest.approx(sum(r["usd"] for r in rows))
    assert all(r.cost_usd == 0.0 for r in run.rows)  # a row's cost is its answer's


# -- each case is its own conversation --------------------------------------------------------
def _with_history(session: Session, turns: int = 14) -> None:
    branch = session.default_branch
    branch.chat_model = iModel(provider="offline", model="auto")

    async def talk():
        for n in range(turns):
            await branch.communicate(f"earlier turn {n}")

    anyio.run(talk)


@pytest.mark.parametrize("system", [None, "Answer with digits."])
def test_each_case_is_its_own_conversation_on_a_branch_with_history(system):
    fresh_seen: list = []
    evaluate(Session(), prompt=PROMPTS[0], models=[answering(fresh_seen)])
    session = Session()
    if system is not None:
        session.default_branch = session.new_branch(system=system)
    _with_history(session)
    history = len(session.default_branch.messages)
    assert history >= 28
    seen: list = []
    run = evaluate(session, prompt=PROMPTS[0], models=[answering(seen)], checks=[contains("It")])
    assert len(seen) == len(CASES) and all(r.passed for r in run.rows)
    sent = sorted(tuple(m["content"] for m in messages) for messages in seen)
    head = (system,) if system is not None else ()
    assert sent == [(*head, f"Double #{n}#") for n in range(len(CASES))]
    assert [len(m) for m in fresh_seen] == [1] * len(CASES)
    assert len(session.default_branch.messages) == history  # the source is untouched


def test_the_cells_branches_stay_with_the_run_not_in_the_session():
    calls: Counter = Counter()
    session = Session()
    _with_history(session, turns=2)
    before = [b.id for b in session.branches]
    spent = session.cost().calls
    run = evaluate(
        session,
        prompt=PROMPTS,
        models=[answering(price=1.0)],
        checks=[judge("Doubles the number.", model=grader(calls))],
    )
    assert [b.id for b in session.branches] == before
    branches = run.branches()
    assert len(branches) == 8 and all(b.id not in session for b in branches)
    assert [b.name for b in branches[:2]] == [f"{run._batch_name}[0]", f"{run._batch_name}[1]"]
    for row in run.rows:
        assert row.branch is not None and row.branch.id not in session
        kinds = [m.kind for m in row.branch.messages]
        assert kinds == ["instruction", "assistant_response"]
        assert row.branch.messages[-1].response == row.answer
    assert session.cost().calls == spent + 16  # the run's calls stay in the session's cost
    session.include_branches(branches[0])  # on request, one joins the session to go on
    assert branches[0].id in session


# -- a run whose calls all failed says why ----------------------------------------------------
def test_a_run_whose_calls_all_failed_names_the_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    session = Session()
    run = evaluate(
        session,
        prompt=PROMPTS[0],
        models=[iModel(provider="openai", model="gpt-4o-mini", max_retries=0)],
        checks=[contains("It")],
    )
    (summary,) = run.summary()
    assert (summary["passed"], summary["total"]) == (0, 4)
    assert summary["errors"] == 4 and summary["failed"] == 0
    assert "no API key" in summary["top_error"]
    text = run.summary_text()
    assert "0/4 passed" in text and "4 errors" in text
    assert "no API key" in text and "OPENAI_API_KEY" in text


def test_errors_and_failed_checks_are_counted_apart():
    def play(messages, **_):
        n = int(messages[-1]["content"].split("#")[1])
        if n == 0:
            raise RuntimeError("the model fell over")
        return "It is right" if n < 3 else "wrong"

    session = Session()
    run = evaluate(
        session,
        prompt=PROMPTS[0],
        models=[iModel(provider="offline", model="function", function=play)],
        checks=[contains("right")],
    )
    (summary,) = run.summary()
    assert (summary["passed"], summary["failed"], summary["errors"]) == (2, 1, 1)
    assert "the model fell over" in summary["top_error"]
    text = run.summary_text()
    assert "2/4 passed" in text and "1 failed its checks" in text and "1 error" in text
