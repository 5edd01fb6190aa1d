"""`%lion cost`, `%%lion --budget` and `%config LionMagics.session_budget`, in a real
in-process IPython shell with priced offline models."""

from __future__ import annotations

import pytest
from traitlets import TraitError

from lion_nb import BudgetExceeded, current_session
from tests.notebook.nbshell import run, usage_error

SETUP = """
from lion_nb import iModel
# $5 per million tokens each way: every answer below costs a few hundredths of a cent
priced = iModel(provider="offline", model="scripted", responses=["done " * 400] * 50,
                price={"input": 5, "output": 5})
"""


@pytest.fixture
def nb(ip):
    assert run(ip, SETUP).error is None
    return ip


def test_lion_cost_prints_the_table_by_branch_and_model(nb):
    assert run(nb, "%%lion -q\nhello").error is None  # the free offline default
    assert run(nb, "%%lion -q -b paid -m priced\nhello").error is None
    ran = run(nb, "%lion cost")
    assert ran.error is None, ran
    table = ran.value
    rows = {(r["branch"], r["model"]): r for r in table.rows}
    assert rows["main", "offline/auto"]["usd"] == "$0.0000"
    assert rows["paid", "offline/scripted"]["calls"] == 1
    assert rows["paid", "offline/scripted"]["usd"].startswith("$0.00")
    assert "2 calls" in table.title


def test_a_cell_budget_stops_the_cells_calls(nb):
    ran = run(nb, "%%lion -q -b loop -m priced --op ReAct --budget 0.003\nKeep going.")
    assert isinstance(ran.error, BudgetExceeded), ran
    assert "cell budget of $0.003" in str(ran.error)
    assert "Traceback" not in ran.stderr
    kinds = [m.kind for m in current_session().get_branch("loop").messages]
    assert kinds.count("instruction") == kinds.count("assistant_response")


def test_a_bad_cell_budget_is_a_usage_error(nb):
    text = usage_error(nb, "%%lion --budget -1\nhi")
    assert "`--budget -1`" in text and "above 0" in text


def test_session_budget_from_config(nb):
    assert run(nb, "%config LionMagics.session_budget = 0.0025").error is None
    first = run(nb, "%%lion -q -m priced\nhello")
    assert first.error is None, first
    second = run(nb, "%%lion -q -m priced\nhello again")
    assert isinstance(second.error, BudgetExceeded), second
    assert "session budget" in str(second.error)
    assert current_session().budget.usd == 0.0025
    assert run(nb, "%config LionMagics.session_budget = None").error is None
    assert run(nb, "%%lion -q -m priced\nnow it may").error is None
    assert current_session().budget is None
    magics = nb.magics_manager.registry["LionMagics"]
    with pytest.raises(TraitError, match="above 0"):
        magics.session_budget = -2.0
