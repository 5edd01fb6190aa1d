"""Live widgets for conversations: `BranchView`, `Chat`, `SessionExplorer`, `SignalLog`,
`BatchProgress` for batch runs, `Comparison` for one prompt across models and `EvalGrid`
for an evaluation's grid.

Each is loaded on first use, so ``import lion_nb.widgets`` costs nothing until a widget is
built (ipywidgets and anywidget are imported then). See ``docs/adr/0102-widgets.md`` for why
one widget draws a whole message list.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "BatchProgress": "lion_nb.widgets.progress",
    "BranchView": "lion_nb.widgets.branch_view",
    "Chat": "lion_nb.widgets.chat",
    "Comparison": "lion_nb.widgets.compare",
    "EvalGrid": "lion_nb.widgets.eval_grid",
    "SessionExplorer": "lion_nb.widgets.explorer",
    "SignalLog": "lion_nb.widgets.signal_log",
    "TurnWidget": "lion_nb.widgets.turn",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
