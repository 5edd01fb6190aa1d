"""An evaluation as a grid: cases as rows, prompt × model as columns, one mark per cell.

A cell joins the case's repeats: ``pass`` (all passed), ``fail`` (none did), ``flaky``
(some did), ``pending`` (not all in yet); with the counts (``2/3``) when there are repeats,
and the change since an earlier run (``down`` regressed, ``up`` fixed). `EvalGrid` shows
this live; the notebook prints it as text where no widget can show. Pure data: nothing
here is HTML but `Grid.html`, which escapes every value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import Any

__all__ = ["MARKS", "Grid", "build_grid", "shown"]

MARKS = {"pass": "✓", "fail": "✗", "flaky": "~", "pending": "…"}
_LABEL = 80


def clip(value: Any, limit: int) -> str:
    """Text for a reader: a model's answer as text, secrets redacted, clipped."""
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
        shown_fields = [v for k, v in case.items() if k != "id"]
        return clip(f"{case_id}: {shown_fields[0] if shown_fields else ''}", _LABEL)
    return clip(f"{case_id}: {case}", _LABEL)


@dataclass(slots=True)
class Grid:
    columns: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    marks: list[list[list[Any]]] = field(default_factory=list)  # [state, counts, change]
    cells: list[list[list[Any]]] = field(default_factory=list)  # the rows of each cell
    has_changes: bool = False

    def shown_rows(self, mode: str = "all") -> list[int]:
        return [r for r, row in enumerate(self.marks) if shown(row, mode)]

    def text(self, mode: str = "all") -> str:
        lines = ["case | " + " | ".join(self.columns)]
        for r in self.shown_rows(mode):
            lines.append(f"{self.labels[r]} | " + " | ".join(cell_text(*m) for m in self.marks[r]))
        return "\n".join(lines)

    def html(self, mode: str = "all") -> str:
        head = "".join(f"<th>{escape(c)}</th>" for c in self.columns)
        body = "".join(
            f"<tr><td>{escape(self.labels[r])}</td>"
            + "".join(f"<td>{escape(cell_text(*m))}</td>" for m in self.marks[r])
            + "</tr>"
            for r in self.shown_rows(mode)
        )
        return f"<table><thead><tr><th>case</th>{head}</tr></thead><tbody>{body}</tbody></table>"


def build_grid(run: Any, changes: Any = None) -> Grid:
    keys = [(p, m) for p in run.prompts for m in run.models]
    column = {k: i for i, k in enumerate(keys)}
    all_rows = getattr(run, "all_rows", None)
    rows = all_rows() if callable(all_rows) else list(run.rows)
    case_index: dict[Any, int] = {}
    grid = Grid(columns=[f"{p} × {m}" for p, m in keys])
    for row in rows:
        if row.case_id not in case_index:
            case_index[row.case_id] = len(grid.labels)
            grid.labels.append(_case_label(row.case, row.case_id))
            grid.cells.append([[] for _ in keys])
        grid.cells[case_index[row.case_id]][column[(row.prompt, row.model)]].append(row)
    marked: dict[tuple[Any, int], str] = {}
    if changes is not None:
        for kind, sign in (("regressions", "down"), ("fixes", "up")):
            for change in getattr(changes, kind):
                key = (change.prompt, change.model)
                if key in column:
                    marked[(change.case_id, column[key])] = sign
    ids = list(case_index)
    grid.marks = [
        [[*mark(group), marked.get((ids[r], c), "")] for c, group in enumerate(row_cells)]
        for r, row_cells in enumerate(grid.cells)
    ]
    grid.has_changes = bool(marked)
    return grid


def mark(rows: list[Any]) -> list[Any]:
    """``[state, counts]`` of one cell's rows (its repeats)."""
    if not rows:
        return ["pending", ""]
    graded = [r for r in rows if r.passed is not None]
    passed = sum(1 for r in graded if r.passed)
    if len(graded) < len(rows):
        state = "pending"
    elif passed == len(graded):
        state = "pass"
    elif passed == 0:
        state = "fail"
    else:
        state = "flaky"
    return [state, f"{passed}/{len(graded)}" if len(rows) > 1 else ""]


def cell_text(state: str, counts: str, change: str = "") -> str:
    text = MARKS.get(state, "?") + (f" {counts}" if counts else "")
    return text + {"down": " ↓", "up": " ↑"}.get(change, "")


def shown(row: list[list[Any]], mode: str) -> bool:
    """Whether the filter ``mode`` (all, differences, changes) lets a row through; the
    front end applies the same rule."""
    if mode == "differences":
        states = {m[0] for m in row}
        return len(states) > 1 or "flaky" in states
    if mode == "changes":
        return any(m[2] for m in row)
    return True
