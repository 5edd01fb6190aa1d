"""A `Branch`, `Session` or batch run as a cell's last expression shows its widget.

``%load_ext lion_nb`` registers these with IPython's mime-bundle formatter by type name, so
nothing is imported until such a value is displayed. Where no widget front end exists (a
terminal, an in-process shell), they step aside and the object's plain repr is shown. A
widget that cannot be built never fails the cell: the plain repr is shown instead.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["FORMATTED_TYPES", "batch_bundle", "branch_bundle", "session_bundle"]

logger = logging.getLogger("lion_nb.notebook")


def _widget_bundle(make: Any, value: Any) -> Any:
    from .cell.handle_view import widget_frontend

    if not widget_frontend():
        return None
    try:
        return make(value)._repr_mimebundle_()
    except Exception:
        logger.warning("could not build a widget for %r", type(value).__name__, exc_info=True)
        return None


def branch_bundle(branch: Any) -> Any:
    from ..widgets.branch_view import BranchView

    return _widget_bundle(BranchView, branch)


def session_bundle(session: Any) -> Any:
    from ..widgets.explorer import SessionExplorer

    return _widget_bundle(SessionExplorer, session)


def batch_bundle(run: Any) -> Any:
    from ..widgets.progress import BatchProgress

    return _widget_bundle(BatchProgress, run)


#: (module, class name, printer) registered on load and removed on unload
FORMATTED_TYPES = (
    ("lion_nb.session.branch", "Branch", branch_bundle),
    ("lion_nb.session.session", "Session", session_bundle),
    ("lion_nb.session.batch", "BatchRun", batch_bundle),
)
