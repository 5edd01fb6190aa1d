"""Data frames, series and arrays: schema, statistics and a sample, within the budget."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl

from lion_nb.context import to_content
from lion_nb.tokens import estimate_tokens
from tests.bench.bench_context import frame


def test_a_million_row_frame_names_every_column_the_rows_and_dtypes_compactly():
    df = frame()  # the benchmark's 1,000,000 × 12 frame (timed in tests/bench)
    content = to_content(df, name="df")
    text = content.text
    assert len(text) < 16_000
    assert "1,000,000 rows × 12 columns" in text
    for column, dtype in df.dtypes.items():
        assert f"  {column}: {dtype}" in text
    assert "x1: float64, 142,858 missing" in text
    assert "Summary statistics" in text and "First 5 rows" in text and "Last 5 rows" in text
    assert "999999" in text  # the tail is there
    assert content.summary == "1,000,000 × 12, 10-row sample"
    assert (
        content.describe("df") == f"`df`: 1,000,000 × 12, 10-row sample, {content.tokens:,} tokens"
    )


def test_a_tight_budget_shrinks_the_sample_but_keeps_the_schema():
    df = pd.DataFrame({f"column_{i}": range(50) for i in range(12)})
    content = to_content(df, budget=400)
    assert estimate_tokens(content.text) <= 400
    assert all(f"column_{i}: int64" in content.text for i in range(12))
    assert "5-row" not in content.summary


def test_thousands_of_columns_list_what_fits_and_count_the_rest():
    df = pd.DataFrame(np.zeros((3, 3000)), columns=[f"c{i}" for i in range(3000)])
    content = to_content(df, budget=500)
    assert estimate_tokens(content.text) <= 500
    assert "more columns not listed" in content.text


def test_a_small_frame_is_shown_whole():
    df = pd.DataFrame({"city": ["Oslo", "Paris"], "t": [3.5, 11.0]})
    text = to_content(df).text
    assert "All 2 rows:" in text and "Oslo" in text and "Paris" in text


def test_a_series_gives_its_length_dtype_missing_and_statistics():
    s = pd.Series([1.0, None, 3.0], name="temp")
    text = to_content(s).text
    assert text.startswith("Series `temp`: 3 values, dtype float64, 1 missing")
    assert "mean 2" in text and "max 3" in text


def test_a_polars_frame_and_series():
    df = pl.DataFrame({"a": [1.0, None, 3.0], "b": ["x", "y", "z"]})
    text = to_content(df).text
    assert "polars DataFrame: 3 rows × 2 columns" in text
    assert "a: Float64, 1 missing" in text and "b: String" in text
    assert "a: mean 2, std 1.414, min 1, max 3" in text
    assert to_content(df["a"]).text.startswith("polars Series: 3 rows")


def test_a_polars_lazy_frame_is_not_collected():
    lazy = pl.DataFrame({"a": [1]}).lazy().select(pl.col("a") * 2)
    content = to_content(lazy)
    assert "not collected" in content.text and "a: Int64" in content.text


def test_a_numpy_array_gives_shape_dtype_statistics_and_a_sample():
    array = np.arange(1_000_000, dtype=float).reshape(1000, 1000)
    array[0, 0] = np.nan
    content = to_content(array)
    assert content.text.startswith("NumPy array: shape (1,000 × 1,000), dtype float64")
    assert "1 NaN" in content.text and "max 1e+06" in content.text and "..." in content.text
    assert estimate_tokens(content.text) <= 2000


def test_a_numpy_scalar_is_its_value():
    assert to_content(np.float64(2.5)).text == "2.5"
