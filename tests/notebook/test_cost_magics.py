"""`%lion cost`, `%%lion --budget` and `%config LionMagics.session_budget`, in a real
in-process IPython shell with priced offline models."""

from __future__ import annotations

import pytest
from traitlets import TraitError

from lion_nb import BudgetExceeded, current_session
from lion_nb.runtime.budget import BudgetWarning
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
    with pytest.warns(BudgetWarning, match="of the cell budget of"):  # at 80% of it
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
    with pytest.warns(BudgetWarning, match="of the session budget of"):  # at 80% of it
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


# -- the session budget applies at once; a cell budget bounds a call; estimated rows ------------
def test_the_session_budget_caps_plain_awaits_on_the_notebooks_session_at_once(nb):
    assert run(nb, "%config LionMagics.session_budget = 0.0025").error is None
    loop = """
from lion_nb import BudgetExceeded, current_session
b = current_session().default_branch
b.chat_model = priced
stopped = None
try:
    for i in range(20):
        await b.communicate(f"hello {i}")
except BudgetExceeded as exc:
    stopped = exc
"""
    with pytest.warns(BudgetWarning, match="of the session budget of"):  # at 80% of it
        ran = run(nb, loop)  # no %%lion cell ran since the setting
    assert ran.error is None, ran
    assert nb.user_ns["stopped"] is not None and "session budget" in str(nb.user_ns["stopped"])
    assert current_session().budget.usd == 0.0025
    assert current_session().cost().usd <= 0.0025
    assert run(nb, "%config LionMagics.session_budget = None").error is None
    assert current_session().budget is None  # cleared at once too


def test_a_session_made_later_gets_the_session_budget(nb):
    assert run(nb, "%config LionMagics.session_budget = 0.5").error is None
    assert run(nb, "%lion reset --all").error is None
    assert current_session().budget.usd == 0.5


@pytest.fixture
def http_fake():
    """A real provider server on 127.0.0.1 for the test."""
    from tests.fakes.http_server import FakeProvider

    with FakeProvider() as fake:
        yield fake


HTTP_SETUP = """
from lion_nb import iModel
# a dollar per thousand output tokens: a server writing 5,000 tokens would spend $5
pricey = iModel(provider="openai", model="gpt-4o-mini", base_url={url!r}, api_key="sk-test-x",
                price={{"input": 1.0, "output": 1000.0}})
"""


def honoring_max_tokens(rec):
    import json

    from tests.fakes.http_server import Script, openai_completion, openai_deltas

    if not rec.path.endswith("/chat/completions"):
        return None
    out = min(rec.body.get("max_tokens") or 5000, 5000)
    if not rec.body.get("stream"):
        return Script(body=openai_completion("long " * 20, prompt_tokens=12, completion_tokens=out))
    usage = {"prompt_tokens": 12, "completion_tokens": out, "total_tokens": 12 + out}
    last = f"data: {json.dumps({'id': 's', 'choices': [], 'usage': usage})}"
    *deltas, done = openai_deltas(["long "] * 5, finish_reason="length")
    return Script(events=[*deltas, last, done])


def test_a_cell_budget_bounds_a_call_without_max_tokens_and_warns_from_the_cell(ip, http_fake):
    import warnings
    from pathlib import Path

    import lion_nb
    from lion_nb.runtime.budget import BudgetWarning

    http_fake.routes.append(honoring_max_tokens)
    assert run(ip, HTTP_SETUP.format(url=http_fake.openai_url)).error is None
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ran = run(ip, "%%lion -q -m pricey --budget 0.02\nWrite as much as you like.")
    assert ran.error is None, ran
    (sent,) = [r.body for r in http_fake.requests if r.path.endswith("/chat/completions")]
    assert isinstance(sent.get("max_tokens"), int) and sent["max_tokens"] <= 20
    assert current_session().cost().usd <= 0.02
    (warning,) = [w for w in seen if issubclass(w.category, BudgetWarning)]
    assert not warning.filename.startswith(str(Path(lion_nb.__file__).parent))
    assert "\n" not in str(warning.message)


def test_a_cell_budget_too_small_for_any_answer_is_refused_with_the_number(ip, http_fake):
    http_fake.routes.append(honoring_max_tokens)
    assert run(ip, HTTP_SETUP.format(url=http_fake.openai_url)).error is None
    ran = run(ip, "%%lion -q -m pricey --budget 0.0001\nWrite as much as you like.")
    assert isinstance(ran.error, BudgetExceeded), ran
    assert "output tokens" in str(ran.error) and "cell budget of $0.0001" in str(ran.error)
    assert not [r for r in http_fake.requests if r.path.endswith("/chat/completions")]


def test_lion_cost_marks_estimated_rows(ip, http_fake):
    from tests.fakes.http_server import openai_deltas

    http_fake.push_sse(openai_deltas(["half ", "an ", "answer"]), cut_after=2)
    assert run(ip, HTTP_SETUP.format(url=http_fake.openai_url)).error is None
    ran = run(ip, "%%lion -q -m pricey\nWrite.")
    assert ran.error is not None  # the stream broke off after some text
    table = run(ip, "%lion cost").value
    (row,) = [r for r in table.rows if r["model"] == "openai/gpt-4o-mini"]
    assert row["calls"] == "1 (1 estimated)" and row["usd"].startswith("≈$")
    assert "estimated" in table.title
