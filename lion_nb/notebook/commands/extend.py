"""``%lion extend``: load an extension into the notebook's Session, or list the loaded ones.

``%lion extend REF`` loads a dotted module name or a ``.py`` file (a relative path is from
the notebook's folder, the kernel's working directory) through `lion_nb.extensions` and
shows what it added; loading it again shows the same record and changes nothing, so
re-running the cell is harmless. A broken extension is a `UsageError` that names it and what
failed, and the Session is left as it was. ``%lion extend`` alone lists the loaded ones;
``--entry-points`` loads installed extensions that appeared since the Session was created.

Installed entry-point extensions are loaded into every Session the notebook attaches
(`lion_nb.notebook.state.autoload`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ..cell.output_formats import Table
from .registry import arg, command

if TYPE_CHECKING:
    from argparse import Namespace

    from .command_context import CommandContext

__all__: list[str] = []  # registers `%lion extend`


@command(
    "extend",
    "Load an extension (a module or a .py file) into the session; alone, list the loaded ones.",
    arg("ref", nargs="?", help="a dotted module name or a path to a .py file"),
    arg(
        "--entry-points",
        action="store_true",
        help="load the installed extensions (entry point group lion_nb.extensions)",
    ),
)
def _extend(ctx: CommandContext, args: Namespace) -> Any:
    from ...extensions import (
        ExtensionError,
        load_entry_point_extensions,
        load_extension,
        loaded_extensions,
    )

    session = ctx.state.session
    if args.entry_points:
        if args.ref:
            raise UsageError(
                f"`%lion extend {args.ref} --entry-points`: give a module or path, or "
                "`--entry-points`, not both."
            )
        load_entry_point_extensions(session, on_error="warn")
    elif args.ref:
        try:
            return load_extension(session, args.ref)
        except ExtensionError as exc:
            raise UsageError(f"`%lion extend {args.ref}`: {exc}") from None
    rows = [
        {
            "extension": record.name,
            "from": f"{record.origin}: {record.source}",
            "adds": record.summary,
        }
        for record in loaded_extensions(session)
    ]
    return Table(["extension", "from", "adds"], rows, title="extensions")
