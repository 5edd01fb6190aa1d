"""Installed extensions for every Session the notebook attaches.

`NotebookState.attach` calls `autoload` for each Session it makes the notebook's (first use,
``%lion load``, ``%lion reset --all``): the entry-point extensions of the installed
distributions (group ``lion_nb.extensions``) are loaded into it, each broken one an
`ExtensionWarning` that names it, so one bad package never stops the notebook. Setting
``LION_NB_AUTOLOAD_EXTENSIONS`` to ``0`` / ``false`` / ``no`` / ``off`` turns this off
(``%lion extend --entry-points`` still loads them on demand).

A module of its own so that attaching a Session does not import the ``%lion`` subcommands
(whose registration order is the order ``%lion help`` lists them in).
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["AUTOLOAD_ENV", "autoload"]

AUTOLOAD_ENV = "LION_NB_AUTOLOAD_EXTENSIONS"


def autoload(session: Any) -> None:
    """Load the installed entry-point extensions into ``session`` (warning for broken ones)."""
    if os.environ.get(AUTOLOAD_ENV, "").strip().lower() in ("0", "false", "no", "off"):
        return
    from ...extensions import load_entry_point_extensions

    load_entry_point_extensions(session, on_error="warn")
