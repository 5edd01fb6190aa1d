"""`EvalGrid`: an evaluation's prompts × models × cases grid, live while it runs.

Columns are prompt × model, rows are cases; a cell joins the case's repeats: ✓ all passed,
✗ none did, ~ some did (flaky), … not all in yet. A click (or Enter / Space on the focused
cell) shows that cell's answers and the reasons of every failed check. Two filters:
**differences only** hides the rows whose cells all agree (all ✓ or all ✗), and **changes**
(when the run is compared with an earlier one) shows only the rows with a regression or a
fix, which are marked in their cells (↓ regressed, ↑ fixed).

Decisions:

- **Plain data only.** Every string the front end shows -- answers above all, which are
  model output -- is sent as data and set with ``textContent``; nothing is HTML, so a hostile
  answer (``<img onerror=...>``, ``<script>``) shows its characters and runs nothing. Every
  shown string passes `lion_nb.models.secrets.redact`.
- **The kernel keeps the rows; the front end asks for one cell.** The grid state is a
  compact table of marks (a few bytes a cell); the answers and reasons of a cell are sent
  when it is opened (``selected`` → ``detail``), so a 600-cell grid costs no answer text
  until it is read.
- **Paged rows, filtered in the kernel.** The filter is applied here, to every case, and
  the state holds one page of the cases it lets through (``page_size``, default 200), with
  the counts (``total_cases``, ``shown_cases``, ``page``); ``selected`` is a row of that
  page. `next_page` / `previous_page` / `show_page` (and the grid's own page buttons) move
  it, and a new filter starts at its first page, so the state is bounded whatever the case
  count and a filter finds its rows on every page, not only on the one shown.
- **Static renderings** hold the marks as they are when the grid is displayed (no times);
  a grid made for a running cell (``live=True``) has empty ones, as the batch progress
  has: the cell shows the finished results as their own output.
- **Live through one throttle.** The run's changes poke a `Throttle` (at most ``max_rate``
  updates a second), as every widget does (ADR-0102 D4).
- **Accessible** (ADR-0102 D7): the grid is a WAI-ARIA grid (roving tabindex, arrows,
  Home/End, Enter/Space opens a cell), marks are symbols as well as colours (accent colours
  mark borders only), the detail is a labelled region read politely when it changes.
"""

from __future__ import annotations

from html import escape
from typing import Any

import anywidget
import traitlets

from ..evals.grid import build_grid, clip
from ._base import StaticFallback, call_safely, esm, release
from ._throttle import Throttle

__all__ = ["EvalGrid"]

_ANSWER = 4000  # characters of an answer shown in the detail


