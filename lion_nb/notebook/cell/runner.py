"""Running a turn from a cell, as a real top-level ``await`` on the kernel's own loop.

IPython turns ``%%lion`` into ``get_ipython().run_cell_magic('lion', line, body)``, a
synchronous call. `await_transformer`, installed after IPython's own transformers, rewrites
that line (and a column-0 ``%lion ask`` / ``%lion explain``) into
``await <this module>.cell_magic_async(get_ipython(), line, body)``. The cell then contains a
top-level ``await``, so IPython's ``autoawait`` runs it as a coroutine: in ipykernel on the
kernel's running loop (never blocked, never nested), in a terminal or an in-process shell on
IPython's loop. The kernel's interrupt button cancels that coroutine; the run is cancelled
cleanly and the cell reports `RunInterrupted`.

A ``%lion ask`` / ``%lion explain`` line that is not assigned to a variable makes its answer
the cell's value (``Out[n]``) and evaluates to ``None``, so the answer its view shows is not
displayed a second time; ``answer = %lion ask ...`` gets the answer.

When the rewrite cannot apply (``%autoawait off``, a non-asyncio runner, an indented line, a
magic called directly), `run_sync` drives the same coroutine. With no loop running in this
thread it runs on IPython's idle loop. With one running (the kernel's, inside a synchronous
cell) that loop cannot be re-entered, and it is never patched to allow it (``nest_asyncio``
would patch it for the rest of the process): the coroutine runs on a fresh loop in a worker
thread, in the cell's context (so output goes to the cell), while the cell waits. Either
way an interrupt (``KeyboardInterrupt``) cancels the run's task and lets it finish -- one
terminal signal, the partial messages recorded -- before the cell reports `RunInterrupted`.
Background runs never take this path: they start on the kernel's loop directly.

A foreground turn keeps its loop awake (`loop_kept_awake`: a timer every 0.1 s, started with
the turn and cancelled when it ends, however it ends). Without it, an interrupt of a turn
whose model is silent waits for the loop's next event -- seconds, or the whole answer: the
signal is only acted on when the main thread runs Python again, and an idle loop sleeps in
its selector. The timer is only started on the main thread, the only one signals reach; on
the worker-thread fallback the waiting cell takes the interrupt itself.

In a terminal IPython a Ctrl-C during an awaited turn would raise ``KeyboardInterrupt`` in
the loop's selector, outside the turn: the cell shows a traceback while the turn's task stays
pending, and the next async cell resumes it and records the whole answer. So there, while a
foreground turn runs, SIGINT is routed to the loop and cancels the turn's task
(`interrupt_cancels`): the turn ends as the kernel's interrupt ends it, its partial answer
kept and marked incomplete, and the cell reports `RunInterrupted`.
"""

from __future__ import annotations

import ast
import asyncio
import concurrent.futures
import contextlib
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any

from IPython.core.error import UsageError

__all__ = [
    "ASYNC_SUBCOMMANDS",
    "RunInterrupted",
    "await_transformer",
    "cell_magic_async",
    "interrupt_cancels",
    "line_magic_async",
    "line_magic_sync",
    "loop_kept_awake",
    "run_sync",
    "running_wakers",
]

#: ``%lion`` subcommands that call a model (or connect a server), and so are awaited when
#: alone on a line
ASYNC_SUBCOMMANDS = frozenset({"ask", "explain", "mcp", "serve"})
_MODULE = __name__
_INTERRUPTED = "the run was interrupted; the messages received so far are kept on the branch."
_DRAIN_SECONDS = 5.0
_WAKE_SECONDS = 0.1  # how soon an interrupt of a silent turn is acted on


class RunInterrupted(Exception):
    """A run stopped by the kernel's interrupt (or a cancelled await). Shown in one line."""

    def _render_traceback_(self) -> list[str]:
        return [f"RunInterrupted: {self}"]


# -- keeping the loop awake while a turn runs ---------------------------------------------------
class _Waker:
    """A timer that re-arms itself every ``interval`` seconds until cancelled."""

    def __init__(self, loop: asyncio.AbstractEventLoop, interval: float):
        self._loop = loop
        self._interval = interval
        self._timer: asyncio.TimerHandle | None = loop.call_later(interval, self._tick)

    def _tick(self) -> None:
        self._timer = self._loop.call_later(self._interval, self._tick)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


_wakers: set[_Waker] = set()


