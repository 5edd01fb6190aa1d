"""Converting notebook values into model context: the 1,000,000-row DataFrame, a figure.

Run: ``python tests/bench/bench_context.py``. Times `lion_nb.context.to_content` (the median
of five runs) of a 1,000,000 × 12 DataFrame (eight float columns, one with missing values,
an integer, a string, a boolean and a datetime column) beside pandas' own ``str(df)`` -- what
``{df}`` inserted before -- and of a default 640×480 matplotlib figure beside
``fig.savefig`` to PNG, its floor. Target for the frame: under 1 s.
"""

from __future__ import annotations

import io
import statistics
import time


def _median(fn, runs: int = 5) -> float:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def frame(rows: int = 1_000_000):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    df = pd.DataFrame({f"x{i}": rng.normal(size=rows) for i in range(8)})
    df.loc[::7, "x1"] = np.nan
    df["count"] = np.arange(rows)
    df["city"] = np.where(rng.random(rows) > 0.5, "Oslo", "Paris")
    df["ok"] = rng.random(rows) > 0.3
    df["when"] = pd.date_range("2020-01-01", periods=rows, freq="s")
    return df


def results() -> list[tuple[str, str, str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lion_nb.context import to_content

    df = frame()
    convert = _median(lambda: to_content(df, name="df"))
    printed = _median(lambda: str(df))
    chars = len(to_content(df, name="df").text)
    fig, ax = plt.subplots()
    ax.plot(range(100))
    figure = _median(lambda: to_content(fig, name="fig"))
    png = _median(lambda: fig.savefig(io.BytesIO(), format="png"))
    return [
        ("`{df}` of 1,000,000 × 12 (to_content)", f"{convert * 1000:.0f} ms", "< 1000 ms",
         f"{convert / printed:.1f}× str(df)"),
        ("its text", f"{chars:,} characters", "< 16,000", ""),
        ("`{fig}` 640×480 (to_content)", f"{figure * 1000:.0f} ms", "",
         f"{figure / png:.2f}× savefig PNG"),
    ]  # fmt: skip


if __name__ == "__main__":
    for row in results():
        print(" | ".join(row))
