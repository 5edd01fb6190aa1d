"""Cell options are turn-scoped, and a turn with tools shows its answer.

``-t`` offers tools to its own turn only (``%lion tool`` is what keeps one on a branch); a
turn whose model only called tools answers from their results in a follow-up exchange, so the
cell's value is the answer -- text, or the ``-r`` model's instance -- never operate's record of
the calls; ``-f code`` asks for code and gets a Python block that parses.
"""

from __future__ import annotations

import ast

import pytest

from lion_nb import current_session
from lion_nb.notebook.state.session import notebook_state
from tests.notebook.nbshell import run

SETUP = '''
from pydantic import BaseModel

class Trip(BaseModel):
    city: str
    days: int

calls = []
def weather(city: str) -> str:
    """Today's weather in a city."""
    calls.append(city)
    return f"Sunny in {city}"
'''


@pytest.fixture
def nb(ip):
    assert run(ip, SETUP).error is None
    return ip


def main():
    return current_session().default_branch


def test_cell_tools_are_offered_to_their_turn_only(nb):
    ran = run(nb, "%%lion -t weather\nWhat is the weather in Oslo?")
    assert ran.error is None, ran
    assert nb.user_ns["calls"] == ["Oslo"]
    assert main().tools == {}  # nothing left on the branch
    later = run(nb, "%%lion\nSuggest a museum.")
    assert later.error is None, later
    assert later.value.startswith("Offline model: you asked “Suggest a museum.”")
    assert nb.user_ns["calls"] == ["Oslo"]  # not offered, not called again
    assert "weather" not in str(run(nb, "%lion branches").value)


def test_a_cell_tool_that_replaces_a_branch_tool_is_put_back_after_the_turn(nb):
    assert run(nb, "%lion tool weather").error is None
    registered = main().tools["weather"]
    run(nb, "def weather(city: str) -> str:\n    'Rain today.'\n    return 'rain'")
    ran = run(nb, "%%lion -t weather -q\nUse weather for Rome.")
    assert ran.error is None, ran
    assert "rain" in [m.rendered for m in main().messages if m.kind == "action_response"]
    assert main().tools["weather"] is registered  # the branch's own tool again


def test_a_plain_turn_on_a_branch_with_tools_shows_the_answer(nb):
    assert run(nb, "%lion tool weather").error is None
    before = len(notebook_state().signals)
    ran = run(nb, "%%lion\nWhat is the weather in Oslo?")
    assert ran.error is None, ran
    assert isinstance(ran.value, str), ran.value
    assert ran.value.startswith("Offline model: the tools returned weather → Sunny in")
    shown = "".join(str(o.data) for o in ran.outputs)
    assert '"response": null' not in shown and "action_requests" not in shown
    kinds = [m.kind for m in main().messages]
    assert kinds == [
        "instruction",
        "assistant_response",
        "action_request",
        "action_response",
        "instruction",
        "assistant_response",
    ]
    runs = [s.kind for s in list(notebook_state().signals)[before:] if s.kind.startswith("Run")]
    assert runs == ["RunStart", "RunEnd"]  # the follow-up is part of the cell's one run
    assert main().tools.keys() == {"weather"}  # `%lion tool` keeps it


def test_response_format_on_a_branch_with_tools_is_an_instance(nb):
    assert run(nb, "%lion tool weather").error is None
    ran = run(nb, "%%lion -r Trip -o trip -q\nUse weather for Lisbon, then suggest a short trip.")
    assert ran.error is None, ran
    trip = nb.user_ns["trip"]
    assert isinstance(trip, nb.user_ns["Trip"]) and isinstance(trip.days, int)
    assert nb.user_ns["calls"] == ["Lisbon"]  # the tool ran first


def test_format_code_asks_for_code_and_the_new_cell_holds_python(nb):
    ran = run(nb, "%%lion -f code\nWrite a function that adds two numbers.")
    assert ran.error is None, ran
    code = nb.rl_next_input
    assert code and not code.startswith("Offline model")
    ast.parse(code)  # raises if the new cell is not Python
    asked = [m.rendered for m in main().messages if m.kind == "instruction"][-1]
    assert "Answer with Python code" in asked
