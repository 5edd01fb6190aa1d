"""Inputs that `map` reads as it goes: iterators, polars frames, CSV / JSONL / Parquet files.

A list or a pandas frame is already in memory; these are not, and need not be: the run
takes the next item only when a worker is free, so what is in flight is bounded by
``concurrency``, not by the input. Files are read in chunks (pyarrow's streaming CSV reader
and Parquet row groups when pyarrow is installed -- the ``arrow`` extra --, else the
standard library's CSV reader), one row a dict of column to value. pyarrow and polars are
imported only when such an input is given.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError

__all__ = ["FILE_KINDS", "stream_of"]

FILE_KINDS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
CHUNK_ROWS = 512


def stream_of(data: Any) -> tuple[Iterator[Any], str] | None:
    """``(rows, kind)`` for an input read lazily (kind ``file``, ``polars`` or ``iterator``);
    ``None`` for an input `as_items` takes whole."""
    if isinstance(data, os.PathLike) or (
        isinstance(data, str) and Path(data).suffix.lower() in FILE_KINDS and "\n" not in data
    ):
        return _file_rows(Path(data)), "file"
    module = type(data).__module__ or ""
    if module.startswith("polars") and type(data).__name__ == "DataFrame":
        return iter(data.iter_rows(named=True)), "polars"
    if isinstance(data, Iterator):  # a generator, a file's lines, `iter(...)`: read as needed
        return data, "iterator"
    return None


def _file_rows(path: Path) -> Iterator[dict[str, Any]]:
    kind = FILE_KINDS.get(path.suffix.lower())
    if kind is None:
        raise ConfigurationError(
            f"`map` reads CSV, JSONL and Parquet files ({', '.join(FILE_KINDS)}); "
            f"`{path.name}` is none of them."
        )
    if not path.is_file():
        raise ConfigurationError(f"`map`: no file `{path}`.")
    return {"csv": _csv, "jsonl": _jsonl, "parquet": _parquet}[kind](path)


def _csv(path: Path) -> Iterator[dict[str, Any]]:
    try:
        from pyarrow import csv  # type: ignore[import-untyped]
    except ImportError:  # the standard library's reader: slower, as lazy
        import csv as text_csv

        with path.open(newline="", encoding="utf-8") as handle:
            yield from text_csv.DictReader(handle)
        return
    reader = csv.open_csv(path, read_options=csv.ReadOptions(block_size=1 << 20))
    for batch in reader:
        yield from batch.to_pylist()


def _jsonl(path: Path) -> Iterator[Any]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except ValueError as exc:
                    raise ConfigurationError(
                        f"`{path.name}` line {number} is not JSON ({exc}); fix it or skip it."
                    ) from None


def _parquet(path: Path) -> Iterator[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise ConfigurationError(
            "Reading Parquet needs pyarrow: `pip install 'lion_nb[arrow]'`."
        ) from None
    # no pre-buffering and a small read buffer: by default a row group is read whole, and
    # a 200 MB file then held about 300 MB (measured)
    source = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
    for batch in source.iter_batches(batch_size=CHUNK_ROWS, use_threads=False):
        yield from batch.to_pylist()


def result_frame(
    indices: Iterable[int], values: list[Any], errors: list[str | None], column: str
) -> Any:
    """The results of a streamed input as a pandas frame in input order (Arrow-backed
    columns where pyarrow is installed), or a list when pandas is not installed."""
    try:
        import pandas as pd
    except ImportError:
        return list(values)
    data: dict[str, Any] = {"index": list(indices), column: values}
    if any(e is not None for e in errors):
        data[f"{column}_error"] = errors
    frame = pd.DataFrame(data)
    try:
        import pyarrow  # noqa: F401

        frame = frame.convert_dtypes(dtype_backend="pyarrow")
    except (ImportError, TypeError, ValueError):
        pass
    return frame