class EvalGrid(StaticFallback, anywidget.AnyWidget):
    """The grid of ``run`` (an `EvalRun`, live, or a saved one); ``compare``: an earlier
    run whose regressions and fixes to mark (default: the run's own ``changes``)."""

    _esm = esm("eval_grid.js")

    title = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    columns = traitlets.List(traitlets.Unicode()).tag(sync=True)
    case_labels = traitlets.List(traitlets.Unicode()).tag(sync=True)
    marks = traitlets.List().tag(sync=True)  # per row: per column [state, "k/n", change]
    filter = traitlets.Unicode("all").tag(sync=True)  # all | differences | changes
    has_changes = traitlets.Bool(False).tag(sync=True)
    selected = traitlets.List(traitlets.Int(), default_value=[]).tag(sync=True)
    detail = traitlets.Dict().tag(sync=True)
    height = traitlets.Unicode("28em").tag(sync=True)
    page = traitlets.Int(0).tag(sync=True)  # which page of ``page_size`` cases is shown
    page_size = traitlets.Int(200).tag(sync=True)
    total_cases = traitlets.Int(0).tag(sync=True)
    shown_cases = traitlets.Int(0).tag(sync=True)  # the cases the filter lets through

    def __init__(
        self,
        run: Any,
        *,
        compare: Any = None,
        max_rate: float = 20.0,
        live: bool = False,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self._live = live
        self.run = run
        self._compare = compare
        self._grid: Any = None
        self._page_rows: list[int] = []  # the grid's rows shown on the page, in order
        self._stale = True  # the run changed since the grid was built
        self._subscription: Any = None
        self._throttle = Throttle(self._flush, max_rate)
        self.observe(self._on_selected, names="selected")
        self.observe(lambda _change: self._throttle.flush(), names=["page", "page_size"])
        self.observe(self._on_filter, names="filter")
        on_change = getattr(run, "on_change", None)
        if callable(on_change) and not getattr(run, "ended", True):
            self._subscription = _Cancel(on_change(lambda _run: self._run_changed()))
        self._throttle.flush()

    def _changes(self) -> Any:
        if self._compare is not None:
            return self.run.compare(self._compare)
        return getattr(self.run, "changes", None)

    def _run_changed(self) -> None:
        self._stale = True
        self._throttle.poke()

    def _flush(self) -> None:
        run = self.run
        if self._stale or self._grid is None:  # a new page or filter reuses the grid
            self._stale = False
            self._grid = build_grid(run, self._changes())
        grid = self._grid
        progress = getattr(run, "progress", None)
        ended, total = progress() if callable(progress) else (len(run.rows), len(run.rows))
        state = getattr(run, "state", "finished")
        size = max(1, self.page_size)
        rows = grid.shown_rows(self.filter)
        last = max(0, (len(rows) - 1) // size)
        start = min(max(0, self.page), last) * size
        self._page_rows = rows[start : start + size]
        with self.hold_sync():
            self.title = str(getattr(run, "name", "") or "evaluation")
            self.columns = grid.columns
            self.total_cases = len(grid.labels)
            self.shown_cases = len(rows)
            if self.page != start // size:
                self.page = start // size
            self.case_labels = [grid.labels[r] for r in self._page_rows]
            self.marks = [grid.marks[r] for r in self._page_rows]
            self.has_changes = grid.has_changes
            status = f"{ended}/{total} cells" + ("" if state == "finished" else f" · {state}")
            errors = run.errors()
            if errors is not None:  # calls that failed, apart from checks that did, and why
                status += " · " + " · ".join(clip(text, 300) for text in errors)
            self.status = status
            if self.selected:
                self.detail = self._detail(*self.selected)

    # -- the detail of one cell ------------------------------------------------------------------
    def _on_selected(self, change: dict[str, Any]) -> None:
        value = change["new"]
        self.detail = (call_safely(self._detail, *value) or {}) if len(value) == 2 else {}

    def _on_filter(self, _change: dict[str, Any]) -> None:
        """A new filter: its first page, nothing selected (a row number means another case)."""
        self.selected = []
        if self.page != 0:
            self.page = 0  # its observer shows the page: one build of it, not two
        else:
            self._throttle.flush()

    # -- paging ----------------------------------------------------------------------------------
    @property
    def pages(self) -> int:
        """How many pages of ``page_size`` cases the filter lets through (at least one)."""
        return max(1, -(-self.shown_cases // max(1, self.page_size)))

    def show_page(self, page: int) -> None:
        """Show page ``page`` (clamped to the pages there are); the selection is cleared."""
        self.selected = []
        self.page = min(max(0, page), self.pages - 1)

    def next_page(self) -> None:
        self.show_page(self.page + 1)

    def previous_page(self) -> None:
        self.show_page(self.page - 1)

    def _detail(self, r: int, c: int) -> dict[str, Any]:
        grid = self._grid
        if grid is None or not (0 <= r < len(self._page_rows) and 0 <= c < len(grid.columns)):
            return {}
        r = self._page_rows[r]  # the page's row r is this row of the whole grid
        entries = [
            {
                "repeat": row.repeat,
                "state": "pending" if row.passed is None else "pass" if row.passed else "fail",
                "answer": clip(row.answer, _ANSWER),
                "reasons": [clip(reason, 400) for reason in row.reasons],
                "status": row.status,
            }
            for row in grid.cells[r][c]
        ]
        return {"title": f"{grid.labels[r]} — {grid.columns[c]}", "entries": entries}

    def shown_rows(self) -> list[int]:
        """The rows of the whole grid the filter lets through (every page's)."""
        return self._grid.shown_rows(self.filter)

    def close(self) -> None:
        release(self)
        super().close()

    # -- static renderings -----------------------------------------------------------------------
    def static_text(self) -> str:
        if self._live:  # a running cell's view: the cell shows the results as their own output
            return ""
        return self.grid_text()

    def grid_text(self) -> str:
        """The grid as text: the rows the filter lets through."""
        head = f"EvalGrid({self.title!r}, {self.total_cases} cases × {len(self.columns)})"
        errors = self.run.errors()
        if errors is not None:
            head += "\n" + "; ".join(clip(text, 300) for text in errors)
        return head + "\n" + self._grid.text(self.filter)

    def static_html(self) -> str:
        if self._live:
            return ""
        return (
            f'<div class="lnb-static"><strong>{escape(self.title)}</strong>'
            f"{self._grid.html(self.filter)}</div>"
        )


class _Cancel:
    def __init__(self, cancel: Any):
        self.cancel = cancel
