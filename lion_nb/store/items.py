"""`ItemSink`: the store's place for a `map` run's item rows (`lion_nb.session.batch_rows`).

Rows arrive a few hundred at a time and are written on the store's thread in one
transaction each (the loop never waits); reading one waits for the writes queued before it,
since the thread runs its jobs in order. The rows are their own table, keyed by session, run
and index: restoring or listing a session never reads them.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["ItemSink"]

log = logging.getLogger("lion_nb.store")


def _report(future: Any) -> None:
    error = future.exception()
    if error is not None:
        log.warning("a run's item rows could not be saved: %s", error)


class ItemSink:
    """Item rows of ``store`` (a `SessionStore`)."""

    def __init__(self, store: Any):
        self.store = store

    def put(self, session_id: str, run: str, rows: list[tuple[int, bytes]]) -> Any:
        def job(conn: Any) -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "INSERT OR REPLACE INTO run_items (session_id, run, idx, data) "
                    "VALUES (?, ?, ?, ?)",
                    [(session_id, run, index, row) for index, row in rows],
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

        future = self.store.submit(job)
        future.add_done_callback(_report)
        return future

    def get(self, session_id: str, run: str, index: int) -> bytes | None:
        def job(conn: Any) -> bytes | None:
            found = conn.execute(
                "SELECT data FROM run_items WHERE session_id = ? AND run = ? AND idx = ?",
                (session_id, run, index),
            ).fetchone()
            return bytes(found[0]) if found else None

        return self.store.submit(job).result()

    def delete(self, session_id: str, run: str, indices: list[int] | None = None) -> Any:
        def job(conn: Any) -> None:
            if indices is None:
                conn.execute(
                    "DELETE FROM run_items WHERE session_id = ? AND run = ?", (session_id, run)
                )
            else:
                conn.executemany(
                    "DELETE FROM run_items WHERE session_id = ? AND run = ? AND idx = ?",
                    [(session_id, run, i) for i in indices],
                )

        return self.store.submit(job)

    def count(self, session_id: str, run: str) -> tuple[int, int]:
        """``(rows, bytes)`` kept for one run."""

        def job(conn: Any) -> tuple[int, int]:
            n, size = conn.execute(
                "SELECT count(*), coalesce(sum(length(data)), 0) FROM run_items "
                "WHERE session_id = ? AND run = ?",
                (session_id, run),
            ).fetchone()
            return int(n), int(size)

        return self.store.submit(job).result()
