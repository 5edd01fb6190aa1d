"""Running a turn from a cell, as a real top-level ``await`` on the kernel's own loop.

IPython turns ``%%lion`` into ``get_ipython().run_cell_magic('lion', line, body)``, a
synchronous call. `await_transformer`, installed after IPython's own transformers, rewrites
that line (and a column-0 ``%lion ask`` / ``%lion explain``) into
``await <this module>.cell_magic_async(get_ipython(), line, body)``. The cell then contains a
top-level ``await``, so IPython's ``autoawait`` runs it as a coroutine: in ipykernel on the
kernel's running loop (never blocked, never nested), in a terminal or an in-process shell on
IPython's loop. The kernel's interrupt button cancels that coroutine; the run is cancelled
cleanly and the cell reports `RunInterrupted`.

When the rewrite cannot apply (``%autoawait off``, a non-asyncio runner, a magic called
directly), `run_sync` drives the same coroutine: on IPython's idle loop if no loop runs in
this thread, and only then -- as a fallback for hosts without top-level await -- through
``nest_asyncio`` on a running one.
"""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Coroutine
from typing import Any

from IPython.core.error import UsageError

__all__ = [
    "ASYNC_SUBCOMMANDS",
    "RunInterrupted",
    "await_transformer",
    "cell_magic_async",
    "line_magic_async",
    "run_sync",
]

#: ``%lion`` subcommands that call a model, and so are awaited when alone on a line
ASYNC_SUBCOMMANDS = frozenset({"ask", "explain"})
_MODULE = __name__


class RunInterrupted(Exception):
    """A run stopped by the kernel's interrupt (or a cancelled await). Shown in one line."""

    def _render_traceback_(self) -> list[str]:
        return [f"RunInterrupted: {self}"]


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


def _rewrite_line(line: str) -> str | None:
    if (
        not line.startswith(("get_ipython().run_",))
        and "get_ipython().run_line_magic('lion'" not in line
    ):
        return None
    if line[:1].isspace():
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
    if kind == "cell" and len(args) == 2:
        return (
            f"await __import__({_MODULE!r}, fromlist=['_']).cell_magic_async("
            f"get_ipython(), {args[0]!r}, {args[1]!r})\n"
        )
    if kind == "line" and len(args) == 1:
        sub = args[0].split(None, 1)[0] if args[0].strip() else ""
        if sub in ASYNC_SUBCOMMANDS:
            return (
                f"{targets}await __import__({_MODULE!r}, fromlist=['_']).line_magic_async("
                f"get_ipython(), {args[0]!r})\n"
            )
    return None


def await_transformer(lines: list[str]) -> list[str]:
    """IPython ``input_transformers_post`` hook: make ``%%lion`` cells awaited calls."""
    shell = _shell()
    if shell is None or not _can_await(shell):
        return lines
    out = []
    changed = False
    for line in lines:
        new = _rewrite_line(line) if "'lion'" in line else None
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


async def line_magic_async(shell: Any, line: str) -> Any:
    """What a rewritten ``%lion ask`` / ``%lion explain`` line awaits."""
    return await _interruptible(_magics(shell).run_line_async(line))


async def _interruptible(coro: Coroutine[Any, Any, Any]) -> Any:
    try:
        return await coro
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and getattr(task, "cancelling", lambda: 0)():
            task.uncancel()  # handled here (Python >= 3.11): the cell ends with one clear error
        raise RunInterrupted(
            "the run was interrupted; the messages received so far are kept on the branch."
        ) from None


def run_sync(coro: Coroutine[Any, Any, Any]) -> Any:
    """Drive ``coro`` to completion from synchronous code (the fallback path)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None:
        from IPython.core.async_helpers import get_asyncio_loop

        idle = get_asyncio_loop()
        task = idle.create_task(_interruptible(coro))
        try:
            return idle.run_until_complete(task)
        except KeyboardInterrupt:  # Ctrl-C in a terminal: let the run clean up, then report
            task.cancel()
            try:
                idle.run_until_complete(task)
            except (RunInterrupted, asyncio.CancelledError):
                pass
            raise RunInterrupted(
                "the run was interrupted; the messages received so far are kept on the branch."
            ) from None
    import nest_asyncio

    nest_asyncio.apply(loop)
    return loop.run_until_complete(_interruptible(coro))
