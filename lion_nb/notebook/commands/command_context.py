"""`CommandContext`: what one ``%lion`` line reads and changes of the notebook.

A subcommand needs the IPython shell, the notebook's state, the ``LionMagics`` options (read,
and for ``alias``, ``autosave`` and ``config`` set), the session store's persistence, and --
for ``ask``, ``explain``, ``new`` and ``remove`` -- the cell machinery. `LionMagics` builds
one context per line (`LionMagics.command_context`) and hands it to the subcommand, so the
subcommands depend on these named, typed parts and not on the magics object above them,
as ``%%lion`` cells depend on `CellContext`.

The names are those of the magics' own attributes (``state``, ``shell``, ``aliases``,
``output_format``, ``cell_context()``, ...), so a subcommand written against the magics
object converts by changing its first parameter's annotation. Options are read when asked
for, not copied when the line starts, and `Settings.set` goes through the trait machinery
(validation, observers) exactly like ``%config``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from traitlets import HasTraits, TraitType

    from ..cell.cell_context import CellContext
    from ..cell.options import TurnOptions
    from ..state.persistence import NotebookPersistence
    from ..state.session import NotebookState

__all__ = ["CommandContext", "Settings", "TurnRunner", "TurnStarter"]


class Settings:
    """The ``LionMagics`` options by name: what ``%config LionMagics.NAME`` reaches."""

    __slots__ = ("_owner", "env_vars")

    def __init__(self, owner: HasTraits, env_vars: Mapping[str, str]):
        self._owner = owner
        #: option -> the environment variable that sets its default
        self.env_vars = env_vars

    def options(self) -> dict[str, TraitType[Any, Any]]:
        """The configurable options and their traits (help text, default)."""
        return self._owner.traits(config=True)

    def get(self, name: str) -> Any:  # Any: each option has its own trait type
        return getattr(self._owner, name)

    def set(self, name: str, value: object) -> None:
        """Set ``name`` as ``%config`` would: validated (`TraitError`), observers run."""
        setattr(self._owner, name, value)


class TurnRunner(Protocol):
    """``LionMagics.turn``: interpolate, plan and run one turn; its value or handle."""

    def __call__(
        self, opts: TurnOptions, body: str, *, cell_value: bool
    ) -> Awaitable[Any]: ...  # Any: a turn's value is whatever its format or operation gives


class TurnStarter(Protocol):
    """``LionMagics.start_background``: start a ``--bg`` turn; its handle."""

    def __call__(
        self, opts: TurnOptions, body: str, *, cell_value: bool
    ) -> Any: ...  # Any: a `RunHandle` or a map's batch handle


@dataclass(frozen=True, slots=True)
class CommandContext:
    """One ``%lion`` line's view of the notebook: the shell, the state, the options and
    the turn machinery it may use."""

    #: the IPython shell running the line (``user_ns``, ``var_expand``)
    shell: Any  # Any: IPython's InteractiveShell or a kernel's ZMQ shell, untyped upstream
    #: ``LionMagics.state``: the notebook state, its default branch name set from the options
    #: while no Session is attached (so read at each use, like the magics' property)
    notebook_state: Callable[[], NotebookState]
    #: the ``LionMagics`` options, read and set by name
    settings: Settings
    #: ``LionMagics.cell_context``: what a turn reads (for a new branch's model)
    cell_context: Callable[[], CellContext]
    #: the session store's persistence of this notebook (installed, or made for this line)
    persistence: Callable[[], NotebookPersistence]
    #: ``LionMagics.parse_turn``: the options of a turn line; ``None`` after ``-h``
    parse_turn: Callable[..., TurnOptions | None]
    turn: TurnRunner
    start_background: TurnStarter

    @property
    def state(self) -> NotebookState:
        return self.notebook_state()

    @property
    def aliases(self) -> dict[str, str]:
        """``LionMagics.aliases``: model aliases, name -> provider/model (a copy)."""
        return dict(self.settings.get("aliases"))

    @property
    def default_model(self) -> str:
        """``LionMagics.default_model``: the model of new branches ('' = the settings')."""
        return str(self.settings.get("default_model"))

    @property
    def output_format(self) -> str:
        """``LionMagics.output_format``: the format of a turn that gives no ``-f``."""
        return str(self.settings.get("output_format"))

    @property
    def save_path(self) -> str:
        """``LionMagics.save_path``: the file of ``%lion save`` / ``%lion load``."""
        return str(self.settings.get("save_path"))

    @property
    def autosave(self) -> bool:
        """``LionMagics.autosave``: whether the Session is saved as messages are recorded."""
        return bool(self.settings.get("autosave"))
