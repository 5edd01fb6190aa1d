"""The notebook layer: the IPython extension, ``%%lion`` / ``%lion``, and the display seam.

Its parts, top to bottom; each imports only those below it (ADR-0108, `tests/test_layers.py`):

- `extension` -- ``%load_ext`` / ``%unload_ext``;
- `magics` -- `LionMagics` and its configuration; `formatters` -- values shown as widgets;
- `commands` -- the ``%lion`` subcommands, each group registering in `commands.registry`;
- `cell` -- one ``%%lion`` turn: options, interpolation, plan and run, display;
- `state` -- the notebook's Session, its errors and signals, autosave.

Names load on first use, so ``%load_ext lion_nb`` imports only the magics.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "load_ipython_extension": "lion_nb.notebook.extension",
    "unload_ipython_extension": "lion_nb.notebook.extension",
    "current_session": "lion_nb.notebook.state.session",
    "notebook_state": "lion_nb.notebook.state.session",
    "reset_notebook_state": "lion_nb.notebook.state.session",
    "LionMagics": "lion_nb.notebook.magics",
    "RunHandle": "lion_nb.notebook.cell.background",
    "RunInterrupted": "lion_nb.notebook.cell.runner",
    "TurnView": "lion_nb.notebook.cell.view_seam",
    "TurnInfo": "lion_nb.notebook.cell.view_seam",
    "set_view_factory": "lion_nb.notebook.cell.handle_view",
    "interpolate": "lion_nb.notebook.cell.interpolate",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