@contextlib.contextmanager
def loop_kept_awake(interval: float = _WAKE_SECONDS) -> Any:
    """Wake the running loop every ``interval`` seconds inside the block (main thread only),
    so that a signal such as the kernel's interrupt is acted on within about that time."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    waker = _Waker(asyncio.get_running_loop(), interval)
    _wakers.add(waker)
    try:
        yield
    finally:
        waker.cancel()
        _wakers.discard(waker)


def running_wakers() -> int:
    """How many `loop_kept_awake` timers are running (0 between turns)."""
    return len(_wakers)


@contextlib.contextmanager
def interrupt_cancels(task: asyncio.Task[Any] | None) -> Any:
    """In a terminal IPython, on the main thread: SIGINT cancels ``task`` inside the block
    instead of raising ``KeyboardInterrupt`` wherever the loop happens to be; the previous
    handler is restored after. Elsewhere (a kernel, which interrupts the cell itself, or an
    embedded shell) it does nothing."""
    import signal

    from .handle_view import terminal_shell

    if (
        task is None
        or threading.current_thread() is not threading.main_thread()
        or not terminal_shell()
    ):
        yield
        return
    loop = task.get_loop()
    previous = signal.getsignal(signal.SIGINT)
    try:
        wakeup = signal.set_wakeup_fd(-1)
        signal.set_wakeup_fd(wakeup)
        loop.add_signal_handler(signal.SIGINT, task.cancel)
    except (NotImplementedError, RuntimeError, ValueError, OSError):  # not a Unix loop
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            loop.remove_signal_handler(signal.SIGINT)
        with contextlib.suppress(Exception):
            signal.signal(signal.SIGINT, previous)
            signal.set_wakeup_fd(wakeup)


# -- the input transformer --------------------------------------------------------------------
def _lion_magic_call(node: ast.AST) -> tuple[str, list[str]] | None:
    """``('cell'|'line', [str args])`` if ``node`` is ``get_ipython().run_*_magic('lion', ...)``."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    owner = node.func.value
    if not (
        isinstance(owner, ast.Call)
        and isinstance(owner.func, ast.Name)
        and owner.func.id == "get_ipython"
        and node.func.attr in ("run_cell_magic", "run_line_magic")
    ):
        return None
    args = node.args
    if (
        node.keywords
        or not args
        or not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args)
    ):
        return None
    if args[0].value != "lion":
        return None
    kind = "cell" if node.func.attr == "run_cell_magic" else "line"
    return kind, [a.value for a in args[1:]]


def _rewrite_line(line: str, *, can_await: bool) -> str | None:
    if line[:1].isspace() or "get_ipython().run_" not in line:
        return None
    try:
        tree = ast.parse(line)
    except SyntaxError:
        return None
    if len(tree.body) != 1:
        return None
    stmt = tree.body[0]
    if isinstance(stmt, ast.Expr):
        call, targets = stmt.value, ""
    elif isinstance(stmt, ast.Assign):
        call = stmt.value
        targets = "".join(ast.unparse(t) + " = " for t in stmt.targets)
    else:
        return None
    found = _lion_magic_call(call)
    if found is None:
        return None
    kind, args = found
    module = f"__import__({_MODULE!r}, fromlist=['_'])"
    if kind == "cell" and len(args) == 2 and can_await:
        return f"await {module}.cell_magic_async(get_ipython(), {args[0]!r}, {args[1]!r})\n"
    if kind == "line" and len(args) == 1:
        sub = args[0].split(None, 1)[0] if args[0].strip() else ""
        if sub not in ASYNC_SUBCOMMANDS:
            return None
        assigned = bool(targets)
        if can_await:
            return (
                f"{targets}await {module}.line_magic_async("
                f"get_ipython(), {args[0]!r}, assigned={assigned})\n"
            )
        if not assigned:  # still keep the answer from being displayed twice
            return f"{module}.line_magic_sync(get_ipython(), {args[0]!r})\n"
    return None


def await_transformer(lines: list[str]) -> list[str]:
    """IPython ``input_transformers_post`` hook: make ``%%lion`` cells awaited calls."""
    shell = _shell()
    if shell is None or _magics(shell, required=False) is None:
        return lines
    can_await = _can_await(shell)
    out = []
    changed = False
    for line in lines:
        new = _rewrite_line(line, can_await=can_await) if "'lion'" in line else None
        if new is not None:
            changed = True
            out.append(new)
        else:
            out.append(line)
    return out if changed else lines


