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
