"""A run's items are columns read through views: a view's fields read and write the run's
columns exactly (``None`` included), two views of one item are equal, and an item costs
tens of bytes, not the few hundred one object per item took."""

from __future__ import annotations

import tracemalloc

import anyio

from lion_nb import Session, iModel
from lion_nb.session.batch_results import ItemResult, ItemTable


def test_a_views_fields_are_the_columns() -> None:
    table = ItemTable(None, ["a", "b", "c"])
    first = table[0]
    assert (first.status, first.value, first.tokens, first.cost_usd) == ("pending", None, 0, 0.0)
    assert (first.duration, first.attempts, first.error, first.live) == (None, 0, None, None)
    error = ValueError("no")
    first.status, first.value, first.tokens = "failed", {"x": 1}, 2**70  # beyond 64 bits
    first.cost_usd, first.duration, first.error = None, 0.25, error
    first.custom_id, first.reason, first.attempts = "item-0", "why", 3
    again = table[0]
    assert again == first and again is not first and hash(again) == hash(first)
    assert again != table[1] and again != ItemTable(None, ["a"])[0]
    assert (again.status, again.value, again.tokens) == ("failed", {"x": 1}, 2**70)
    assert (again.cost_usd, again.duration, again.error) == (None, 0.25, error)
    assert (again.custom_id, again.reason, again.attempts) == ("item-0", "why", 3)
    assert again.error_text == "ValueError: no" and again.label == "a"
    again.error = again.reason = again.custom_id = None
    again.tokens = 5
    assert (first.error, first.reason, first.custom_id, first.tokens) == (None, None, None, 5)
    assert table.errors == table.reasons == table.custom_ids == table.big_tokens == {}


def test_statuses_are_found_without_a_view_per_item() -> None:
    table = ItemTable(None, list(range(10)))
    for i in (2, 5, 9):
        table[i].status = "failed"
    table[5].status = "done"
    table[7].status = "stopped"
    assert list(table.with_status("failed")) == [2, 9]
    assert list(table.with_status("failed", "stopped")) == [2, 7, 9]
    table[5].value = "five"
    assert table.results() == [None] * 5 + ["five"] + [None] * 4
    added = table.append("ten")
    assert isinstance(added, ItemResult) and added.index == 10 and len(table) == 11
    assert added.status == "pending" and table[-1] == added and table[9:] == [table[9], added]


def test_a_pending_item_costs_tens_of_bytes() -> None:
    items = list(range(100_000))
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        table = ItemTable(None, items)
        per_item = (tracemalloc.get_traced_memory()[0] - start) / len(items)
    finally:
        tracemalloc.stop()
    assert len(table) == 100_000
    assert per_item < 50, per_item  # one object per item with its own fields: about 220


def test_a_map_reads_and_retries_through_the_views() -> None:
    session = Session()
    session.default_branch.chat_model = iModel(provider="offline", model="auto")
    tried: set[str] = set()

    async def once_wrong(branch, prompt):
        if prompt == "row 3" and prompt not in tried:
            tried.add(prompt)
            raise RuntimeError("a first attempt fails")
        return await branch.communicate(prompt)

    run = session.map([f"row {i}" for i in range(5)], "{item}", operation=once_wrong)
    results = anyio.run(run.wait)
    assert results == run.results and results[3] is None and all(results[:3] + results[4:])
    assert [r.status for r in run.items] == ["done"] * 3 + ["failed", "done"]
    assert run.failures == [run.items[3]] and "a first attempt" in run.errors[3]
    assert all(r.duration is not None and r.attempts == 1 for r in run.items)
    assert sum(r.tokens for r in run.items) == run.progress().tokens > 0
    anyio.run(run.retry().wait)
    assert run.items[3].attempts == 2 and run.items[3].status == "done" and not run.failures
    assert run.results[3] and run.items[3].error is None
