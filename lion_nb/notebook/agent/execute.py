"""Running the model's code in the notebook, as a cell would, and keeping what came out.

The code runs in the shell's own namespace (the user's variables), on the thread that calls
it -- the kernel's main thread when a turn runs there, as it does for a ``%%lion`` cell --
after IPython's transforms (so ``!ls`` and ``%timeit`` work as in a cell). Its printed text,
its error output, what it displayed, its last expression's value and the figures it made
are captured, not shown in the cell: they become the tool's result. Values go through the
context converter (`lion_nb.context.to_content`: a frame as its schema within the budget),
images stay images (``data:`` URLs) and an error is its traceback's text.

A run is stopped by its time limit or the kernel's interrupt: on the main thread the
signal raises ``KeyboardInterrupt`` inside the code (a real SIGINT, so a ``time.sleep`` wakes
too), from another thread the limit is an asynchronous exception. What was printed before
is kept either way. `stop_current` stops the running code from any thread.

A turn view shows when code runs (`runs_shown_by`: told ``True`` as a run starts and
``False`` as it ends, on the running thread), so its Stop button can interrupt the kernel:
while the code holds the main thread, the button's own message waits until the run ends.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .names import diff, snapshot

__all__ = ["RunOutcome", "run_code", "run_watcher", "runs_shown_by", "stop_current"]

_FILENAME = "<run_python>"
_lock = threading.Lock()
_running: dict[str, Any] = {}  # the run in progress: {"stop": callable}
_watcher: contextvars.ContextVar[Callable[[bool], None] | None] = contextvars.ContextVar(
    "lion_nb_run_watcher", default=None
)


@dataclass
class RunOutcome:
    """One run of code: what it printed, returned, showed and changed."""

    stdout: str = ""
    stderr: str = ""
    value: str | None = None  # the last expression's value, as model text
    displays: list[str] = field(default_factory=list)  # displayed values, as model text
    images: list[str] = field(default_factory=list)  # data: URLs (figures, images)
    error: str | None = None  # the traceback's text
    stopped: str | None = None  # "time limit" or "interrupted"
    duration: float = 0.0
    names: dict[str, list[str]] = field(default_factory=dict)


@contextlib.contextmanager
def runs_shown_by(watcher: Callable[[bool], None] | None) -> Iterator[None]:
    """Within this block (this task and the tasks it starts), each run tells ``watcher``
    that code runs (``True``) and that it ended (``False``)."""
    token = _watcher.set(watcher)
    try:
        yield
    finally:
        _watcher.reset(token)


def run_watcher() -> Callable[[bool], None] | None:
    """The watcher of runs here (a turn view with a Stop button), or None."""
    return _watcher.get()


def _tell(watcher: Callable[[bool], None] | None, running: bool) -> None:
    if watcher is None:
        return
    try:
        watcher(running)
    except Exception:  # a view's failure never stops the run
        import logging

        logging.getLogger("lion_nb.notebook.agent").debug("run watcher failed", exc_info=True)


def stop_current() -> bool:
    """Interrupt the code running now, from any thread; ``False`` when none runs."""
    with _lock:
        stop = _running.get("stop")
    if stop is None:
        return False
    stop("interrupted")
    return True


class _Limit:
    """Interrupts the running thread once: at the time limit, or when asked."""

    def __init__(self, seconds: float | None):
        self.thread = threading.current_thread()
        self.main = self.thread is threading.main_thread()
        self.reason: str | None = None
        self.active = True
        self._timer = threading.Timer(seconds, self.fire, ("time limit",)) if seconds else None

    def start(self) -> None:
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def fire(self, reason: str) -> None:
        with _lock:
            if not self.active or self.reason is not None:
                return
            self.reason = reason
            if self.main:
                signal.pthread_kill(self.thread.ident or 0, signal.SIGINT)
            else:
                import ctypes

                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(self.thread.ident or 0), ctypes.py_object(KeyboardInterrupt)
                )

    def end(self) -> None:
        with _lock:
            self.active = False
        if self._timer is not None:
            self._timer.cancel()


def run_code(
    shell: Any, code: str, *, time_limit: float | None = 60.0, budget: int = 2000
) -> RunOutcome:
    """Run ``code`` in ``shell``'s namespace and return what came out (see the module)."""
    from IPython.utils.capture import capture_output

    outcome = RunOutcome()
    before = snapshot(shell)
    figures = _figure_numbers()
    limit = _Limit(time_limit)
    value: Any = None
    has_value = False
    start = time.perf_counter()
    old_handler = _sigint_default() if limit.main else None
    watcher = _watcher.get()
    captured: Any = None
    with _lock:
        _running["stop"] = limit.fire
    try:
        _tell(watcher, True)  # inside: an interrupt that comes at once is the run's
        with capture_output(stdout=True, stderr=True, display=True) as captured:
            try:
                limit.start()
                try:
                    has_value, value = _execute(shell, code)
                finally:
                    limit.end()
            except KeyboardInterrupt:
                outcome.stopped = limit.reason or "interrupted"
            except BaseException as exc:  # the code's own error: its traceback is the result
                if isinstance(exc, SystemExit):
                    outcome.error = f"SystemExit: {exc.code}"
                else:
                    outcome.error = _traceback_text(exc)
    except KeyboardInterrupt:  # a signal that landed just as the code ended
        outcome.stopped = outcome.stopped or limit.reason or "interrupted"
    finally:
        with _lock:
            _running.pop("stop", None)
        _tell(watcher, False)
        if old_handler is not None:
            signal.signal(signal.SIGINT, old_handler)
    outcome.duration = time.perf_counter() - start
    outcome.stdout = captured.stdout if captured is not None else ""
    outcome.stderr = captured.stderr if captured is not None else ""
    shown = captured.outputs if captured is not None else []
    _collect(outcome, shown, value if has_value else None, has_value, figures, budget)
    outcome.names = diff(before, snapshot(shell))
    return outcome


