"""A cell that reaches its budget: the turn view offers to raise it and continue, in a real
in-process IPython shell with priced offline models; and the cost footer of the text view.

Issue -> test
- "a cell that reaches its budget shows it in the turn view with a button to raise the budget
  and continue" -> test_a_cell_budget_offers_to_raise_it_and_runs_the_turn_again,
  test_a_loop_stopped_between_steps_continues_from_what_was_recorded,
  test_the_session_budget_setting_is_raised_too
- the kernel stays free: the continued turn is a background run on its loop
    -> test_a_cell_budget_offers_to_raise_it_and_runs_the_turn_again
- "the live turn view's footer shows model · tokens (cached share) · $ for the turn and the
  branch's running total" (the text view's last line)
    -> test_the_text_view_ends_with_the_cost_footer
"""

from __future__ import annotations

import warnings

import pytest

from lion_nb import BudgetExceeded, current_session
from lion_nb.notebook.cell.cells import TAG
from lion_nb.notebook.cell.resume import CONTINUE, raised_limit
from tests.notebook.nbshell import run

SETUP = """
from lion_nb import iModel
def wipe(path: str) -> str:
    '''Wipe a path.'''
    return f"wiped {path}"
# a dollar per thousand tokens each way: each call costs about a tenth of a dollar
dear = iModel(provider="offline", model="scripted", price={"input": 1000, "output": 1000},
              responses=["Here is the answer."] * 5)
tooled = iModel(provider="offline", model="scripted", price={"input": 1000, "output": 1000},
                responses=[{"tool_calls": [{"name": "wipe", "arguments": {"path": "/x"}}]},
                           "All wiped."])
"""


@pytest.fixture
def nb(ip):
    assert run(ip, SETUP).error is None
    assert run(ip, "%config LionMagics.live_view = 'widget'").error is None
    return ip


def _widget(ran):
    from ipywidgets import Widget

    first = ran.outputs[0].data
    model_id = first["application/vnd.jupyter.widget-view+json"]["model_id"]
    with warnings.catch_warnings():  # the registry's public name is deprecated, not gone
        warnings.simplefilter("ignore", DeprecationWarning)
        return Widget.widgets[model_id]


def _click_raise(ip, widget):
    """The button's comm message, then wait (a cell awaiting the run) for the continued turn."""
    magics = ip.magics_manager.registry["LionMagics"]
    before = set(magics.state.runs)
    widget._on_front_end(widget, {"type": "raise_budget"}, [])
    [new] = set(magics.state.runs) - before
    ip.user_ns["continued"] = magics.state.runs[new]
    return run(ip, "continued_result = await continued")


def test_a_cell_budget_offers_to_raise_it_and_runs_the_turn_again(nb):
    ran = run(nb, "%%lion -m dear --budget 0.001 -o answer\nAnswer me.")
    assert isinstance(ran.error, BudgetExceeded), ran
    widget = _widget(ran)
    assert widget.budget["text"].startswith("The cell budget of $0.001 is reached: $0.0000 spent")
    assert widget.budget["action"].startswith("Raise the cell budget to $")
    assert widget.budget["action"].endswith(" and continue")
    assert widget.status.startswith("failed: BudgetExceeded") and not widget.running
    slot = ran.outputs[1]  # reserved in the cell for the continued turn's answer
    assert slot.data == {"text/plain": ""}
    branch = current_session().default_branch
    assert [m.kind for m in branch.messages] == []  # nothing of the refused turn was recorded

    waited = _click_raise(nb, widget)
    assert waited.error is None, waited
    assert nb.user_ns["continued_result"] == "Here is the answer."
    assert nb.user_ns["answer"] == "Here is the answer."  # `-o` gets the continued answer
    assert [m.kind for m in branch.messages] == ["instruction", "assistant_response"]
    assert branch.messages[0].rendered.strip().endswith("Answer me.")  # the same instruction
    assert widget.status == "done" and widget.budget == {} and not widget.running
    assert "offline/scripted" in widget.footer and "branch $" in widget.footer
    # the answer went to the output the failed cell reserved, not to the awaiting cell
    updates = [o for o in waited.outputs if o.update]
    assert updates and updates[-1].data["text/plain"] == "Here is the answer."
    assert not [o for o in waited.outputs if not o.update]
    assert widget.raise_budget() is False  # the offer is gone once used


def test_a_loop_stopped_between_steps_continues_from_what_was_recorded(nb):
    ran = run(nb, "%%lion -m tooled -t wipe --budget 0.13 -o answer\nWipe /x.")
    assert isinstance(ran.error, BudgetExceeded), ran
    branch = current_session().default_branch
    kinds = [m.kind for m in branch.messages]
    assert kinds == ["instruction", "assistant_response", "action_request", "action_response"]
    widget = _widget(ran)
    assert widget.budget["action"] == "Raise the cell budget to $0.26 and continue"

    waited = _click_raise(nb, widget)
    assert waited.error is None, waited
    assert nb.user_ns["answer"] == "All wiped."
    instructions = [m.rendered for m in branch.messages if m.kind == "instruction"]
    assert len(instructions) == 2 and CONTINUE in instructions[1]  # went on, not over again
    [response] = [m for m in branch.messages if m.kind == "action_response"]
    assert response.output == "wiped /x"  # the tool ran once
    assert "wipe" not in branch.tools  # the cell's tool is still offered for its turn only
    turns = {m.metadata[TAG]["turn"] for m in branch.messages}
    assert len(turns) == 1  # both parts are the cell's one turn


def test_the_session_budget_setting_is_raised_too(nb):
    assert run(nb, "%config LionMagics.session_budget = 0.001").error is None
    ran = run(nb, "%%lion -m dear\nAnswer me.")
    assert isinstance(ran.error, BudgetExceeded), ran
    widget = _widget(ran)
    assert widget.budget["action"].startswith("Raise the session budget to $")
    waited = _click_raise(nb, widget)
    assert waited.error is None, waited
    magics = nb.magics_manager.registry["LionMagics"]
    raised = current_session().budget.usd
    assert raised > 0.001 and magics.session_budget == raised
    again = run(nb, "%%lion -q -m dear\nOnce more.")  # the next cell keeps the raised cap
    assert current_session().budget.usd == raised, again


def test_raised_limits_are_round_and_enough():
    assert raised_limit(0.13, 0.094, 0.047) == 0.26
    assert raised_limit(0.001, 0.0, 0.0003) == 0.002
    assert raised_limit(1.0, 0.9, 2.0) == 4.4  # 1.5 x (spent + the call) beats double
    assert raised_limit(1000, 950, 400, whole=True) == 2100


def test_the_text_view_ends_with_the_cost_footer(ip):
    assert run(ip, SETUP).error is None
    ran = run(ip, "%%lion -m dear\nAnswer me.")
    assert ran.error is None, ran
    footer = [o for o in ran.outputs if o.update][-1].data  # the live view's last state
    assert footer["text/plain"].startswith("[offline/scripted · ")
    assert " tokens · $0." in footer["text/plain"] and " · branch $0." in footer["text/plain"]
    assert "<small>offline/scripted" in footer["text/html"]
    assert ran.outputs[-1].data["text/plain"] == "Here is the answer."  # then the answer