def _shell() -> Any:
    from IPython.core.interactiveshell import InteractiveShell

    return InteractiveShell.instance() if InteractiveShell.initialized() else None


def _can_await(shell: Any) -> bool:
    from IPython.core.async_helpers import _asyncio_runner

    magics = _magics(shell, required=False)
    if magics is None or not magics.await_cells:
        return False
    return bool(shell.autoawait) and shell.loop_runner is _asyncio_runner


def _magics(shell: Any, *, required: bool = True) -> Any:
    magics = shell.magics_manager.registry.get("LionMagics")
    if magics is None and required:
        raise UsageError("The lion extension is not loaded: run `%load_ext lion_nb` first.")
    return magics


# -- entry points the rewritten cells call ---------------------------------------------------------
async def cell_magic_async(shell: Any, line: str, body: str) -> None:
    """What a rewritten ``%%lion`` cell awaits."""
    await _interruptible(_magics(shell).run_cell_async(line, body))


async def line_magic_async(shell: Any, line: str, *, assigned: bool = True) -> Any:
    """What a rewritten ``%lion ask`` / ``%lion explain`` line awaits. Unassigned, the answer
    becomes the cell's value and the line evaluates to ``None`` (no second display)."""
    return await _interruptible(_magics(shell).run_line_async(line, assigned=assigned))


def line_magic_sync(shell: Any, line: str) -> None:
    """An unassigned ``%lion ask`` / ``%lion explain`` line where cells cannot await."""
    return _magics(shell).run_line(line, assigned=False)


async def _interruptible(coro: Coroutine[Any, Any, Any]) -> Any:
    try:
        return await coro
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and getattr(task, "cancelling", lambda: 0)():
            task.uncancel()  # handled here (Python >= 3.11): the cell ends with one clear error
        raise RunInterrupted(_INTERRUPTED) from None


def run_sync(coro: Coroutine[Any, Any, Any]) -> Any:
    """Drive ``coro`` to completion from synchronous code (the fallback path)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _on_idle_loop(coro)
    return _in_worker_thread(coro)


def _on_idle_loop(coro: Coroutine[Any, Any, Any]) -> Any:
    from IPython.core.async_helpers import get_asyncio_loop

    idle = get_asyncio_loop()
    task = idle.create_task(_interruptible(coro))
    try:
        return idle.run_until_complete(task)
    except KeyboardInterrupt:  # Ctrl-C in a terminal: let the run clean up, then report
        task.cancel()
        with contextlib.suppress(RunInterrupted, asyncio.CancelledError):
            idle.run_until_complete(task)
        raise RunInterrupted(_INTERRUPTED) from None


def _in_worker_thread(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` on a new loop in a worker thread while this thread (whose loop is busy
    running the current cell) waits; an interrupt here cancels the run there."""
    outcome: concurrent.futures.Future[Any] = concurrent.futures.Future()
    started = threading.Event()
    running: dict[str, Any] = {}

    async def main() -> Any:
        running["loop"], running["task"] = asyncio.get_running_loop(), asyncio.current_task()
        started.set()
        try:
            return await _interruptible(coro)
        finally:  # let observers the run scheduled finish before the loop closes
            others = asyncio.all_tasks() - {asyncio.current_task()}
            if others:
                await asyncio.wait(others, timeout=_DRAIN_SECONDS)

    def work() -> None:
        try:
            outcome.set_result(asyncio.run(main()))
        except asyncio.CancelledError:  # cancelled while the last observers finished
            outcome.set_exception(RunInterrupted(_INTERRUPTED))
        except BaseException as exc:  # delivered to the waiting cell
            outcome.set_exception(exc)

    context = contextvars.copy_context()  # the cell's output routing travels with the run
    threading.Thread(target=context.run, args=(work,), name="lion-run", daemon=True).start()
    try:
        return outcome.result()
    except KeyboardInterrupt:
        started.wait()
        with contextlib.suppress(RuntimeError):  # the loop already closed: the run ended
            running["loop"].call_soon_threadsafe(running["task"].cancel)
        _wait_through_interrupts(outcome)
        return outcome.result()  # `RunInterrupted`, unless the run had just finished


def _wait_through_interrupts(outcome: concurrent.futures.Future[Any]) -> None:
    """Wait for a cancelled run to finish cleaning up, even if interrupted again."""
    while True:
        try:
            concurrent.futures.wait([outcome])
            return
        except KeyboardInterrupt:
            continue
