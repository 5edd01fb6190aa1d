"""A ledger keeps its rows in columns and gives back exactly the rows it was given: the
branch ids, models, counts, prices (``None`` too) and flags; rows that do not fit the
columns (a branch id that is not a canonical UUID, a count beyond 64 bits) come back whole."""

from __future__ import annotations

import math
import tracemalloc
import uuid

import anyio

from lion_nb import Session, iModel
from lion_nb.runtime.ledger import Ledger, session_ledger
from lion_nb.runtime.ledger_rows import LedgerRows


def _row(i: int, branch_id: str | None = None) -> tuple:
    usd = None if i % 3 == 0 else 0.001 * i
    return (1_700_000_000.0 + i, branch_id or str(uuid.uuid4()), f"openai/m{i % 4}",
            10 * i, i, i % 7, 0, i % 5, usd, i % 2 == 0)  # fmt: skip


def test_rows_come_back_exactly_as_they_were_added() -> None:
    rows = [_row(i) for i in range(300)]
    rows += [
        (1.0, "not-a-uuid", "m", 1, 2, 3, 4, 5, 0.5, True),
        (1.0, str(uuid.uuid4()).upper(), "m", 1, 2, 3, 4, 5, 0.5, False),  # not canonical
        (1.0, str(uuid.uuid4()), "m", 2**70, 2, 3, 4, 5, None, False),  # too big a count
        (1.0, "", "m", 0, 0, 0, 0, 0, 0.0, False),
    ]
    kept = LedgerRows()
    for row in rows:
        kept.append(row)
    assert len(kept) == len(rows)
    assert list(kept) == rows
    assert kept[0] == rows[0] and kept[-1] == rows[-1] and kept[-3] == rows[-3]
    assert kept[10:13] == rows[10:13]
    assert all(type(a) is type(b) for a, b in zip(kept[5], rows[5], strict=True))


def test_totals_and_cost_rows_are_what_a_list_of_rows_gave() -> None:
    ledger = Ledger()
    rows = [_row(i) for i in range(50)]
    for row in rows:
        ledger.add(row)
    assert ledger.calls == 50 and ledger.unpriced == sum(1 for r in rows if r[8] is None)
    assert ledger.spent_usd is None
    out = ledger.as_rows({rows[4][1]: "fourth"})
    assert [r["branch_id"] for r in out] == [r[1] for r in rows]
    assert out[4]["branch"] == "fourth" and out[5]["branch"] == rows[5][1]
    assert [r["usd"] for r in out] == [r[8] for r in rows]
    assert [r["reasoning_tokens"] for r in out] == [r[7] for r in rows]


def _tuple_row(i: int, branch_id: str) -> tuple:
    return (1_700_000_000.0 + i, branch_id, "m", 1000 + i, 300, 0, 0, 0, 0.001 * i, False)


def test_a_row_takes_a_third_of_the_memory_of_a_tuple() -> None:
    ids = [str(uuid.uuid4()) for _ in range(20_000)]
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        kept = LedgerRows()
        for i, branch_id in enumerate(ids):
            kept.append(_tuple_row(i, branch_id))
        columns = tracemalloc.get_traced_memory()[0] - start
        start = tracemalloc.get_traced_memory()[0]
        tuples = [  # each id a string of its own, as a finished item's branch leaves it
            _tuple_row(i, branch_id[:8] + branch_id[8:]) for i, branch_id in enumerate(ids)
        ]
        as_tuples = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert len(tuples) == len(kept)
    assert columns / len(ids) < 100, columns / len(ids)
    assert columns * 2.5 < as_tuples, (columns, as_tuples)


def test_a_sessions_costs_read_back_from_the_columns_after_real_calls() -> None:
    session = Session()
    session.default_branch.chat_model = iModel(provider="offline", model="auto")
    run = session.map([f"row {i}" for i in range(6)], "{item}", concurrency=2)
    anyio.run(run.wait)
    ledger = session_ledger(session)
    costs = session.costs()
    assert ledger.calls == len(costs) == 6
    assert {r["branch_id"] for r in costs} == {str(run.branch(i).id) for i in range(6)}
    assert sum(r["input_tokens"] + r["output_tokens"] for r in costs) == ledger.tokens > 0
    assert all(not math.isnan(r["time"]) for r in costs)
