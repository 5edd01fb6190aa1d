"""``%%lion --map ITERABLE`` and ``%%lion --compare MODELS`` in a real in-process shell."""

from __future__ import annotations

import pytest

from lion_nb import current_session
from tests.notebook.nbshell import run, usage_error

SETUP = """
from lion_nb import iModel

def play(messages, **request):
    prompt = messages[-1]["content"]
    if "Lima" in prompt:
        raise RuntimeError("no Lima today")
    return "answer: " + prompt

echo = iModel(provider="offline", model="function", function=play)
cities = ["Oslo", "Lima", "Pune"]
style = "one line"
"""


@pytest.fixture
def nb(ip):
    assert run(ip, SETUP).error is None
    return ip


def test_map_runs_the_cell_once_per_item_on_clones(nb):
    ran = run(
        nb,
        "%%lion -b trips -m echo --map cities -o notes\n"
        'Describe {item} (#{index}) in {style}; keep {"k": 1} and {{braces}}.',
    )
    assert ran.error is None, ran
    expected = [
        'answer: Describe Oslo (#0) in one line; keep {"k": 1} and {braces}.',
        None,
        'answer: Describe Pune (#2) in one line; keep {"k": 1} and {braces}.',
    ]
    assert ran.value == expected and nb.user_ns["notes"] == expected
    names = sorted(b.name for b in current_session().branches)
    assert names == ["main", "trips"]  # the items are the run's rows, not members
    (mapped,) = current_session().runs
    assert [b.name for b in mapped.branches] == ["map-1[0]", "map-1[1]", "map-1[2]"]
    trips = current_session().get_branch("trips")
    assert len(trips.messages) == 0  # the items ran on clones of it
    oslo = mapped.branch(0)
    assert oslo.metadata["clone_from"]["id"] == str(trips.id)
    assert "lion" in oslo.messages[0].metadata  # tagged with the cell, like any turn
    shown = "\n".join(o.data.get("text/plain", "") for o in ran.outputs)
    assert "map-1 (live" in shown  # the text progress (no widget front end here)
    assert "✗ [1] Lima → ExecutionError" in shown and "✓ [0] Oslo" in shown


def test_map_over_a_dataframe_shows_and_returns_a_new_column(nb):
    pytest.importorskip("pandas")
    run(nb, "import pandas as pd\ndf = pd.DataFrame({'city': ['Oslo', 'Pune']})")
    ran = run(nb, "%%lion -m echo --map df -q\nVisit {item[city]}")
    assert ran.error is None, ran
    assert list(ran.value["result"]) == ["answer: Visit Oslo", "answer: Visit Pune"]
    assert "result" not in nb.user_ns["df"].columns


def test_map_with_tools_offers_them_to_each_items_clone_only(nb):
    run(nb, 'def weather(city: str) -> str:\n    """Weather."""\n    return "sunny"')
    ran = run(nb, "%%lion -m offline/auto --map cities -t weather -q\nUse weather for {item}.")
    assert ran.error is None, ran
    session = current_session()
    assert "weather" not in session.get_branch("main").tools
    clone = session.runs[-1].branch(0)  # made from its row: the call it made is recorded
    assert any(m.kind == "action_request" and m.function == "weather" for m in clone.messages)


def test_map_in_the_background_returns_the_run_at_once(nb):
    ran = run(nb, "%%lion -m echo --map cities --bg -o later\n{item}")
    assert ran.error is None, ran
    assert type(ran.value).__name__ == "BatchRun"
    run(nb, "job = _")  # the cell's value is the run
    listed = run(nb, "%lion runs")
    assert "{item}" in repr(listed.value)
    waited = run(nb, "results = await job")
    assert waited.error is None, waited
    assert nb.user_ns["results"] == ["answer: Oslo", None, "answer: Pune"]
    assert nb.user_ns["later"] == nb.user_ns["results"]
    assert "Cancelled 0 run(s)" in run(nb, "%lion cancel --all").stdout


