"""Numbers a provider reports are not trusted: a cost or a token count that is not a finite
number >= 0 (or that no real call could have) never lowers, poisons or stops the ledger, and
a budget still stops the call that would cross it (ADR-0107, D7). Against real providers: the
fake CLI executables run as subprocesses, and the loopback HTTP server."""

from __future__ import annotations

import json
import math
from contextlib import aclosing
from pathlib import Path

import anyio
import pytest

from lion_nb import Budget, BudgetExceeded, Session, iModel
from lion_nb.errors import ConfigurationError
from lion_nb.session.budget import budget_scope
from tests.fakes.cli import FIXTURES, FakeCLI, fake_cli_on_path

RESULT_USAGE = {
    "input_tokens": 9,
    "cache_creation_input_tokens": 3300,
    "cache_read_input_tokens": 32563,
    "output_tokens": 88,
}
#: the table price of RESULT_USAGE for claude-sonnet-4-5: 9 * 3 + 3300 * 3.75 + 32563 * 0.3
#: + 88 * 15 dollars per million tokens
TABLE_USD = (9 * 3 + 3300 * 3.75 + 32563 * 0.3 + 88 * 15) / 1e6


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeCLI:
    return fake_cli_on_path(monkeypatch, tmp_path)


def claude_reporting(fakes: FakeCLI, cost_text: str) -> None:
    """The fake `claude` replays its tool run, its result line reporting ``cost_text``
    (JSON text, so that ``NaN`` and ``-Infinity`` go over the pipe as the CLI would print
    them) as ``total_cost_usd``."""
    lines = (FIXTURES / "claude_tool_run.jsonl").read_text().splitlines()
    result = json.loads(lines[-1])
    result["usage"] = dict(RESULT_USAGE)
    result["total_cost_usd"] = "@COST@"
    lines[-1] = json.dumps(result).replace('"@COST@"', cost_text)
    fakes.replay(lines)


def runs_until_stopped(branch, most: int) -> tuple[int, BaseException | None]:
    async def main():
        done = 0
        try:
            for i in range(most):
                async with aclosing(branch.run(f"count, take {i}")) as stream:
                    async for _ in stream:
                        pass
                done += 1
        except (BudgetExceeded, ConfigurationError) as exc:
            return done, exc
        return done, None

    return anyio.run(main)


@pytest.mark.parametrize("cost_text", ["NaN", "-100", "-Infinity", "Infinity", '"0.5"', "1e400"])
def test_a_cli_cost_that_is_not_a_finite_number_at_least_zero_is_priced_from_the_table(
    fakes, cost_text
):
    claude_reporting(fakes, cost_text)
    session = Session()
    branch = session.default_branch
    branch.chat_model = iModel(provider="claude_code", model="claude-sonnet-4-5")
    session.budget = Budget(usd=0.04, warn_at=None)
    with pytest.warns(UserWarning, match="total_cost_usd"):
        done, error = runs_until_stopped(branch, 6)
    # a run at the table's $0.0235 leaves room under $0.04 for a second; not for a third
    assert (done, type(error)) == (2, BudgetExceeded), (done, error)
    assert len(fakes.records()) == 2
    spent = session.cost().usd
    assert spent == pytest.approx(2 * TABLE_USD) and math.isfinite(spent)
    final = branch.messages[-1]
    assert final.metadata["cost_usd"] == pytest.approx(TABLE_USD)


def test_an_unpriced_cli_model_whose_cost_is_refused_is_unpriced_and_the_budget_still_stops(
    fakes,
):
    claude_reporting(fakes, "NaN")
    session = Session()
    branch = session.default_branch
    branch.chat_model = iModel(provider="claude_code", model="sonnet")  # not in the table
    with pytest.warns(UserWarning, match="total_cost_usd"):
        runs_until_stopped(branch, 1)
    assert branch.messages[-1].metadata["cost_usd"] is None
    cost = session.cost()
    assert cost.usd is None and cost.unpriced_calls == 1
    # a run whose price is unknown cannot be counted against dollars: the next one is refused
    with budget_scope(Budget(usd=1.0)):
        done, error = runs_until_stopped(branch, 1)
    assert done == 0 and isinstance(error, ConfigurationError)
    assert len(fakes.records()) == 1


def test_a_cli_cost_that_is_a_finite_number_at_least_zero_is_kept(fakes):
    claude_reporting(fakes, "0.02")
    session = Session()
    branch = session.default_branch
    branch.chat_model = iModel(provider="claude_code", model="claude-sonnet-4-5")
    session.budget = Budget(usd=0.03, warn_at=None)
    done, error = runs_until_stopped(branch, 6)
    assert (done, type(error)) == (2, BudgetExceeded)
    assert session.cost().usd == pytest.approx(0.04)
