"""Evaluation benchmark: a 600-cell grid against ``session.map`` of the same 600 requests.

Run: ``python tests/bench/bench_evals.py``. The loopback server runs in its own process
(`bench_batch.Server`), answering each chat request after 5 ms. Prints, measured in this
one run (the best of three interleaved runs of each, each from a collected heap):

- ``session.evaluate`` of 2 prompts × 2 models × 150 cases (600 cells), ``concurrency=20``,
  two checks per cell (``contains`` and a function), the run saved in a store;
- ``session.map`` of the same 600 requests (each prompt to each model) to the same server,
  ``concurrency=20``;
- their ratio; target: at most 1.5.

This is a report, not a test: it asserts nothing about timing.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "bench"))

from bench_batch import Server, _fresh  # noqa: E402

CASES = [{"id": f"c{n}", "n": n} for n in range(150)]
PROMPTS = {"a": "Item #{n}# please", "b": "Say #{n}#"}


def _models(url: str) -> dict[str, Any]:
    from lion_nb import iModel

    return {
        name: iModel(provider="openai", model=name, base_url=url, max_retries=0)
        for name in ("m1", "m2")
    }


def evaluate_vs_map(url: str, rounds: int = 3) -> tuple[float, float]:
    from lion_nb import Session
    from lion_nb.evals import contains
    from lion_nb.store.store import open_store

    store = open_store(Path(tempfile.mkdtemp(prefix="lion-bench-")) / "evals.db")
    # the same requests: every prompt of every case, to each of the two models
    requests = [
        (t.replace("{n}", str(c["n"])), name)
        for c in CASES
        for t in PROMPTS.values()
        for name in ("m1", "m2")
    ]

    async def evaluated() -> float:
        session, models = Session(), _models(url)

        def numbered(answer: Any, case: dict) -> bool:
            return f"#{case['n']}#" in str(answer)

        start = time.perf_counter()
        await session.evaluate(
            CASES,
            prompt=PROMPTS,
            models=models,
            checks=[contains("answer"), numbered],
            concurrency=20,
            store=store,
            name="bench",
        )
        elapsed = time.perf_counter() - start
        for model in models.values():
            await model.aclose()
        return elapsed

    async def mapped() -> float:
        session, models = Session(), _models(url)
        start = time.perf_counter()
        await session.map(requests, lambda r: r[0], model=lambda r: models[r[1]], concurrency=20)
        elapsed = time.perf_counter() - start
        for model in models.values():
            await model.aclose()
        return elapsed

    evals, maps = [], []
    for _ in range(rounds):  # interleaved, so drift hits both alike
        maps.append(_fresh(mapped))
        evals.append(_fresh(evaluated))
    store.close()
    return min(evals), min(maps)


def results() -> list[tuple[str, str, str, float | None]]:
    """Rows ``(figure, value, target, ratio to a raw baseline or None)``."""
    os.environ.setdefault("LION_HOME", tempfile.mkdtemp(prefix="lion-bench-"))
    with Server() as server:
        evaluated, mapped = evaluate_vs_map(server.url)
    return [
        ("session.evaluate, 600 cells over loopback, 20 at once", f"{evaluated:.2f} s", "<= 1.5x map", evaluated / mapped),
        ("  session.map, the same 600 requests", f"{mapped:.2f} s", "", 1.0),
    ]  # fmt: skip


if __name__ == "__main__":
    for figure, value, target, ratio in results():
        extra = f"  ({ratio:.2f}x)" if ratio is not None else ""
        print(f"{figure:<58} {value:>10}  {target}{extra}")
