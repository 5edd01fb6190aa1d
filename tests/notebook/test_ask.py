"""``%lion ask`` / ``%lion explain`` lines: the answer is shown once, quiet shows nothing, an
assignment gets the answer, and options are read by the parser, never by scanning the text
-- on the awaited path and on the synchronous fallback (``%autoawait off``) alike."""

from __future__ import annotations

import pytest

from lion_nb import current_session
from tests.notebook.nbshell import run


@pytest.fixture(params=["awaited", "autoawait off"])
def nb(ip, request):
    assert run(ip, "from lion_nb import iModel").error is None
    if request.param == "autoawait off":
        run(ip, "%autoawait False")
    yield ip
    run(ip, "%autoawait True")


def answers_shown(ran, needle):
    """How many outputs (displays and ``Out[n]:`` prints) show text containing ``needle``."""
    shown = [o for o in ran.outputs if needle in o.data.get("text/plain", "")]
    return len(shown) + ran.stdout.count(needle)


def instructions(name=None):
    branch = (
        current_session().default_branch if name is None else current_session().get_branch(name)
    )
    return [m.rendered for m in branch.messages if m.kind == "instruction"]


def test_an_unassigned_ask_shows_its_answer_once_and_is_the_cell_value(nb):
    ran = run(nb, '%lion ask "what is up"')
    assert ran.error is None, ran
    assert answers_shown(ran, "you asked “what is up”") == 1
    assert "Out[" not in ran.stdout
    assert ran.value.startswith("Offline model")  # still the cell's value ...
    assert nb.user_ns["_"] == ran.value  # ... so `_` and Out[n] have it


def test_a_quiet_ask_shows_nothing(nb):
    ran = run(nb, '%lion ask -q "quiet one"')
    assert ran.error is None, ran
    assert ran.outputs == [] and ran.stdout == ""
    assert nb.user_ns["_"].startswith("Offline model")


def test_an_assigned_ask_gets_the_answer_without_a_second_display(nb):
    ran = run(nb, 'a = %lion ask "assigned"\nkind = type(a).__name__')
    assert ran.error is None, ran
    assert nb.user_ns["kind"] == "str" and "assigned" in nb.user_ns["a"]
    assert answers_shown(ran, "you asked “assigned”") == 1


def test_an_unassigned_explain_shows_its_answer_once(nb):
    run(nb, "{}['missing']")
    ran = run(nb, "%lion explain")
    assert ran.error is None, ran
    assert answers_shown(ran, "This notebook cell raised an error") == 1
    assert "Out[" not in ran.stdout


def test_a_quoted_bg_in_the_prompt_is_text_not_an_option(nb):
    ran = run(nb, 'a = %lion ask "Explain what the --bg flag does"\nkind = type(a).__name__')
    assert ran.error is None, ran
    assert nb.user_ns["kind"] == "str"  # an answer, not a background handle
    assert instructions() == ["Explain what the --bg flag does"]
    assert run(nb, "%lion runs").value.rows == []


def test_an_indented_ask_takes_the_fallback_and_still_works(nb):
    ran = run(
        nb, 'if True:\n    b = %lion ask -q -b ind "indented --bg text"\nkind = type(b).__name__'
    )
    assert ran.error is None, ran
    assert nb.user_ns["kind"] == "str"
    assert instructions("ind") == ["indented --bg text"]


def test_ask_bg_option_still_starts_a_background_run(nb):
    ran = run(nb, 'h = %lion ask --bg "in the background"')
    assert ran.error is None, ran
    assert type(nb.user_ns["h"]).__name__ == "RunHandle"
    assert run(nb, "%lion cancel --all").error is None
