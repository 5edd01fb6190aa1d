"""`LionMagics`: the ``%%lion`` cell magic, the ``%lion`` line magic and their configuration.

Configuration is traitlets (``%config LionMagics.rerun = "append"``, or an IPython profile),
with environment variables as defaults (``LION_NB_FORMAT``, ``LION_NB_RERUN``, ...; see
`ENV`); an explicit ``%config`` or profile value wins over the environment. The default model
of new branches comes from ``LionMagics.default_model``, else from ``LION_CHAT_PROVIDER`` /
``LION_CHAT_MODEL``, else ``offline/auto``.

This module is imported by ``%load_ext``: it imports nothing from the core, no provider,
no widget and no Markdown code; every turn loads what it needs when it runs.

Every turn's text and system prompt are scrubbed of known secrets before anything else sees
them (`_scrubbed`): what a cell says is cell source, and a key typed into it must not reach
the provider, the branch or ``%lion save``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import warnings
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand
from traitlets import Bool, Dict, Enum, Float, Int, TraitError, Unicode, validate

from .cell.options import (
    FORMATS,
    POLICIES,
    TurnOptions,
    ask_parser,
    long_options,
    parse_with_hint,
    turn_parser,
)
from .cell.runner import run_sync

if TYPE_CHECKING:
    from .cell.cell_context import CellContext
    from .commands.command_context import CommandContext
    from .state.persistence import NotebookPersistence

__all__ = ["ENV", "LionMagics"]

#: trait -> environment variable that sets its default
ENV = {
    "default_model": "LION_NB_MODEL",
    "default_branch": "LION_NB_BRANCH",
    "output_format": "LION_NB_FORMAT",
    "rerun": "LION_NB_RERUN",
    "aliases": "LION_NB_ALIASES",
    "interpolate": "LION_NB_INTERPOLATE",
    "max_updates_per_second": "LION_NB_MAX_UPDATES",
    "signal_log_size": "LION_NB_SIGNAL_LOG",
    "await_cells": "LION_NB_AWAIT",
    "save_path": "LION_NB_SAVE_PATH",
    "autosave": "LION_NB_AUTOSAVE",
    "store_path": "LION_NB_STORE",
    "restore_on_load": "LION_NB_RESTORE",
    "context_budget": "LION_NB_CONTEXT_BUDGET",
}

_TURN_PARSER = turn_parser("%lion")
_MAX_SIGNAL_LOG = 10_000_000


@magics_class
class LionMagics(Magics):
    """Language-model turns in cells, on the notebook's Session."""

    #: trait -> environment variable that sets its default (``%lion config`` shows them)
    env_vars = ENV

    default_model = Unicode(
        "", help="Model of new branches: an alias or provider/model ('' = the settings' default)."
    ).tag(config=True)
    default_branch = Unicode("main", help="Name of the Session's first branch.").tag(config=True)
    output_format = Enum(FORMATS, "markdown", help="Output format when a cell gives no `-f`.").tag(
        config=True
    )
    rerun = Enum(
        POLICIES,
        "fork",
        help="What re-running a cell does to its earlier turn: fork, append, replace.",
    ).tag(config=True)
    aliases = Dict(
        {}, help="Model aliases, name -> provider/model (e.g. {'fast': 'openai/gpt-4o-mini'})."
    ).tag(config=True)
    interpolate = Bool(
        True, help="Interpolate {...} in prompts (a cell can opt out with --raw)."
    ).tag(config=True)
    max_updates_per_second = Float(
        20.0, help="Most display updates a streaming turn makes a second."
    ).tag(config=True)
    signal_log_size = Int(1000, help="How many signals `%lion signals` keeps.").tag(config=True)
    live_view = Enum(
        ("auto", "widget", "text"),
        "auto",
        help="How a running turn is shown: a live widget where a widget front end is "
        "present ('auto'), always a widget, or text.",
    ).tag(config=True)
    await_cells = Bool(
        True, help="Run %%lion cells as top-level awaits on the kernel's loop (recommended)."
    ).tag(config=True)
    save_path = Unicode("lion_session.json", help="File used by `%lion save` / `%lion load`.").tag(
        config=True
    )
    autosave = Bool(
        True, help="Save the notebook's Session to the session store as each message is recorded."
    ).tag(config=True)
    store_path = Unicode(
        "",
        help="The session store: a .db file or a folder ('' = .lion_nb/sessions.db in the "
        "working directory).",
    ).tag(config=True)
    session_budget = Float(
        None,
        allow_none=True,
        help="The most the notebook's Session may spend on model calls, in dollars (None: no "
        "limit); a call that would pass it is not started.",
    ).tag(config=True)
    restore_on_load = Bool(
        False, help="On `%load_ext lion_nb`, restore this notebook's latest saved session."
    ).tag(config=True)
    trace_endpoint = Unicode(
        "",
        help="An OpenTelemetry collector's OTLP/HTTP URL: setting it turns tracing on there "
        "(`%lion trace`; '' turns it off).",
    ).tag(config=True)
    context_budget = Int(
        2000,
        help="Tokens one {value} may take in a prompt (a DataFrame's sample shrinks to fit); "
        "`--notebook` takes four times as many.",
    ).tag(config=True)

    @validate("max_updates_per_second")
    def _check_rate(self, proposal: Any) -> float:
        value = proposal["value"]
        if not math.isfinite(value) or value <= 0:
            raise TraitError(
                f"`max_updates_per_second` is a number of display updates a second above 0 "
                f"(e.g. 20), not {value!r}."
            )
        return value

    @validate("session_budget")
    def _check_session_budget(self, proposal: Any) -> float | None:
        value = proposal["value"]
        if value is not None and not (math.isfinite(value) and value > 0):
            raise TraitError(
                f"`session_budget` is the dollars the session may spend, above 0 (e.g. 2.0), "
                f"or None for no limit, not {value!r}."
            )
        return value

    @validate("context_budget")
    def _check_context_budget(self, proposal: Any) -> int:
        value = proposal["value"]
        if not 50 <= value <= 1_000_000:
            raise TraitError(
                f"`context_budget` is the tokens one value may take in a prompt: from 50 to "
                f"1,000,000 (e.g. 2000), not {value}."
            )
        return value

    @validate("signal_log_size")
    def _check_log_size(self, proposal: Any) -> int:
        value = proposal["value"]
        if not 1 <= value <= _MAX_SIGNAL_LOG:
            raise TraitError(
                f"`signal_log_size` is how many signals to keep: from 1 to {_MAX_SIGNAL_LOG:,} "
                f"(e.g. 1000), not {value}."
            )
        return value

    @validate("default_model")
    def _check_default_model(self, proposal: Any) -> str:
        from .cell.options import check_model_spec

        try:
            return check_model_spec(proposal["value"].strip(), "default_model")
        except UsageError as exc:
            raise TraitError(str(exc)) from None

    @validate("aliases")
    def _check_aliases(self, proposal: Any) -> dict:
        from .cell.options import check_model_spec

        for name, spec in proposal["value"].items():
            if not isinstance(name, str) or not isinstance(spec, str) or "/" not in spec:
                raise TraitError(
                    f"alias `{name}`: an alias maps a name to a `provider/model` string, "
                    f"e.g. {{'fast': 'openai/gpt-4o-mini'}}; got {spec!r}."
                )
            try:
                check_model_spec(spec, f"alias {name}")
            except UsageError as exc:
                raise TraitError(str(exc)) from None
        return proposal["value"]

    def __init__(self, shell: Any = None, **kwargs: Any):
        super().__init__(shell=shell, **kwargs)
        self._config_budget: Any = None  # the Budget `session_budget` put on the Session
        self._apply_environment()
        self.observe(self._resize_log, names=["signal_log_size"])
        self.observe(self._apply_session_budget, names=["session_budget"])
        self.observe(self._apply_trace_endpoint, names=["trace_endpoint"])
        if self.trace_endpoint:  # configured before the extension loaded
            self._apply_trace_endpoint({"new": self.trace_endpoint})

    def _apply_trace_endpoint(self, change: Any) -> None:
        from .commands.trace import apply_endpoint

        apply_endpoint(change["new"])

    def _apply_environment(self) -> None:
        configured = self.config.get(type(self).__name__, {})
        for trait, var in ENV.items():
            raw = os.environ.get(var)
            if raw is None or raw == "" or trait in configured:
                continue
            try:
                setattr(self, trait, _from_env(self.traits()[trait], raw))
            except (TraitError, ValueError) as exc:
                warnings.warn(
                    f"`{var}={raw!r}` is not a valid value for `LionMagics.{trait}` ({exc}); "
                    "using the default.",
                    stacklevel=2,
                )

    def _resize_log(self, change: dict[str, Any]) -> None:
        from .state.session import notebook_state

        notebook_state().resize_signal_log(change["new"])

    def _apply_session_budget(self, change: dict[str, Any]) -> None:
        """``session_budget`` caps the notebook's Session as soon as it is set -- a plain
        ``await branch.communicate(...)`` on `current_session()` too, not only the next
        ``%%lion`` cell -- and every Session the notebook attaches later (reset, load)."""
        from .state.session import notebook_state, on_attach

        on_attach(_session_budget_on_attach)
        session = notebook_state()._session
        if session is not None:
            self.apply_session_budget(session)

    def apply_session_budget(self, session: Any) -> None:
        """``session_budget`` on ``session`` (the spend so far counts); clearing the setting
        takes off the cap it put there, never one set otherwise."""
        usd = self.session_budget
        current = session.budget
        if usd is None:
            if current is not None and current is self._config_budget:
                session.budget = None
            return
        if current is None or current.usd != usd:
            from ..runtime.budget import Budget

            session.budget = Budget(usd=usd, tokens=current.tokens if current else None)
            self._config_budget = session.budget

    def keep_session_budget(self, budget: Any, usd: float) -> None:
        """A turn raised ``budget`` to ``usd``: when the setting made it, the setting follows,
        so the next cell does not put the old cap back."""
        if budget is not None and budget is self._config_budget:
            self.session_budget = usd

    def cell_context(self) -> CellContext:
        """What one cell reads of the notebook (`CellContext`), made as the cell starts."""
        from .cell.cell_context import CellContext

        return CellContext(
            shell=self.shell,
            state=self.state,
            default_model=self.default_model,
            aliases=dict(self.aliases),
            rerun=self.rerun,
            interpolate=self.interpolate,
            context_budget=self.context_budget,
            max_updates_per_second=self.max_updates_per_second,
            live_view=self.live_view,
            apply_session_budget=self.apply_session_budget,
            keep_session_budget=self.keep_session_budget,
        )

    def command_context(self) -> CommandContext:
        """What one ``%lion`` line reads and changes (`CommandContext`), made as it starts."""
        from .commands.command_context import CommandContext, Settings

        return CommandContext(
            shell=self.shell,
            notebook_state=lambda: self.state,
            settings=Settings(self, self.env_vars),
            cell_context=self.cell_context,
            persistence=self._persistence,
            parse_turn=self.parse_turn,
            turn=self.turn,
            start_background=self.start_background,
        )

    def _persistence(self) -> NotebookPersistence:
        """The installed autosave of this magics' shell, else one made for it (not installed)."""
        from .state.persistence import NotebookPersistence, installed

        found = installed()
        return found if found is not None and found.settings is self else NotebookPersistence(self)

    @property
    def state(self) -> Any:
        from .state.session import notebook_state

        state = notebook_state()
        if state._session is None:
            state.default_branch_name = state.active = self.default_branch
        return state

    # -- %%lion --------------------------------------------------------------------------------
    @no_var_expand  # one interpolation pass, ours: IPython must not expand {x} / $x first
    @cell_magic("lion")
    def lion_cell(self, line: str, cell: str) -> None:
        opts = self.parse_turn(line, "%%lion")
        if opts is None:  # -h / --help: the help was printed
            return
        if opts.bg:  # started on this thread's loop (the kernel's), never on a helper loop
            self.start_background(opts, cell, cell_value=True)
            return
        run_sync(self.turn(opts, cell, cell_value=True))

    async def run_cell_async(self, line: str, body: str) -> Any:
        """Run one ``%%lion`` cell; its value becomes ``Out[n]``."""
        opts = self.parse_turn(line, "%%lion")
        if opts is None:
            return None
        return await self.turn(opts, body, cell_value=True)

    def parse_turn(self, line: str, magic: str, *, prompt: bool = False) -> TurnOptions | None:
        """The turn's options; ``None`` when ``-h`` / ``--help`` asked for (and got) the help."""
        parser = _TURN_PARSER if not prompt else ask_parser()
        args = parse_with_hint(parser, line, magic, long_options(parser))
        if args is None:
            return None
        return TurnOptions.from_args(args, default_format=self.output_format)

    async def turn(self, opts: TurnOptions, body: str, *, cell_value: bool) -> Any:
        """Interpolate, plan and run one turn; with ``--bg``, return its handle at once."""
        from .cell.turn import prepare, run_foreground

        if opts.eval_over is not None:  # prompt × models × cases, checked
            from .cell.eval_cells import run_eval_cell

            opts, body = _scrubbed(opts, body)
            return await run_eval_cell(self.cell_context(), opts, body, cell_value=cell_value)
        if opts.map_over is not None or opts.compare:  # one turn per item / per model
            from .cell.batch_cells import run_batch_cell

            opts, body = _scrubbed(opts, body)
            return await run_batch_cell(self.cell_context(), opts, body, cell_value=cell_value)
        if opts.bg:
            return self.start_background(opts, body, cell_value=cell_value)
        opts, body = _scrubbed(opts, body)
        ctx = self.cell_context()
        plan, view = prepare(ctx, opts, body)
        return await run_foreground(ctx, plan, view, cell_value=cell_value)

    def start_background(self, opts: TurnOptions, body: str, *, cell_value: bool) -> Any:
        """Start a ``--bg`` turn on the running (or IPython's idle) loop; return its handle."""
        from .cell.turn import prepare, start_background_turn

        opts, body = _scrubbed(opts, body)
        ctx = self.cell_context()
        if opts.map_over is not None:
            from .cell.batch_cells import start_batch_cell

            return start_batch_cell(ctx, opts, body, cell_value=cell_value)
        plan, view = prepare(ctx, opts, body)
        return start_background_turn(ctx, plan, view, cell_value=cell_value)

    # -- %lion ---------------------------------------------------------------------------------
    @no_var_expand
    @line_magic("lion")
    def lion_line(self, line: str) -> Any:
        """Manage the notebook's Session: `%lion SUBCOMMAND [options]`.

        Subcommands (`%lion help NAME` or `%lion NAME -h` shows each one's options):

          ask        run a turn from one line (the options of %%lion)
          branches   list the branches (ls)        switch   make one active (use)
          new        create a branch               clone    copy one (--from)
          remove     remove a branch (rm)          history  messages and their cells
          signals    the session's signals         models   models, aliases, default
          model      set a branch's model          alias    list/set/remove aliases
          tool       register notebook functions   operation  register an async function
          explain    explain the last error        runs / cancel  background runs
          save/load  a JSON file; load alone: the store   reset    clear a branch (--all: all)
          sessions   saved sessions (--delete ID)  autosave  on, off, or its status
          export     a branch as JSON, Markdown or a DataFrame
          config     show or set LionMagics options
          extend     load an extension (a module or .py file); alone: list them
          cassette   record/replay every model call via a .jsonl file (--mode)
          trace      send spans to an OpenTelemetry collector (on, off, status)

        Examples:

          %lion branches
          %lion new critic -s "Be harsh." -m openai/gpt-4o-mini
          answer = %lion ask -b critic "Is {Out[4]} right?"
          handle = %lion ask --bg "Write the report."   # later: result = await handle
          %lion ask --effort high "Is 2**61 - 1 prime?"   # reasoning=, this turn only
          %lion explain
          %lion config rerun append
        """
        return self.run_line(line)

    def run_line(self, line: str, *, assigned: bool = True) -> Any:
        """Run ``%lion`` from synchronous code (``ask`` / ``explain`` through `run_sync`)."""
        from .commands import dispatch

        return dispatch(self.command_context(), line, assigned=assigned)

    async def run_line_async(self, line: str, *, assigned: bool = True) -> Any:
        """Run ``%lion`` from an awaited line. Unassigned, ``ask`` / ``explain`` make their
        answer the cell's value and return ``None``."""
        from .commands import dispatch_async

        return await dispatch_async(self.command_context(), line, assigned=assigned)


