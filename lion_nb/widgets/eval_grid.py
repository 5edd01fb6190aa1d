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
- **Paged rows.** The state holds one page of cases (``page_size``, default 200) and the
  counts (``total_cases``, ``page``); ``selected`` is a row of the page. `next_page` /
  `previous_page` / `show_page` move it, so the state is bounded whatever the case count.
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
        self._subscription: Any = None
        self._throttle = Throttle(self._flush, max_rate)
        self.observe(self._on_selected, names="selected")
        self.observe(lambda _change: self._throttle.flush(), names=["page", "page_size"])
        on_change = getattr(run, "on_change", None)
        if callable(on_change) and not getattr(run, "ended", True):
            self._subscription = _Cancel(on_change(lambda _run: self._throttle.poke()))
        self._throttle.flush()

    def _changes(self) -> Any:
        if self._compare is not None:
            return self.run.compare(self._compare)
        return getattr(self.run, "changes", None)

    def _flush(self) -> None:
        run = self.run
        grid = self._grid = build_grid(run, self._changes())
        progress = getattr(run, "progress", None)
        ended, total = progress() if callable(progress) else (len(run.rows), len(run.rows))
        state = getattr(run, "state", "finished")
        size = max(1, self.page_size)
        last = max(0, (len(grid.labels) - 1) // size)
        start = min(max(0, self.page), last) * size
        with self.hold_sync():
            self.title = str(getattr(run, "name", "") or "evaluation")
            self.columns = grid.columns
            self.total_cases = len(grid.labels)
            if self.page != start // size:
                self.page = start // size
            self.case_labels = grid.labels[start : start + size]
            self.marks = grid.marks[start : start + size]
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

    # -- paging ----------------------------------------------------------------------------------
    @property
    def pages(self) -> int:
        """How many pages of ``page_size`` cases the grid has (at least one)."""
        return max(1, -(-self.total_cases // max(1, self.page_size)))

    def show_page(self, page: int) -> None:
        """Show page ``page`` (clamped to the pages there are); the selection is cleared."""
        self.selected = []
        self.page = min(max(0, page), self.pages - 1)

    def next_page(self) -> None:
        self.show_page(self.page + 1)

    def previous_page(self) -> None:
        self.show_page(self.page - 1)

    def _detail(self, r: int, c: int) -> dict[str, Any]:
        r += self.page * max(1, self.page_size)  # a row of the page shown
        grid = self._grid
        if grid is None or not (0 <= r < len(grid.cells) and 0 <= c < len(grid.columns)):
            return {}
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
        """The rows the filter lets through (the front end applies the same rule)."""
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
        head = f"EvalGrid({self.title!r}, {len(self.case_labels)} cases × {len(self.columns)})"
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
