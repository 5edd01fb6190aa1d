"""`CellContext`: what one ``%%lion`` cell reads of the notebook, made once per cell.

A turn needs the IPython shell (its namespace, history and display hook), the notebook's
state (its Session, branches, runs and cached models) and the ``LionMagics`` settings. They
are gathered here when the cell starts (`LionMagics.cell_context`), so the cell's code
depends on these named, typed parts rather than on the magics object above it, and a
``%config`` changed by another cell while a turn runs in the background does not change that
turn halfway. The two settings a turn may write back -- the session budget the
``session_budget`` setting made, and that setting raised by "raise and continue" -- go
through the two callables the magics object gives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..state.session import NotebookState

__all__ = ["CellContext"]


@dataclass(frozen=True, slots=True)
class CellContext:
    """One cell's view of the notebook: the shell, the state and the settings it runs with."""

    #: the IPython shell running the cell
    shell: Any
    #: the notebook's Session and everything the notebook keeps beside it
    state: NotebookState
    #: ``LionMagics.default_model``: the model of a new branch ('' = the settings' default)
    default_model: str
    #: ``LionMagics.aliases``: model aliases, name -> provider/model
    aliases: Mapping[str, str]
    #: ``LionMagics.rerun``: what re-running a cell does to its earlier turn
    rerun: str
    #: ``LionMagics.interpolate``: ``{...}`` in a cell is filled from the namespace
    interpolate: bool
    #: ``LionMagics.context_budget``: tokens one ``{value}`` may take
    context_budget: int
    #: ``LionMagics.max_updates_per_second`` of a streaming view
    max_updates_per_second: float
    #: ``LionMagics.live_view``: ``auto``, ``widget`` or ``text``
    live_view: str
    #: puts ``LionMagics.session_budget`` on a Session (the spend so far counts)
    apply_session_budget: Callable[[Any], None]
    #: ``keep_session_budget(budget, usd)``: a raised session budget that the setting made is
    #: kept by the setting, so the next cell does not put the old cap back
    keep_session_budget: Callable[[Any, float], None]

    @property
    def user_ns(self) -> dict[str, Any]:
        """The notebook's namespace."""
        ns: dict[str, Any] = self.shell.user_ns
        return ns
