"""EvalGrid by state: the marks of a grid, live while the run proceeds, the differences and
changes filters, a cell's detail on selection, hostile answers as plain text, static views."""

from __future__ import annotations

import anyio

from lion_nb import Session, iModel
from lion_nb.evals import equals
from lion_nb.widgets import EvalGrid

HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
CASES = [{"id": f"c{n}", "q": f"question {n}", "n": n} for n in range(6)]


def model(fn) -> iModel:
    return iModel(provider="offline", model="function", function=fn)


def answers(wrong: set[int], hostile: int | None = None):
    def play(messages, **_):
        n = int(messages[-1]["content"].split("#")[1])
        if n == hostile:
            return HOSTILE
        return "no" if n in wrong else "yes"

    return play


def evaluate(session, **kw):
    return session.evaluate(
        CASES,
        prompt="#{n}#",
        models={"A": model(answers({1, 2})), "B": model(answers({2}, hostile=4))},
        checks=[equals("yes")],
        save=False,
        **kw,
    )


def test_marks_filters_and_the_detail_of_a_cell():
    session = Session()

    async def main():
        run = evaluate(session)
        grid = EvalGrid(run)  # made while the run goes on: it follows it
        assert grid.status.startswith("0/12")
        await run
        grid._throttle.flush()
        return run, grid

    _run, grid = anyio.run(main)
    assert grid.columns == ["prompt × A", "prompt × B"]
    assert grid.case_labels[0] == "c0: question 0"
    states = [[cell[0] for cell in row] for row in grid.marks]
    assert states == [
        ["pass", "pass"],
        ["fail", "pass"],
        ["fail", "fail"],
        ["pass", "pass"],
        ["pass", "fail"],
        ["pass", "pass"],
    ]
    assert grid.status == "12/12 cells"
    grid.filter = "differences"
    assert grid.shown_rows() == [1, 4]
    assert "c0:" not in grid.static_text() and "c1:" in grid.static_text()
    assert [label.split(":")[0] for label in grid.case_labels] == ["c1", "c4"]  # this page
    grid.selected = [1, 1]  # the page's second row: case 4
    detail = grid.detail
    assert detail["title"] == "c4: question 4 — prompt × B"
    (entry,) = detail["entries"]
    assert entry["answer"] == HOSTILE  # plain data: the front end sets it as text
    assert entry["state"] == "fail"
    assert entry["reasons"] == ["equals('yes'): expected 'yes'"]
    assert "<img" not in grid.static_html() and "onerror" not in grid.static_html()


def test_the_regression_view_marks_regressions_and_fixes():
    session = Session()

    async def main():
        first = await session.evaluate(
            CASES,
            prompt="#{n}#",
            models={"A": model(answers({1}))},
            checks=[equals("yes")],
            name="grid-regress",
        )
        second = await session.evaluate(
            CASES,
            prompt="#{n}#",
            models={"A": model(answers({3}))},
            checks=[equals("yes")],
            name="grid-regress",
        )
        return first, second

    _first, second = anyio.run(main)
    grid = EvalGrid(second)  # the run's own comparison with the last run of its name
    assert grid.has_changes
    changes = {r: row[0][2] for r, row in enumerate(grid.marks) if row[0][2]}
    assert changes == {1: "up", 3: "down"}
    grid.filter = "changes"
    assert grid.shown_rows() == [1, 3]
    assert "c3: question 3 | ✗ ↓" in grid.static_text()
    # compared with any other run
    assert not EvalGrid(second, compare=second).has_changes


def test_a_saved_run_shows_too_and_repeats_join_in_one_cell():
    session = Session()
    seen: dict[str, int] = {}

    def sometimes(messages, **_):
        prompt = messages[-1]["content"]
        seen[prompt] = seen.get(prompt, 0) + 1
        return "no" if prompt == "#0#" and seen[prompt] == 2 else "yes"

    async def main():
        return await session.evaluate(
            CASES[:2],
            prompt="#{n}#",
            models=[model(sometimes)],
            checks=[equals("yes")],
            repeat=3,
            name="grid-saved",
        )

    anyio.run(main)
    from lion_nb.evals import last_run

    grid = EvalGrid(last_run("grid-saved"))
    assert grid.marks == [[["flaky", "2/3", ""]], [["pass", "3/3", ""]]]
    grid.selected = [0, 0]
    assert [e["state"] for e in grid.detail["entries"]] == ["pass", "fail", "pass"]


def test_a_grid_whose_calls_failed_names_the_errors_apart_from_failed_checks():
    def play(messages, **_):
        n = int(messages[-1]["content"].split("#")[1])
        if n < 4:
            raise RuntimeError("the service refused")
        return "no"

    session = Session()

    async def main():
        return await session.evaluate(
            CASES, prompt="#{n}#", models={"A": model(play)}, checks=[equals("yes")], save=False
        )

    grid = EvalGrid(anyio.run(main))
    assert grid.status.startswith("6/6 cells · 4 errors, 2 failed their checks · ")
    assert grid.status.endswith(
        "most common error (4 of 4): ExecutionError: `offline/function` failed: the service refused"
    )
    assert "4 errors" in grid.static_text() and "the service refused" in grid.static_text()
    assert grid.marks[0][0][0] == "fail" and grid.marks[5][0][0] == "fail"


def test_a_grid_of_5000_cells_syncs_one_page_and_pages_to_the_right_cells():
    import json

    cases = [{"id": f"c{n}", "n": n} for n in range(2_500)]
    session = Session()
    run = session.evaluate(
        cases,
        prompt="#{n}#",
        models={"A": model(answers(set(range(0, 2_500, 7)))), "B": model(answers(set()))},
        checks=[equals("yes")],
        save=False,
    )
    anyio.run(run.wait)
    grid = EvalGrid(run, page_size=100)
    state = {k: v for k, v in grid.get_state().items() if k != "_esm"}
    assert len(json.dumps(state, default=str).encode()) < 20_000
    assert grid.total_cases == 2_500 and grid.pages == 25 and len(grid.marks) == 100
    assert grid.status == "5000/5000 cells"
    grid.show_page(7)  # cases 700-799: 700 is a multiple of 7, A fails it
    assert grid.case_labels[0] == "c700: 700"
    assert [cell[0] for cell in grid.marks[0]] == ["fail", "pass"]
    grid.selected = [1, 0]  # row 1 of the page: case 701
    assert grid.detail["title"] == "c701: 701 — prompt × A"
    grid.next_page()
    assert grid.page == 8 and grid.selected == [] and grid.case_labels[0] == "c800: 800"
    grid.show_page(99)
    assert grid.page == 24 and grid.case_labels[-1] == "c2499: 2499"
    grid.previous_page()
    assert grid.page == 23

    # the filter runs over every case, not the page shown: A fails every 7th case, B none,
    # so "differences" is those 358 cases, on 4 pages of 100, the first page first
    grid.filter = "differences"
    assert grid.page == 0 and grid.shown_cases == 358 and grid.pages == 4
    assert grid.total_cases == 2_500 and len(grid.marks) == 100
    assert grid.case_labels[:3] == ["c0: 0", "c7: 7", "c14: 14"]
    grid.show_page(3)
    assert grid.case_labels[-1] == "c2499: 2499" and len(grid.marks) == 58
    grid.selected = [57, 0]
    assert grid.detail["title"] == "c2499: 2499 — prompt × A"
    grid.filter = "all"
    assert grid.page == 0 and grid.selected == [] and grid.shown_cases == 2_500
