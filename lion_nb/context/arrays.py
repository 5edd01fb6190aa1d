"""NumPy arrays as shape, dtype, statistics and a sample; NumPy scalars as their value."""

from __future__ import annotations

from typing import Any

from ..tokens import estimate_tokens
from .content import Content, fit_text

__all__ = ["ndarray", "scalar"]


def ndarray(array: Any, name: str | None, budget: int) -> Content:
    import numpy as np

    shape = " × ".join(f"{n:,}" for n in array.shape) or "scalar"
    head = f"NumPy array: shape ({shape}), dtype {array.dtype}, {array.size:,} values"
    stats = ""
    if array.size and array.dtype.kind in "iufb":
        data = array.astype(float) if array.dtype.kind == "b" else array
        with np.errstate(all="ignore"):
            nans = int(np.isnan(data).sum()) if data.dtype.kind == "f" else 0
            values = [
                ("min", np.nanmin(data)),
                ("max", np.nanmax(data)),
                ("mean", np.nanmean(data)),
                ("std", np.nanstd(data)),
            ]
        stats = "Statistics: " + ", ".join(f"{k} {float(v):.4g}" for k, v in values)
        if nans:
            stats += f", {nans:,} NaN"
    for edge in (3, 2, 1):
        sample = np.array2string(array, threshold=6 * edge, edgeitems=edge, max_line_width=100)
        text = "\n".join(s for s in (head, stats, "Sample:\n" + sample) if s)
        if estimate_tokens(text) <= budget:
            break
    return Content(text=fit_text(text, budget), summary=f"array ({shape}) {array.dtype}")


def scalar(value: Any, name: str | None, budget: int) -> Content:
    return Content(text=str(value.item() if hasattr(value, "item") else value))
