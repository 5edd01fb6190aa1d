"""Data frames and series (pandas, polars) as a schema, statistics and a sample.

What a model needs to reason about a table is its shape, every column's name, type and
missing values, a few numbers per numeric column, and some rows from each end -- not
pandas' print of the first and last five rows. The schema always goes in (a frame of
thousands of columns gets as many as fit and a count of the rest); the statistics and then
the sample shrink until the text fits the budget. Nothing here scans a column more than once
or sorts it, so a 1,000,000-row frame takes a fraction of a second.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..tokens import estimate_tokens
from .content import Content, fit_text

__all__ = ["pandas_frame", "pandas_series", "polars_frame", "polars_lazy", "polars_series"]

_SAMPLES = (5, 3, 2, 1, 0)  # rows from each end, tried in turn
_CELL = 60  # characters a sampled cell may show


def _fit(parts: list[list[str]], budget: int) -> tuple[str, int]:
    """Join the first candidate (a list of sections) that fits ``budget``; its index."""
    for i, sections in enumerate(parts):
        text = "\n\n".join(s for s in sections if s)
        if estimate_tokens(text) <= budget:
            return text, i
    return fit_text("\n\n".join(s for s in parts[-1] if s), budget), len(parts) - 1


def _schema_lines(rows: list[tuple[str, str, int]], length: int, budget: int) -> str:
    """``name: dtype, N missing`` per column, as many as fit three quarters of the budget."""
    lines, used = [], 0
    for name, dtype, nulls in rows:
        missing = f", {nulls:,} missing" if nulls else ""
        line = f"  {name}: {dtype}{missing}"
        used += estimate_tokens(line) + 1
        if used > budget * 3 // 4 and lines:
            lines.append(f"  … {len(rows) - len(lines):,} more columns not listed")
            break
        lines.append(line)
    return "Columns (name: dtype, missing values):\n" + "\n".join(lines)


def _shape(kind: str, rows: int, cols: int | None) -> str:
    return f"{kind}: {rows:,} rows" + (f" × {cols:,} columns" if cols is not None else "")


def _summary(rows: int, cols: int | None, sample: int) -> str:
    shape = f"{rows:,} × {cols:,}" if cols is not None else f"{rows:,} values"
    return f"{shape}, {sample}-row sample" if sample else f"{shape}, no sample"


def _frame_content(
    head: str,
    schema: str,
    stats: str,
    sample: Callable[[int], str],
    rows: int,
    cols: int,
    budget: int,
) -> Content:
    """A data frame's sections with the most sampled rows (``sample(n)``: ``n`` from each end)
    that fit ``budget``; last, without statistics or sample."""
    candidates = [[head, schema, stats, sample(n)] for n in _SAMPLES]
    candidates.append([head, schema, "", ""])
    text, i = _fit(candidates, budget)
    shown = _SAMPLES[i] * 2 if i < len(_SAMPLES) else 0
    return Content(text=text, summary=_summary(rows, cols, min(shown, rows)))


def _num(value: Any) -> str:
    try:
        return f"{float(value):.4g}" if not isinstance(value, (bool, int)) else str(value)
    except (TypeError, ValueError):
        return str(value)


# -- pandas --------------------------------------------------------------------------------------
def _pd_sample(frame: Any, n: int) -> str:
    length = len(frame)
    if n == 0 or length == 0:
        return ""
    kw = {"max_colwidth": _CELL, "max_cols": 40}
    if length <= 2 * n:
        return f"All {length:,} rows:\n" + frame.to_string(**kw)
    return (
        f"First {n} rows:\n{frame.head(n).to_string(**kw)}\n\n"
        f"Last {n} rows:\n{frame.tail(n).to_string(**kw)}"
    )


def _pd_stats(frame: Any, nulls: Any) -> str:
    """Mean, standard deviation, minimum and maximum of the numeric columns, with NumPy on
    each column's values (pandas' ``std`` copies the data twice and takes ten times longer)."""
    import numpy as np  # loaded already: pandas needs it

    numeric = frame.select_dtypes(include="number").iloc[:, :40]
    if numeric.shape[1] == 0:
        return ""
    rows = []
    for column in numeric.columns:
        values = numeric[column].to_numpy(dtype="float64", na_value=np.nan)
        if nulls[column]:
            values = values[~np.isnan(values)]
        if not len(values):
            rows.append((str(column), "all missing"))
            continue
        mean = values.mean()
        std = np.sqrt(np.square(values - mean).sum() / max(len(values) - 1, 1))
        stats = (mean, std, values.min(), values.max())
        rows.append((str(column), "  ".join(f"{v:>10.4g}" for v in stats)))
    width = max(len(c) for c, _ in rows)
    head = " " * width + "  " + "  ".join(f"{h:>10}" for h in ("mean", "std", "min", "max"))
    lines = [head] + [f"{c:<{width}}  {v}" for c, v in rows]
    return "Summary statistics (numeric columns):\n" + "\n".join(lines)


def pandas_frame(frame: Any, name: str | None, budget: int) -> Content:
    rows, cols = frame.shape
    nulls = frame.isna().sum()
    schema = _schema_lines(
        [(str(c), str(t), int(nulls.iloc[i])) for i, (c, t) in enumerate(frame.dtypes.items())],
        rows,
        budget,
    )
    head = _shape("DataFrame", rows, cols)
    stats = _pd_stats(frame, nulls) if rows else ""
    return _frame_content(head, schema, stats, lambda n: _pd_sample(frame, n), rows, cols, budget)


def pandas_series(series: Any, name: str | None, budget: int) -> Content:
    length = len(series)
    nulls = int(series.isna().sum())
    label = f" `{series.name}`" if series.name is not None else ""
    head = f"Series{label}: {length:,} values, dtype {series.dtype}, {nulls:,} missing"
    stats = ""
    if length and series.dtype.kind in "iufb":
        values = {"mean": series.mean(), "std": series.std(), "min": series.min()}
        values["max"] = series.max()
        stats = "Summary statistics: " + ", ".join(f"{k} {_num(v)}" for k, v in values.items())
    frame = series.to_frame()
    candidates = [[head, stats, _pd_sample(frame, n)] for n in _SAMPLES]
    text, i = _fit(candidates, budget)
    return Content(text=text, summary=_summary(length, None, min(_SAMPLES[i] * 2, length)))


# -- polars --------------------------------------------------------------------------------------
def _pl_sample(frame: Any, n: int) -> str:
    length = frame.height
    if n == 0 or length == 0:
        return ""
    if length <= 2 * n:
        return f"All {length:,} rows:\n{frame}"
    return f"First {n} rows:\n{frame.head(n)}\n\nLast {n} rows:\n{frame.tail(n)}"


def polars_frame(frame: Any, name: str | None, budget: int) -> Content:
    rows, cols = frame.shape
    nulls = frame.null_count().row(0) if cols else ()
    schema = _schema_lines(
        [(str(c), str(t), int(nulls[i])) for i, (c, t) in enumerate(frame.schema.items())],
        rows,
        budget,
    )
    head = _shape("polars DataFrame", rows, cols)
    stats = ""
    numeric = [c for c, t in frame.schema.items() if t.is_numeric()][:40]
    if rows and numeric:
        import polars as pl

        table = frame.select(
            [
                pl.struct(
                    mean=pl.col(c).mean(),
                    std=pl.col(c).std(),
                    min=pl.col(c).min(),
                    max=pl.col(c).max(),
                ).alias(c)
                for c in numeric
            ]
        ).row(0)
        lines = [
            f"  {c}: " + ", ".join(f"{k} {_num(v)}" for k, v in s.items())
            for c, s in zip(numeric, table, strict=True)
        ]
        stats = "Summary statistics (numeric columns):\n" + "\n".join(lines)
    return _frame_content(head, schema, stats, lambda n: _pl_sample(frame, n), rows, cols, budget)


def polars_lazy(frame: Any, name: str | None, budget: int) -> Content:
    """A LazyFrame is a query, not data: its schema and plan, never collected."""
    schema = frame.collect_schema()
    lines = "\n".join(f"  {c}: {t}" for c, t in schema.items())
    text = fit_text(f"polars LazyFrame (not collected)\nColumns:\n{lines}", budget)
    return Content(text=text, summary=f"lazy query, {len(schema)} columns")


def polars_series(series: Any, name: str | None, budget: int) -> Content:
    return _with_kind(polars_frame(series.to_frame(), name, budget), "polars Series")


def _with_kind(content: Content, kind: str) -> Content:
    content.text = content.text.replace("polars DataFrame", kind, 1)
    return content
