"""Notebook context: variables and recent cells of a real IPython shell, within the budget,
never a key."""

from __future__ import annotations

import re
from pathlib import Path
from uuid import uuid4

import anyio
import pytest

from extensions.notebook_context import NotebookContext, describe
from lion_nb import Session, iModel
from lion_nb.extensions import load_extension
from lion_nb.tokens import estimate_tokens

EXAMPLES = Path(__file__).resolve().parents[2] / "extensions"


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.testing.globalipapp import start_ipython

    start_ipython()
    ip = InteractiveShell.instance()
    ip.run_line_magic("reset", "-f")
    ip.history_manager.reset()  # In starts again at [1]
    ip.execution_count = 1
    yield ip
    ip.run_line_magic("reset", "-f")


def run(shell, code: str) -> None:
    result = shell.run_cell(code, store_history=True)
    assert result.success, result.error_in_exec or result.error_before_exec


def provided(provider: NotebookContext) -> str | None:
    return anyio.run(provider.provide, None, None)


def test_variables_show_name_type_and_shape_newest_first(shell):
    run(shell, "import json\ncities = ['Lisbon', 'Porto', 'Faro']\nprices = {'a': 1, 'b': 2}")
    run(shell, "n = 42\nname = 'Lisbon'\nratio = 0.5\nnothing = None")
    run(shell, "def plan(city):\n    return city\n\nclass Trip:\n    pass\n\nnotes = 'x' * 500")
    text = provided(NotebookContext())
    lines = text.splitlines()
    assert lines[0] == "The user's Jupyter notebook, as it is now:"
    variables = [line for line in lines if line.startswith("- ")]
    assert variables == [
        "- notes: str, 500 chars",
        "- Trip: class",
        "- plan: function",
        "- nothing: None",
        "- ratio: float = 0.5",
        "- name: str = 'Lisbon'",
        "- n: int = 42",
        "- prices: dict, len 2; keys: 'a', 'b'",
        "- cities: list, len 3",
    ]  # no module (json), no IPython name (In, Out, get_ipython, _)


def test_variables_the_instruction_and_the_latest_cells_mention_come_first(shell):
    run(shell, "alpha = 1\nbeta = 2\ngamma = 3\ndelta = 4")
    run(shell, "beta = beta + 1")  # re-assigned: still where it was first defined in the dict
    text = provided(NotebookContext())
    names = [line.split(":")[0][2:] for line in text.splitlines() if line.startswith("- ")]
    assert names == ["beta", "delta", "gamma", "alpha"]
    asked = anyio.run(NotebookContext().provide, None, "Is gamma right?")
    names = [line.split(":")[0][2:] for line in asked.splitlines() if line.startswith("- ")]
    assert names[:2] == ["gamma", "beta"]


def test_recent_cells_come_from_the_input_history_oldest_first(shell):
    from lion_nb.notebook.state.session import reset_notebook_state

    shell.run_line_magic("load_ext", "lion_nb")
    try:
        run(shell, "a = 1")
        run(shell, "%%lion -q\nthis is a conversation turn, already in the history")
        run(shell, "b = a + 1")
        run(shell, "c = b * 2")
    finally:
        shell.run_line_magic("unload_ext", "lion_nb")
        reset_notebook_state()
    text = provided(NotebookContext(cells=2))
    assert "Recent cells (oldest first):" in text
    assert "In [3]:\n```python\nb = a + 1\n```\nIn [4]:\n```python\nc = b * 2\n```" in text
    assert "In [1]" not in text and "conversation turn" not in text


def test_the_running_cell_is_left_out(shell):
    shell.user_ns["provider"] = NotebookContext()
    run(shell, "x = 1")
    run(shell, "import anyio\ninside = anyio.run(provider.provide, None, None)")
    inside = shell.user_ns["inside"]
    assert "x = 1" in inside and "inside = anyio.run" not in inside