def _sigint_default() -> Any:
    """Make SIGINT raise ``KeyboardInterrupt`` while the code runs; the old handler."""
    try:
        return signal.signal(signal.SIGINT, signal.default_int_handler)
    except (ValueError, OSError):  # not the main thread of the main interpreter
        return None


def _execute(shell: Any, code: str) -> tuple[bool, Any]:
    """Run the code; ``(True, value)`` when it ends with an expression."""
    import linecache

    source = shell.transform_cell(code) if hasattr(shell, "transform_cell") else code
    # the traceback quotes the model's lines, as a cell's does
    linecache.cache[_FILENAME] = (len(source), None, source.splitlines(True), _FILENAME)
    tree = ast.parse(source, _FILENAME)
    namespace = shell.user_ns
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    body = tree.body[:-1] if last is not None else tree.body
    if body:
        exec(compile(ast.Module(body=body, type_ignores=[]), _FILENAME, "exec"), namespace)
    if last is None:
        return False, None
    value = eval(compile(ast.Expression(last.value), _FILENAME, "eval"), namespace)
    return True, value


def _traceback_text(exc: BaseException) -> str:
    """The traceback without this module's frames (the model's code starts it)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb)).rstrip()


def _figure_numbers() -> set[int]:
    pyplot = sys.modules.get("matplotlib.pyplot")
    return set(pyplot.get_fignums()) if pyplot is not None else set()


def _collect(
    outcome: RunOutcome,
    outputs: list[Any],
    value: Any,
    has_value: bool,
    figures_before: set[int],
    budget: int,
) -> None:
    """Displays, the value and new figures as model text and images."""
    from ...context import to_content

    def add(content: Any, into: list[str] | None) -> str:
        outcome.images.extend(content.images)
        if into is not None and content.text:
            into.append(content.text)
        return str(content.text)

    for shown in outputs:  # RichOutput: its data is a MIME bundle
        data = getattr(shown, "data", None) or {}
        add(to_content(_Bundle(data), budget=budget), outcome.displays)
    shown_figures: set[int] = set()
    if has_value and value is not None:
        number = getattr(value, "number", None)
        if type(value).__name__ == "Figure" and isinstance(number, int):
            shown_figures.add(number)
        content = to_content(value, name=None, budget=budget)
        if content.images:  # a figure's artists: that figure is the value's image
            shown_figures.update(_figure_numbers())
        outcome.value = add(content, None)
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        for number in sorted(set(pyplot.get_fignums()) - figures_before):
            figure = pyplot.figure(number)
            if number not in shown_figures:
                add(to_content(figure, budget=budget), outcome.displays)
            pyplot.close(figure)  # shown to the model, not again in the cell


class _Bundle:
    """A captured display as an object the converter reads by its MIME bundle."""

    def __init__(self, data: dict[str, Any]):
        self._data = data

    def _repr_mimebundle_(self, **_: Any) -> dict[str, Any]:
        return self._data
