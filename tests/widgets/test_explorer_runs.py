"""`SessionExplorer` over a session holding a map run: the run is one summary, its items a
page read from the run's compact results, never members of the tree."""

from __future__ import annotations

import json

import anyio
import pytest

from lion_nb import Session, iModel
from lion_nb.widgets import SessionExplorer


def test_a_run_is_one_entry_whose_items_page():
    session = Session()
    session.default_branch.chat_model = iModel(provider="offline", model="auto")
    run = session.map([f"row {i}" for i in range(2_000)], "{item}", concurrency=32)
    anyio.run(run.wait)
    explorer = SessionExplorer(session)
    assert len(explorer.nodes) == 1  # the default branch only
    (summary,) = explorer.tree.runs
    assert summary["run"] == "map-1" and summary["items"] == 2_000 and summary["done"] == 2_000
    state = json.dumps({"nodes": explorer.tree.nodes, "runs": explorer.tree.runs})
    assert len(state) < 2_000  # not a byte per item
    page = explorer.run_page("map-1", 1_990, 50)
    assert [row["index"] for row in page] == list(range(1_990, 2_000))
    assert page[0]["item"] == "row 1990" and page[0]["status"] == "done"
    assert "map-1 (run, 2,000 items: 2,000 done, 0 failed)" in explorer.static_text()
    with pytest.raises(KeyError, match="runs: `map-1`"):
        explorer.run_page("map-9")
    explorer.close()


def _front_end(widget, payload: dict) -> None:
    """A custom message from the front end, as the kernel's comm delivers it."""
    widget._handle_msg(
        {"content": {"data": {"method": "custom", "content": payload}}, "buffers": []}
    )


def _mapped(n: int, **kw) -> tuple[Session, object]:
    session = Session()
    session.default_branch.chat_model = iModel(provider="offline", model="auto")
    run = session.map([f"row {i}" for i in range(n)], "{item}", **kw)
    anyio.run(run.wait)
    return session, run


def test_the_front_end_pages_a_runs_items_and_opens_one_in_the_view():
    session, run = _mapped(120)
    explorer = SessionExplorer(session, run_page_size=50)
    tree = explorer.tree
    _front_end(tree, {"type": "run_page", "run": "map-1", "start": 60})
    page = tree.run_items
    assert (page["run"], page["start"], page["size"], page["total"]) == ("map-1", 50, 50, 120)
    assert [row["index"] for row in page["rows"]] == list(range(50, 100))
    _front_end(tree, {"type": "run_page", "run": "map-1", "start": 10_000})  # past the end
    assert tree.run_items["start"] == 100 and len(tree.run_items["rows"]) == 20
    _front_end(tree, {"type": "run_page", "run": "map-1", "start": "nope"})
    assert tree.run_items["start"] == 0
    assert len(json.dumps(tree.run_items)) < 50 * 200  # one page of short rows, not the run

    _front_end(tree, {"type": "open_item", "run": "map-1", "index": 57})
    shown = explorer.view.branch
    assert shown.id == run.branch(57).id and shown.id not in session
    assert shown.messages[-2].rendered.endswith("row 57")
    assert explorer.selected is None and tree.selected == "" and "map-1[57]" in tree.status
    session.default_branch.msgs.add_message(instruction="a new message elsewhere")
    explorer.refresh()  # the tree follows the session; the item stays shown
    assert explorer.view.branch is shown
    _front_end(tree, {"type": "select", "id": str(session.default_branch.id)})
    assert explorer.selected is session.default_branch

    _front_end(tree, {"type": "close_run"})
    assert tree.run_items == {}
    _front_end(tree, {"type": "run_page", "run": "map-9", "start": 0})  # refused, logged
    assert tree.run_items == {}
    explorer.close()


def test_search_finds_a_runs_items_by_their_row_and_stops_at_its_limit():
    session, _run = _mapped(300)
    explorer = SessionExplorer(session, search_limit=5)
    results = explorer.search("ROW 12")  # row 12, row 120-129: items and their answers
    assert [r["name"] for r in results] == [f"map-1[{i}]" for i in (12, 120, 121, 122, 123)]
    assert all(r["run"] == "map-1" and r["role"] == "item" for r in results)
    assert "<mark>row 12</mark>" in results[0]["snippet"]
    assert explorer.tree.found == 5 and explorer.tree.more is True  # stopped: not a count
    everything = SessionExplorer(session, search_limit=100).search("row 29")
    assert [r["index"] for r in everything] == [29, *range(290, 300)]
    assert SessionExplorer(session).search("   ") == []
    _front_end(explorer.tree, {"type": "open_item", "run": "map-1", "index": results[1]["index"]})
    assert explorer.view.branch.name == "map-1[120]"
    explorer.close()
