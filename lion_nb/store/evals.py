"""Evaluation runs in the store: each run saved whole, under its name, with its time.

A run is one row of ``eval_runs`` (name, created_at, data as JSON): what
``session.evaluate(..., name=...)`` compares its next run with, and what a later kernel
reads back. Rows hold the answers, cases and verdicts as the run produced them (answers are
model output: they are shown through the sanitizing views, never as HTML). Nothing here
knows what an evaluation is; it keeps JSON records.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import SessionStore

__all__ = ["delete_eval_runs", "eval_run_names", "load_eval_runs", "save_eval_run"]


def save_eval_run(store: SessionStore, record: dict[str, Any]) -> Any:
    """Queue the saving of one run's record (``name`` and ``created_at`` required); returns
    the store's future."""
    data = json.dumps(record, ensure_ascii=False, default=str)
    name, created_at = str(record["name"]), float(record["created_at"])

    def job(conn: Any) -> None:
        conn.execute(
            "INSERT INTO eval_runs (name, created_at, data) VALUES (?, ?, ?)",
            (name, created_at, data),
        )

    return store.submit(job)


def load_eval_runs(store: SessionStore, name: str, *, last: int | None = None) -> list[dict]:
    """The saved runs of ``name``, oldest first (only the ``last`` ones when given)."""
    if not store.exists():
        return []

    def job(conn: Any) -> list[str]:
        query = "SELECT data FROM eval_runs WHERE name = ? ORDER BY created_at DESC, id DESC"
        params: tuple[Any, ...] = (name,)
        if last is not None:
            query += " LIMIT ?"
            params = (name, int(last))
        return [row[0] for row in conn.execute(query, params)]

    return [json.loads(text) for text in reversed(store.submit(job).result())]


def eval_run_names(store: SessionStore) -> list[tuple[str, int, float]]:
    """``(name, runs, latest time)`` of every saved evaluation, most recent first."""
    if not store.exists():
        return []

    def job(conn: Any) -> list[tuple[str, int, float]]:
        return conn.execute(
            "SELECT name, count(*), max(created_at) FROM eval_runs GROUP BY name "
            "ORDER BY max(created_at) DESC"
        ).fetchall()

    return [tuple(r) for r in store.submit(job).result()]


def delete_eval_runs(store: SessionStore, name: str) -> int:
    """Forget every saved run of ``name``; how many there were."""
    if not store.exists():
        return 0

    def job(conn: Any) -> int:
        return conn.execute("DELETE FROM eval_runs WHERE name = ?", (name,)).rowcount

    return store.submit(job).result()
