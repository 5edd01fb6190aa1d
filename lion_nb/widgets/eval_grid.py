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

from ._base import STATIC, StaticFallback, call_safely, release, stylesheet
from ._throttle import Throttle

__all__ = ["EvalGrid"]

MARKS = {"pass": "✓", "fail": "✗", "flaky": "~", "pending": "…", "error": "✗"}
_ANSWER = 4000  # characters of an answer shown in the detail
_LABEL = 80  # characters of a case label


def _text(value: Any, limit: int) -> str:
    from ..models.secrets import redact

    if value is None:
        text = ""
    elif isinstance(value, str):
        text = value
    else:
        dump = getattr(value, "model_dump_json", None)
        text = dump() if callable(dump) else str(value)
    text = redact(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _case_label(case: Any, case_id: Any) -> str:
    if isinstance(case, dict):
        shown = {k: v for k, v in case.items() if k != "id"}
        first = next(iter(shown.values()), "")
        return _text(f"{case_id}: {first}", _LABEL)
    return _text(f"{case_id}: {case}", _LABEL)


class EvalGrid(StaticFallback, anywidget.AnyWidget):
    """The grid of ``run`` (an `EvalRun`, live, or a saved one); ``compare``: an earlier
    run whose regressions and fixes to mark (default: the run's own ``changes``)."""

    _esm = STATIC / "eval_grid.js"
    _css = traitlets.Unicode().tag(sync=True)

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

    def __init__(self, run: Any, *, compare: Any = None, max_rate: float = 20.0, **kwargs: Any):
        super().__init__(**kwargs)
        self._css = stylesheet()
        self.run = run
        self._compare = compare
        self._cells: list[list[list[Any]]] = []
        self._case_ids: list[Any] = []
        self._subscription: Any = None
        self._throttle = Throttle(self._flush, max_rate)
        self.observe(self._on_selected, names="selected")
        on_change = getattr(run, "on_change", None)
        if callable(on_change) and not getattr(run, "ended", True):
            cancel = on_change(lambda _run: self._throttle.poke())
            self._subscription = _Cancel(cancel)
        self._throttle.flush()

    # -- state -----------------------------------------------------------------------------------
    def _rows(self) -> list[Any]:
        all_rows = getattr(self.run, "all_rows", None)
        return all_rows() if callable(all_rows) else list(self.run.rows)

    def _changes(self) -> Any:
        if self._compare is not None:
            return self.run.compare(self._compare) if hasattr(self._compare, "rows") else None
        return getattr(self.run, "changes", None)

    def _flush(self) -> None:
        run = self.run
        keys = [(p, m) for p in run.prompts for m in run.models]
        column = {k: i for i, k in enumerate(keys)}
        case_index: dict[Any, int] = {}
        labels: list[str] = []
        cells: list[list[list[Any]]] = []
        for row in self._rows():
            if row.case_id not in case_index:
                case_index[row.case_id] = len(labels)
                labels.append(_case_label(row.case, row.case_id))
                cells.append([[] for _ in keys])
            cells[case_index[row.case_id]][column[(row.prompt, row.model)]].append(row)
        changes = self._changes()
        marked: dict[tuple[Any, int], str] = {}
        if changes is not None:
            for kind, sign in (("regressions", "down"), ("fixes", "up")):
                for change in getattr(changes, kind):
                    key = (change.prompt, change.model)
                    if key in column:
                        marked[(change.case_id, column[key])] = sign
        ids = list(case_index)
        marks = [
            [[*_mark(group), marked.get((ids[r], c), "")] for c, group in enumerate(row_cells)]
            for r, row_cells in enumerate(cells)
        ]
        self._cells, self._case_ids = cells, ids
        ended, total = _progress(run)
        state = getattr(run, "state", "finished")
        with self.hold_sync():
            self.title = str(getattr(run, "name", "") or "evaluation")
            self.columns = [f"{p} × {m}" for p, m in keys]
            self.case_labels = labels
            self.marks = marks
            self.has_changes = bool(marked)
            self.status = f"{ended}/{total} cells" + ("" if state == "finished" else f" · {state}")
            if self.selected:
                self.detail = self._detail(*self.selected)

    # -- the detail of one cell ------------------------------------------------------------------
    def _on_selected(self, change: dict[str, Any]) -> None:
        value = change["new"]
        self.detail = call_safely(self._detail, *value) or {} if len(value) == 2 else {}

    def _detail(self, r: int, c: int) -> dict[str, Any]:
        if not (0 <= r < len(self._cells) and 0 <= c < len(self.columns)):
            return {}
        entries = []
        for row in self._cells[r][c]:
            entries.append(
                {
                    "repeat": row.repeat,
                    "state": "pending" if row.passed is None else "pass" if row.passed else "fail",
                    "answer": _text(row.answer, _ANSWER),
                    "reasons": [_text(reason, 400) for reason in row.reasons],
                    "status": row.status,
                }
            )
        return {"title": f"{self.case_labels[r]} — {self.columns[c]}", "entries": entries}

    def shown_rows(self) -> list[int]:
        """The rows the filter lets through (the front end applies the same rule)."""
        return [r for r, row in enumerate(self.marks) if _shown(row, self.filter)]

    def close(self) -> None:
        release(self)
        super().close()

    # -- static renderings -----------------------------------------------------------------------
    def static_text(self) -> str:
        lines = [f"EvalGrid({self.title!r}, {len(self.case_labels)} cases × {len(self.columns)})"]
        lines.append("case | " + " | ".join(self.columns))
        for r in self.shown_rows():
            cells = " | ".join(_cell_text(s, k, ch) for s, k, ch in self.marks[r])
            lines.append(f"{self.case_labels[r]} | {cells}")
        return "\n".join(lines)

    def static_html(self) -> str:
        head = "".join(f"<th>{escape(c)}</th>" for c in self.columns)
        body = "".join(
            f"<tr><td>{escape(self.case_labels[r])}</td>"
            + "".join(f"<td>{escape(_cell_text(s, k, ch))}</td>" for s, k, ch in self.marks[r])
            + "</tr>"
            for r in self.shown_rows()
        )
        return (
            f'<div class="lnb-static"><strong>{escape(self.title)}</strong>'
            f"<table><thead><tr><th>case</th>{head}</tr></thead><tbody>{body}</tbody></table></div>"
        )


class _Cancel:
    def __init__(self, cancel: Any):
        self.cancel = cancel


def _cell_text(state: str, counts: str, change: str) -> str:
    text = MARKS[state] + (f" {counts}" if counts else "")
    return text + {"down": " ↓", "up": " ↑"}.get(change, "")


def _progress(run: Any) -> tuple[int, int]:
    progress = getattr(run, "progress", None)
    if callable(progress):
        return progress()
    return len(run.rows), len(run.rows)


def _mark(rows: list[Any]) -> list[Any]:
    graded = [r for r in rows if r.passed is not None]
    passed = sum(1 for r in graded if r.passed)
    if not rows:
        return ["pending", ""]
    if len(graded) < len(rows):
        state = "pending"
    elif passed == len(graded):
        state = "pass"
    elif passed == 0:
        state = "fail"
    else:
        state = "flaky"
    return [state, f"{passed}/{len(graded)}" if len(rows) > 1 else ""]


def _shown(row: list[list[Any]], mode: str) -> bool:
    if mode == "differences":
        return len({state for state, _k, _c in row}) > 1 or any(s == "flaky" for s, _k, _c in row)
    if mode == "changes":
        return any(change for _s, _k, change in row)
    return True