def _scrubbed(opts: TurnOptions, body: str) -> tuple[TurnOptions, str]:
    """The turn's text and system prompt with every known secret masked. Every turn starts
    here (``%%lion``, ``%lion ask``, ``%lion explain``'s prompt of a cell and its traceback),
    so a key typed into a cell reaches neither the model nor the branch; the values that
    interpolation inserts later are scrubbed where they are inserted."""
    from ..models.secrets import scrub

    if opts.system:
        opts = dataclasses.replace(opts, system=scrub(opts.system))
    return opts, scrub(body)


def _from_env(trait: Any, raw: str) -> Any:
    if isinstance(trait, Bool):
        value = raw.strip().lower()
        if value in ("1", "true", "yes", "on"):
            return True
        if value in ("0", "false", "no", "off"):
            return False
        raise ValueError("use 1/0, true/false, yes/no or on/off")
    if isinstance(trait, Int):
        return int(raw)
    if isinstance(trait, Float):
        return float(raw)
    if isinstance(trait, Dict):
        raw = raw.strip()
        if raw.startswith("{"):
            return json.loads(raw)
        pairs = [p.split("=", 1) for p in raw.split(",") if p.strip()]
        if any(len(p) != 2 for p in pairs):
            raise ValueError("use NAME=provider/model pairs separated by commas, or JSON")
        return {k.strip(): v.strip() for k, v in pairs}
    return raw


LionMagics.lion_cell.__doc__ = _TURN_PARSER.format_help()


def _session_budget_on_attach(state: Any, session: Any) -> None:
    """A Session the notebook attaches gets the shell's ``LionMagics.session_budget``."""
    from IPython import get_ipython

    shell = get_ipython()
    magics = shell.magics_manager.registry.get("LionMagics") if shell is not None else None
    if magics is not None:
        magics.apply_session_budget(session)
