"""The store's one thread: every SQLite call of a store runs on it, in submission order.

A turn records messages on the event loop; the loop must never wait for a disk. So the loop
only encodes what changed and hands it over (`Worker.submit`, a queue put); this thread runs
the SQL and commits. One thread per store means one connection, no locking inside the
process, and reads that see every write submitted before them (FIFO).

The thread starts on the first job and stops after ``idle`` seconds without one (closing its
connection, which lets SQLite fold the WAL back into the database); the next job starts a new
one. It is a daemon thread: `close` (also run at interpreter exit for every open store) waits
for the queued writes first.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["Worker"]

_STOP = object()


class Worker:
    """Runs ``job(connection)`` callables on one thread; ``open`` makes the connection."""

    def __init__(self, open: Callable[[], Any], *, name: str, idle: float = 30.0):
        self._open = open
        self._name = name
        self._idle = idle
        self._queue: queue.SimpleQueue[tuple[Any, Future | None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._pending = 0

    @property
    def pending(self) -> int:
        """Jobs submitted and not finished yet."""
        return self._pending

    def submit(self, job: Callable[[Any], Any]) -> Future:
        """Queue ``job``; its result (or exception) arrives in the returned future."""
        future: Future = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("this session store is closed")
            self._pending += 1
            self._queue.put((job, future))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        return future

    def close(self, timeout: float | None = None) -> None:
        """Finish the queued jobs, close the connection and stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            if thread is not None:
                self._queue.put((_STOP, None))
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        conn = None
        try:
            while True:
                try:
                    job, future = self._queue.get(timeout=self._idle)
                except queue.Empty:
                    with self._lock:
                        if self._queue.empty():
                            self._thread = None
                            return
                    continue
                if job is _STOP:
                    return
                try:
                    if not future.set_running_or_notify_cancel():
                        continue
                    try:
                        if conn is None:
                            conn = self._open()
                        result = job(conn)
                    except BaseException as exc:
                        if conn is not None and conn.in_transaction:
                            try:
                                conn.execute("ROLLBACK")
                            except Exception:
                                pass
                        future.set_exception(exc)
                    else:
                        future.set_result(result)
                finally:
                    with self._lock:
                        self._pending -= 1
        finally:
            if conn is not None:
                try:
                    conn.close()
                except Exception:
                    pass
