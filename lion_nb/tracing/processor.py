"""`CellSpanProcessor`: spans exported soon after their turn ends, and a flush with a bound.

The SDK's `BatchSpanProcessor` exports every few seconds, and its ``force_flush`` exports in
the calling thread for as long as the exporter takes (its timeout is not used): a short cell
would end before its spans left, and a flush at cell end could hold the kernel for the
exporter's whole retry budget while a collector is down. Here one worker thread exports:

- at most ``delay`` after a span ends -- a turn, a background turn, a ``map`` item -- so
  finished work leaves as it finishes, in batches (the spans that end within ``delay`` of
  the first go in one request);
- at once when `force_flush` asks, which then waits at most its ``timeout`` and says
  whether every span queued before it was handed to the exporter and accepted.

The queue is bounded (the oldest spans go first when it is full). An export that fails is
counted, never raised: tracing must not break the turn it describes.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

__all__ = ["CellSpanProcessor"]


class CellSpanProcessor(SpanProcessor):
    """Queue ended spans; one worker thread exports them (see the module docstring)."""

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        delay: float = 0.2,
        max_queue: int = 8192,
        max_batch: int = 512,
    ) -> None:
        self._exporter = exporter
        self._delay = delay
        self._max_batch = max_batch
        self._queue: collections.deque[tuple[int, ReadableSpan]] = collections.deque(
            maxlen=max_queue
        )
        self._cond = threading.Condition()
        self._seq = 0  # number of the last span queued
        self._done = 0  # number of the last span handed to the exporter
        self._due: float | None = None  # when the worker exports next (None: not due)
        self._stopping = False
        self.exported = self.failed = 0
        self.ok = True  # the last export was accepted
        self._thread = threading.Thread(target=self._work, name="lion-nb-trace-export", daemon=True)
        self._thread.start()

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        with self._cond:
            self._seq += 1
            self._queue.append((self._seq, span))
            if self._due is None:
                self._due = time.monotonic() + self._delay
                self._cond.notify_all()
            elif len(self._queue) >= self._max_batch:
                self._due = time.monotonic()
                self._cond.notify_all()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export what is queued now; wait at most ``timeout_millis``. True: all of it was
        exported and accepted."""
        deadline = time.monotonic() + timeout_millis / 1000
        with self._cond:
            target = self._seq
            if self._done >= target:
                return self.ok
            self._due = time.monotonic()
            self._cond.notify_all()
            while self._done < target:
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return False
                self._cond.wait(left)
            return self.ok

    def shutdown(self, timeout_millis: int = 5_000) -> None:
        self.force_flush(timeout_millis)
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(0.5)
        try:
            self._exporter.shutdown()
        except Exception:  # an exporter that cannot close: nothing left to send anyway
            pass

    @property
    def pending(self) -> int:
        return len(self._queue)

    # -- the worker -------------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._stopping and (self._due is None or self._due > time.monotonic()):
                    wait = None if self._due is None else self._due - time.monotonic()
                    self._cond.wait(wait)
                if self._stopping:
                    return
                self._due = None
                batch = [
                    self._queue.popleft() for _ in range(min(len(self._queue), self._max_batch))
                ]
                if self._queue:  # more than one batch: the next one at once
                    self._due = time.monotonic()
            if batch:
                self._export(batch)

    def _export(self, batch: list[tuple[int, ReadableSpan]]) -> None:
        try:
            ok = self._exporter.export([span for _, span in batch]) is SpanExportResult.SUCCESS
        except Exception:
            ok = False
        with self._cond:
            self.ok = ok
            if ok:
                self.exported += len(batch)
            else:
                self.failed += len(batch)
            self._done = max(self._done, batch[-1][0])
            self._cond.notify_all()