def test_a_key_never_appears_by_value(shell):
    key = "sk-live-" + uuid4().hex
    run(shell, f"OPENAI_API_KEY_VALUE = {key!r}\nclient_token = {key!r}\nSERVICE_API_KEY = {key!r}")
    run(shell, f"headers = {{'Authorization': 'Bearer ' + {key!r}}}")
    run(
        shell,
        "from lion_nb.models.secrets import Secret\nwrapped = Secret('abc-hidden-value-1234')",
    )
    text = provided(NotebookContext(max_tokens=2000, cells=5))
    assert key not in text and "abc-hidden-value-1234" not in text
    assert "- OPENAI_API_KEY_VALUE: str (value hidden)" in text
    assert "- client_token: str (value hidden)" in text
    assert "- SERVICE_API_KEY: str (value hidden)" in text
    assert "- wrapped: Secret (value hidden)" in text
    assert "OPENAI_API_KEY_VALUE = '****'" in text  # the defining cell, masked


def test_the_text_stays_within_its_budget_and_marks_what_was_cut(shell):
    for i in range(60):
        shell.user_ns[f"variable_{i}"] = list(range(i))
    run(shell, "\n".join(f"total_{i} = sum(range({i}))  # a long cell" for i in range(80)))
    run(shell, "last = 'the newest cell'")
    for budget in (40, 120, 400):
        text = provided(NotebookContext(max_tokens=budget, cells=3))
        assert text is not None and estimate_tokens(text) <= budget, budget
        if budget > 40:  # (at 40 tokens only the newest cell fits)
            assert "- …" in text  # not every variable fitted
    roomy = provided(NotebookContext(max_tokens=400, cells=3))
    assert "last = 'the newest cell'" in roomy  # the newest cell gets the room first
    assert "\n…\n```" in roomy  # the long cell was cut


def test_shapes_of_arrays_and_frames():
    class Tensor:  # anything with a shape and a dtype (torch, jax, xarray ...)
        shape = (2, 3)
        dtype = "float32"

    assert describe(Tensor()) == "Tensor (2, 3) float32"
    assert describe(range(5)) == "range, len 5"
    assert describe(b"abc") == "bytes, len 3"
    assert describe(10**50) == "int"  # a long value is not shown


def test_numpy_array_shape_and_dtype():
    np = pytest.importorskip("numpy")
    assert describe(np.zeros((3, 4))) == "ndarray (3, 4) float64"


def test_pandas_frame_shape_and_columns():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"city": ["Lisbon", "Porto"], "visitors": [5, 3]})
    assert describe(frame) == "DataFrame (2, 2); columns: city, visitors"
    assert describe(frame["visitors"]) == "Series (2,) int64"


def test_a_property_that_raises_still_gives_the_type():
    class Odd:
        @property
        def shape(self):
            raise RuntimeError("no shape today")

    assert describe(Odd()) == "Odd"


def test_a_plain_namespace_works_without_ipython():
    provider = NotebookContext({"In": ["", "x = 3"], "x": 3, "_hidden": 1})
    text = provided(provider)
    assert "- x: int = 3" in text and "_hidden" not in text and "x = 3\n```" in text
    assert provided(NotebookContext({})) is None


def test_as_an_extension_every_branch_sends_the_notebook_to_the_model(shell):
    seen: list = []

    def model(messages):
        seen.append(messages[0]["content"])
        return "ok"

    run(shell, "temperatures = [21.5, 23.0, 19.8]")
    session = Session()
    record = load_extension(session, EXAMPLES / "notebook_context.py", max_tokens=300)
    assert record.providers == ("notebook_context",) and record.observers == 1
    branch = session.new_branch(
        name="analyst",
        system="You help with this notebook.",
        chat_model=iModel(provider="offline", model="function", function=model),
    )
    anyio.run(branch.communicate, "What is in my notebook?")
    assert "- temperatures: list, len 3" in seen[0]
    report = branch.last_context_report
    assert [f["name"] for f in report.fired] == ["notebook_context"]
    assert all("temperatures" not in m.rendered for m in branch.messages)  # never recorded
    assert re.search(r"You help with this notebook\.\s+The user's Jupyter notebook", seen[0])
