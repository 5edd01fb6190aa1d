"""``%lion`` subcommands of the session store: ``sessions``, ``autosave``, ``export``, and
the store half of ``load`` (`restore`).

- ``%lion sessions`` lists the saved sessions of this notebook directory's store, newest
  first, ``*`` marking the one this kernel saves now; ``--delete ID`` deletes one (an id or
  its first characters, as listed). The running session cannot be deleted: it would be saved
  again at its next message.
- ``%lion autosave`` shows whether autosave is on and where it writes; ``on`` turns it on
  (again, after a failure: the whole session is written afresh), ``off`` turns it off.
- ``%lion export [BRANCH] [-f json|markdown|dataframe] [-o FILE]`` writes a branch to a file
  (the format from ``-f`` or the file's suffix), or returns it: the text for ``json`` and
  ``markdown``, a pandas DataFrame for ``dataframe``.

Paths are shown relative to the working directory when they are inside it.
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ..cell.output_formats import Table
from .registry import _branch, arg, command, file_problem

if TYPE_CHECKING:
    from argparse import Namespace

    from .command_context import CommandContext

__all__ = ["restore", "shown_path"]


def shown_path(path: Path) -> str:
    """``path`` relative to the working directory when inside it, else as is."""
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except ValueError:
        return str(path)


def restore(ctx: CommandContext, session_ref: str | None) -> None:
    """``%lion load`` without a file: restore from the store (see `NotebookPersistence`)."""
    state = ctx.state
    persistence = ctx.persistence()
    session = persistence.restore(state, session_ref)
    count = sum(len(b.messages) for b in session.branches)
    print(
        f"Restored session `{str(session.id)[:8]}` from `{shown_path(persistence.store.path)}`: "
        f"{len(session.branches)} branch(es), {count} message(s); active: `{state.active}`. "
        "Register tools and operations again."
    )


def _when(timestamp: float) -> str:
    return _dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


@command(
    "sessions",
    "List the sessions saved in the session store, or delete one.",
    arg("--delete", metavar="ID", help="delete this saved session (its id or first characters)"),
)
def _sessions(ctx: CommandContext, args: Namespace) -> Table | None:
    from ...errors import ItemNotFoundError
    from ...store.errors import StoreError

    persistence = ctx.persistence()
    store = persistence.store
    state = ctx.state
    current = str(state._session.id) if state._session is not None else None
    if persistence.autosaver is not None:
        persistence.checkpoint()
    try:
        if args.delete is not None:
            target = store.resolve(args.delete)
            if target == current:
                raise UsageError(
                    f"`%lion sessions --delete {args.delete}`: that is the session running now; "
                    "it would be saved again at its next message. Start a new one first "
                    "(`%lion reset --all`), then delete this one."
                )
            store.delete(target)
            print(f"Deleted session `{target[:8]}` from `{shown_path(store.path)}`.")
            return None
        infos = store.sessions()
    except (StoreError, ItemNotFoundError) as exc:
        raise UsageError(f"`%lion sessions`: {exc}") from None
    rows = [
        {
            "": "*" if info.id == current else "",
            "id": info.id[:8],
            "notebook": info.notebook or "",
            "branches": info.branches,
            "messages": info.messages,
            "active": info.default_branch or "",
            "saved": _when(info.updated_at),
        }
        for info in infos
    ]
    title = f"sessions in {shown_path(store.path)} · autosave {persistence.status()}"
    return Table(
        ["", "id", "notebook", "branches", "messages", "active", "saved"], rows, title=title
    )


@command(
    "autosave",
    "Show where autosave writes, or turn it on or off.",
    arg("switch", nargs="?", choices=("on", "off"), help="on (again, after a failure) or off"),
)
def _autosave(ctx: CommandContext, args: Namespace) -> None:
    persistence = ctx.persistence()
    if args.switch == "off":
        ctx.settings.set("autosave", False)
    elif args.switch == "on":
        saver = persistence.autosaver
        if not ctx.autosave:
            ctx.settings.set("autosave", True)  # the trait's observer starts it
        elif saver is None or not saver.active:
            persistence.restart()  # after a failure: the whole session is written afresh
    failure = persistence.autosaver.failure if persistence.autosaver is not None else None
    where = shown_path(persistence.store.path)
    print(
        f"Autosave is {persistence.status()} (store: `{where}`)."
        + (f" {failure}" if failure else "")
    )


@command(
    "export",
    "Export a branch as JSON or Markdown (to a file, or as text), or as a pandas DataFrame.",
    arg("name", nargs="?", help="branch (default: the active one)"),
    arg("-f", "--format", choices=("json", "markdown", "dataframe"), help="the format"),
    arg("-o", "--out", metavar="FILE", help="write to this file (.json or .md)"),
)
def _export(ctx: CommandContext, args: Namespace) -> Any:
    from ...store import export

    branch = _branch(ctx, args.name)
    fmt = args.format
    if fmt == "dataframe":
        if args.out:
            raise UsageError(
                "`%lion export -f dataframe` returns a DataFrame; drop `-o` and save it with "
                "pandas (`df.to_csv(...)`)."
            )
        try:
            return export.to_dataframe(branch)
        except ImportError as exc:
            raise UsageError(f"`%lion export -f dataframe`: {exc}") from None
    if args.out:
        try:
            path = export.export_branch(branch, args.out, fmt)
        except ValueError as exc:
            raise UsageError(f"`%lion export -o {args.out}`: {exc}") from None
        except OSError as exc:
            problem = file_problem(exc, Path(os.path.expanduser(args.out)), writing=True)
            raise UsageError(f"`%lion export -o {args.out}`: {problem}") from None
        print(f"Wrote `{branch.name}` ({len(branch.messages)} messages) to `{shown_path(path)}`.")
        return None
    return export.to_markdown(branch) if fmt == "markdown" else export.to_json(branch)