def test_compare_runs_the_cell_once_per_model_side_by_side(nb):
    run(nb, "other = iModel(provider='offline', model='scripted', responses=['scripted says hi'])")
    ran = run(nb, "%%lion --compare echo,other -o both\nSay hi")
    assert ran.error is None, ran
    assert ran.value == ["answer: Say hi", "scripted says hi"]
    shown = "\n".join(o.data.get("text/plain", "") for o in ran.outputs)
    assert "── offline/function (" in shown and "── offline/scripted (" in shown
    assert "scripted says hi" in shown and "tokens" in shown
    siblings = [b for b in current_session().branches if b.name.startswith("compare-1")]
    assert len(siblings) == 2
    assert {b.metadata["clone_from"]["id"] for b in siblings} == {
        str(current_session().get_branch("main").id)
    }


def test_mistakes_are_usage_errors(nb):
    assert "no variable named `nowhere`" in usage_error(nb, "%%lion --map nowhere\n{item}")
    assert "cannot be combined" in usage_error(nb, "%%lion --map cities --compare a,b\nx")
    assert "two models" in usage_error(nb, "%%lion --compare echo\nx")
    assert "--policy" in usage_error(nb, "%%lion --map cities --policy append\nx")
    assert "--model" in usage_error(nb, "%%lion --compare echo,echo -m echo\nx")
    assert "not one text" in usage_error(nb, "%%lion --map style\n{item}")
    assert "cannot be filled" in usage_error(nb, "%%lion --map cities\n{item[city]}")
    assert len(current_session().branches) == 1  # nothing ran


def test_map_takes_an_expression_with_spaces(nb):
    ran = run(nb, "%%lion -m echo --map [c for c in cities if c != 'Lima'] -q -o seen\n{item}")
    assert ran.error is None, ran
    assert nb.user_ns["seen"] == ["answer: Oslo", "answer: Pune"]
    quoted = run(nb, '%%lion -m echo --map "cities[:1]" -q -o first\n{item}')
    assert quoted.error is None and nb.user_ns["first"] == ["answer: Oslo"]


PNG_SETUP = """
import base64
png = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAGElEQVR4nGP4z8BAEmIY1TCqYVTDcNIAAHrx/xFPzRp8AAAAAElFTkSuQmCC"
)
from IPython.display import Image
picture = Image(data=png)

def see(messages, **request):
    content = messages[-1]["content"]
    if isinstance(content, str):
        return content
    return " ".join(p.get("text", "") for p in content if p.get("type") == "text")

seer = iModel(provider="offline", model="function", function=see)
"""


def test_map_and_compare_convert_values_as_one_turn_does(nb, tmp_path):
    pytest.importorskip("pandas")
    assert run(nb, PNG_SETUP).error is None
    run(nb, "import pandas as pd\nframe = pd.DataFrame({'km': range(1000), 'city': 'Oslo'})")
    doc = tmp_path / "note.txt"
    doc.write_text("Bring a coat.\n")
    ran = run(
        nb,
        f"%%lion -m seer --map cities -q --file {doc}\n"
        "Compare {item} with {frame} and {picture}.",
    )
    assert ran.error is None, ran
    oslo = ran.value[0]
    assert "1,000 rows × 2 columns" in oslo and "km: int64" in oslo  # the schema, not str()
    assert "Bring a coat." in oslo  # --file's text, as for one turn
    first = current_session().runs[-1].branch(0)
    instruction = next(m for m in first.messages if m.kind == "instruction")
    assert len(instruction.images) == 1 and instruction.images[0].startswith("data:image/png")
    ran = run(nb, "%%lion --compare seer,seer -q\nWhat is {picture}?")
    assert ran.error is None, ran
    compared = [b for b in current_session().branches if b.name.startswith("compare")]
    assert compared and all(
        next(m for m in b.messages if m.kind == "instruction").images for b in compared
    )


def test_lion_branches_lists_a_run_as_one_row_with_its_counts(nb):
    assert run(nb, "%%lion -m echo --map cities -q\n{item}").error is None
    table = run(nb, "%lion branches").value
    text = str(table)
    assert "map-1 (run)" in text and "3 items" in text
    assert "2 done · 1 failed · 0 left" in text
    assert "map-1[0]" not in text  # the items are paged from the run, not listed
    assert current_session().runs[0].page(2, 5)[0]["index"] == 2
