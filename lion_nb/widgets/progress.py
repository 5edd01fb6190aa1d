"""`BatchProgress`: a batch run (``session.map``) shown live; `TextProgress` without widgets.

Both are observers of a `BatchRun` (`lion_nb.session.batch`): the run calls them on every
item that starts or ends, and they redraw through a `Throttle`, so a 1,000-item run sends
the front end at most ``max_rate`` updates a second. The widget shows a bar (done, failed,
in flight), the counts, tokens, the estimated cost where known and the time left, the first
failures with their errors, and two buttons: **Stop** (the run starts nothing new and
cancels the calls in flight; a provider batch is cancelled at the provider) and **Retry
failed** (the failed, stopped and never-started items run again, on fresh clones).

Static renderings (`StaticFallback`) carry the run's name and counts as they are when the
widget is displayed -- no times, no estimates -- so display a finished run to keep its
figures in a saved notebook. A live view made for a running cell (``live=True``) has empty
static renderings instead: the cell shows the results as their own output, and executed
notebooks compare equal whatever the timing.

`show_progress(run)` picks the widget where a widget front end is present and the text
view elsewhere (a terminal, an in-process shell).
"""

from __future__ import annotations

import time
from html import escape
from typing import Any

import anywidget
import traitlets

from ._base import StaticFallback, call_safely, esm
from ._throttle import Throttle

__all__ = ["BatchProgress", "TextProgress", "show_progress"]

_SHOWN_FAILURES = 20


def _money(cost: float | None) -> str:
    if cost is None:
        return ""
    return f"${cost:.4f}" if cost < 1 else f"${cost:,.2f}"


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class BatchProgress(StaticFallback, anywidget.AnyWidget):
    """A batch run, live: bar, counts, tokens, cost, ETA, failures, Stop and Retry."""

    _esm = esm("progress.js")

    title = traitlets.Unicode("").tag(sync=True)
    via = traitlets.Unicode("live").tag(sync=True)
    state = traitlets.Unicode("").tag(sync=True)
    total = traitlets.Int(0).tag(sync=True)
    done = traitlets.Int(0).tag(sync=True)
    failed = traitlets.Int(0).tag(sync=True)
    stopped = traitlets.Int(0).tag(sync=True)
    in_flight = traitlets.Int(0).tag(sync=True)
    tokens = traitlets.Int(0).tag(sync=True)
    cost = traitlets.Unicode("").tag(sync=True)  # "" when unknown
    eta = traitlets.Unicode("").tag(sync=True)  # "" when unknown or over
    failures = traitlets.List(traitlets.Dict()).tag(sync=True)
    stoppable = traitlets.Bool(False).tag(sync=True)
    retryable = traitlets.Bool(False).tag(sync=True)

    def __init__(self, run: Any, *, max_rate: float = 20.0, live: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        self.run = run
        self.live = live
        self._throttle = Throttle(self._flush, max_rate)
        self._unsubscribe = run.on_progress(lambda _run: self._throttle.poke())
        self.on_msg(self._on_front_end)
        self._flush()

    # -- actions ---------------------------------------------------------------------------------
    def stop(self) -> bool:
        """What **Stop** does: the run starts nothing new and cancels what is in flight."""
        stopped = bool(self.run.stop())
        self._flush()
        return stopped

    def retry(self) -> bool:
        """What **Retry failed** does; ``False`` while the run is running or nothing failed."""
        if not self.run.ended or not self.retryable:
            return False
        self.run.retry()
        self._flush()
        return True

    def _on_front_end(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        if content.get("type") == "stop":
            call_safely(self.stop)
        elif content.get("type") == "retry":
            call_safely(self.retry)

    # -- drawing ---------------------------------------------------------------------------------
    def _flush(self) -> None:
        p = self.run.progress()
        ended = self.run.ended
        failures = [
            {"index": r.index, "label": r.label, "error": (r.error_text or "")[:300]}
            for r in self.run.failures[:_SHOWN_FAILURES]
        ]
        with self.hold_sync():
            self.title = p.name
            self.via = p.via
            self.state = p.state
            self.total = p.total
            self.done = p.done
            self.failed = p.failed
            self.stopped = p.stopped
            self.in_flight = p.in_flight
            self.tokens = p.tokens
            self.cost = _money(p.cost_usd)
            projected = p.projected_usd
            if projected and p.finished < p.total:  # what finishing would cost
                self.cost += f" (projected {_money(projected)})"
            self.eta = _eta(p.eta) if not ended else ""
            self.failures = failures
            self.stoppable = not ended
            self.retryable = ended and (p.failed + p.stopped + p.pending) > 0

    def _counts(self) -> str:
        from ..session.batch import count_parts

        return " · ".join(
            count_parts(self.done, self.total, self.failed, self.stopped, self.tokens)
        )

    def static_text(self) -> str:
        if self.live:
            return ""
        how = ", batch API" if self.via == "batch" else ""
        lines = [f"BatchProgress({self.title!r}{how}): {self._counts()}"]
        lines += [f"  ✗ [{f['index']}] {f['label']}: {f['error']}" for f in self.failures]
        return "\n".join(lines)

    def static_html(self) -> str:
        if self.live:
            return ""
        rows = "".join(
            f"<li>[{f['index']}] {escape(f['label'])}: <code>{escape(f['error'])}</code></li>"
            for f in self.failures
        )
        failed = f"<ul>{rows}</ul>" if rows else ""
        how = " (batch API)" if self.via == "batch" else ""
        return (
            f'<div class="lnb-static"><strong>{escape(self.title)}</strong>{how} · '
            f"{escape(self._counts())}{failed}</div>"
        )

    def close(self) -> None:
        unsubscribe = getattr(self, "_unsubscribe", None)
        if unsubscribe is not None:
            unsubscribe()
            self._unsubscribe = None
        if hasattr(self, "_throttle"):
            self._throttle.cancel()
        super().close()

    def __repr__(self) -> str:
        return f"BatchProgress({self.title!r}, {self.state})"


class TextProgress:
    """The text fallback: one line in a display handle, at most ``max_rate`` updates a second
    (a terminal prints each update, so the default is low)."""

    def __init__(self, run: Any, *, max_rate: float = 1.0):
        from IPython.display import display

        self.run = run
        self.updates = 0
        self._handle = display({"text/plain": run.progress().line()}, raw=True, display_id=True)
        self._throttle = Throttle(self._flush, max_rate)
        self._throttle._last = time.monotonic()  # the line just shown counts as a flush
        self._unsubscribe = run.on_progress(self._on_change)

    def _on_change(self, run: Any) -> None:
        if run.ended:
            self._throttle.flush()  # the final line is never held back
        else:
            self._throttle.poke()

    def _flush(self) -> None:
        if self._handle is None:
            return
        self._handle.update({"text/plain": self.run.progress().line()}, raw=True)
        self.updates += 1

    def close(self) -> None:
        self._unsubscribe()
        self._throttle.cancel()


def widget_frontend() -> bool:
    """Whether this process is a kernel whose front end can show widgets."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def show_progress(
    run: Any, *, live: str = "auto", max_rate: float = 20.0, in_cell: bool = False
) -> Any:
    """Display the run's progress: ``live`` is "auto" (a widget where a widget front end is
    present), "widget" or "text". ``in_cell``: a view for a running cell (empty static
    renderings; see the module docstring)."""
    from IPython.display import display

    if live == "widget" or (live == "auto" and widget_frontend()):
        view = BatchProgress(run, max_rate=max_rate, live=in_cell)
        display(view)
        return view
    return TextProgress(run)
