"""``%load_ext lion_nb`` and ``%unload_ext lion_nb``.

Loading registers `LionMagics` (also as a configurable, so ``%config LionMagics`` works),
the input transformer that makes ``%%lion`` cells awaited, and two event hooks: one that
notes the running cell's id, one that records failing cells for ``{Err}`` and
``%lion explain``; and display formatters that show a `Branch` or `Session` as its widget.
It creates no Session, opens no database and imports no provider, widget or Markdown code:
that happens on the first turn (or the first display); only ``LionMagics.restore_on_load``
reads the session store at load (`lion_nb.notebook.state.persistence`). Unloading removes each of
these again; the Session and its conversations stay (``lion_nb.current_session()`` still
returns them).
"""

from __future__ import annotations

from typing import Any

__all__ = ["load_ipython_extension", "unload_ipython_extension"]

_installed: dict[int, dict[str, Any]] = {}


def load_ipython_extension(ipython: Any) -> None:
    """Register the lion magics, transformer and hooks on ``ipython``."""
    if id(ipython) in _installed:
        return
    from .cell.runner import await_transformer
    from .magics import LionMagics
    from .state.session import notebook_state

    magics = LionMagics(shell=ipython)
    ipython.register_magics(magics)
    if magics not in ipython.configurables:  # `%config LionMagics` finds it there
        ipython.configurables.append(magics)
    ipython.input_transformers_post.append(await_transformer)

    state = notebook_state()
    if state.signals.maxlen != magics.signal_log_size:
        state.resize_signal_log(magics.signal_log_size)

    def pre_run_cell(info: Any) -> None:
        notebook_state().hooked_cell_id = getattr(info, "cell_id", None)

    def post_run_cell(result: Any) -> None:
        notebook_state().errors.on_post_run_cell(result)

    ipython.events.register("pre_run_cell", pre_run_cell)
    ipython.events.register("post_run_cell", post_run_cell)
    from .formatters import FORMATTED_TYPES

    bundles = ipython.display_formatter.mimebundle_formatter
    for module, name, printer in FORMATTED_TYPES:
        bundles.for_type_by_name(module, name, printer)
    from .state.persistence import install

    _installed[id(ipython)] = {
        "magics": magics,
        "transformer": await_transformer,
        "events": [("pre_run_cell", pre_run_cell), ("post_run_cell", post_run_cell)],
        "persistence": install(ipython, magics),  # autosave; restore when configured
    }


def unload_ipython_extension(ipython: Any) -> None:
    """Undo `load_ipython_extension`: magics, configurable, transformer and hooks."""
    installed = _installed.pop(id(ipython), None)
    if installed is None:
        return
    magics = installed["magics"]
    installed["persistence"]()  # the last changes saved, autosave stopped
    for kind in ("line", "cell"):
        table = ipython.magics_manager.magics[kind]
        if table.get("lion") is not None and getattr(table["lion"], "__self__", None) is magics:
            del table["lion"]
    ipython.magics_manager.registry.pop(type(magics).__name__, None)
    while magics in ipython.configurables:
        ipython.configurables.remove(magics)
    if installed["transformer"] in ipython.input_transformers_post:
        ipython.input_transformers_post.remove(installed["transformer"])
    from .formatters import FORMATTED_TYPES

    bundles = ipython.display_formatter.mimebundle_formatter
    for module, name, printer in FORMATTED_TYPES:
        if bundles.deferred_printers.get((module, name)) is printer:
            del bundles.deferred_printers[(module, name)]
        for cls, found in list(bundles.type_printers.items()):
            if found is printer:
                del bundles.type_printers[cls]
    for event, callback in installed["events"]:
        try:
            ipython.events.unregister(event, callback)
        except ValueError:
            pass
