"""Planning one turn from a cell: branch, model, operation, formats -- before anything is sent.

Planning resolves every name before anything is sent, so a mistake costs nothing: the
branch (picked, or created with ``--system`` / ``--model``), the model (for this turn only on
an existing branch), the operation (``run`` for a CLI model, ``operate`` when the cell or the
branch has tools, else ``communicate``), the response format and the tools. Then the re-run
policy is applied (see `cells`); a ``--system`` prompt is checked against the branch as the
policy leaves it (the same prompt again changes nothing), and a CLI agent on a forked or
replaced timeline gets a fresh provider session.

``-b NAME`` applies to its cell only: cells without it use the active branch, which changes
with ``%lion switch`` / ``new`` / ``clone`` -- and when a re-run forks the active branch.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from IPython.core.error import UsageError

from ...operations.verbs import VERBS, default_verb
from . import cells
from .cell_context import CellContext
from .options import TurnOptions, resolve_model, resolve_response_format, resolve_tools
from .stop import TurnStop

__all__ = ["TurnPlan", "default_model", "model_for", "plan_turn"]


@dataclass(slots=True)
class TurnPlan:
    """A resolved turn."""

    branch: Any
    text: str
    op: str
    options: TurnOptions
    cell: cells.CellRef
    model: Any = None  # for this turn only; None: the branch's own
    response_format: type | None = None
    tools: list[Any] = field(default_factory=list)
    kept_as: str | None = None  # the old timeline's name after a fork
    rerun: str | None = None  # "fork" or "replace" when re-running a cell did so
    fresh_session: bool = False  # a CLI agent starts a new provider session (fork / replace)
    turn_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    stop: TurnStop = field(default_factory=TurnStop)
    images: list[str] = field(default_factory=list)  # attached by {values} and --file
    files: list[dict[str, Any]] = field(default_factory=list)

    #: the ``--budget`` meter, made on the turn's first run and kept by a continued one
    meter: Any = None

    @property
    def model_label(self) -> str:
        model = self.model or self.branch.chat_model
        return f"{model.provider}/{model.model}"


def plan_turn(ctx: CellContext, opts: TurnOptions, text: str) -> TurnPlan:
    """Resolve ``opts`` against the notebook namespace and the Session. Nothing changes in
    the Session unless the whole plan is valid (a branch created for it is removed again).

    Four steps, each its own function: the names (format, tools), the branch and model, the
    operation (checked with everything else that can refuse the turn), the re-run policy."""
    rf, tools, servers = _resolve_names(ctx, opts)
    if opts.agent:
        tools += _agent_tools(ctx, opts)
    branch, model, created = _turn_branch(ctx, opts)
    cell = cells.current_cell(ctx.shell, ctx.state.hooked_cell_id)
    if servers:
        from ..state.mcp import mcp_tools_for

        tools += mcp_tools_for(ctx.state, branch, servers, tools)
    policy = opts.policy or ctx.rerun
    try:
        op, new_system = _choose_operation(ctx, opts, branch, model, tools, cell, policy, created)
    except BaseException:
        if created:
            ctx.state.session.remove_branch(branch)
        raise
    target, rerun, model, fresh = _apply_rerun(ctx, opts, branch, model, cell, policy, new_system)
    return TurnPlan(
        branch=target,
        text=text,
        op=op,
        options=opts,
        cell=cell,
        model=model,
        response_format=rf,
        tools=tools,
        kept_as=rerun.kept_as,
        rerun=rerun.action,
        fresh_session=fresh,
    )


def _resolve_names(ctx: CellContext, opts: TurnOptions) -> tuple[type | None, list[Any], list[str]]:
    """The response format, the notebook functions given as tools, and the MCP servers named
    as tools (``-t NAME`` of a server added with ``%lion mcp add``)."""
    ns, mcp = ctx.user_ns, ctx.state.mcp
    rf = resolve_response_format(opts.response_format, ns) if opts.response_format else None
    servers = [n for n in opts.tools if n in mcp]
    tools = resolve_tools([n for n in opts.tools if n not in servers], ns)
    return rf, tools, servers


def _agent_tools(ctx: CellContext, opts: TurnOptions) -> list[Any]:
    """``--agent``: the notebook tools (``run_python`` asks first), and the system prompt
    describing the notebook on a branch that has no conversation yet."""
    from ..agent.tools import AGENT_PROMPT, notebook_tools

    branch = ctx.state.branch(opts.branch)  # None: made for this turn
    fresh = branch is None or not any(m.kind != "system" for m in branch.messages)
    if opts.system is None and fresh:
        opts.system = AGENT_PROMPT
    # tools the branch already has under these names (`notebook_tools(approve=...)` given
    # by the user) are kept, with their policy
    held = set(branch.acts.registry) if branch is not None else set()
    # the same tool objects every turn on a branch: "approve from now on" holds across turns
    key = (id(ctx.state), opts.branch or (str(branch.id) if branch is not None else ""))
    tools = _AGENT_TOOLS.get(key)
    if tools is None:
        tools = _AGENT_TOOLS[key] = notebook_tools(shell=ctx.shell)
    return [t for t in tools if t.name not in held]


#: the notebook tools ``--agent`` offers, per notebook state and branch
_AGENT_TOOLS: dict[tuple[int, str], list[Any]] = {}


def _turn_branch(ctx: CellContext, opts: TurnOptions) -> tuple[Any, Any, bool]:
    """The turn's branch (created for ``-b NEW``), its model for this turn only (``None``:
    the branch's own), and whether the branch was created for the turn."""
    state = ctx.state
    branch = state.branch(opts.branch)  # None: the active one
    if branch is not None:
        return branch, model_for(ctx, opts.model, branch) if opts.model else None, False
    if opts.branch is None:
        raise UsageError("The session has no branch left: create one with `%lion new NAME`.")
    new_model = model_for(ctx, opts.model, None) if opts.model else default_model(ctx)
    branch = state.session.new_branch(name=opts.branch, system=opts.system, chat_model=new_model)
    return branch, None, True


def _choose_operation(
    ctx: CellContext,
    opts: TurnOptions,
    branch: Any,
    model: Any,
    tools: list[Any],
    cell: Any,
    policy: str,
    created: bool,
) -> tuple[str, str | None]:
    """The turn's operation and the system prompt to set (``None``: leave it), or the
    `UsageError` that refuses the turn before anything changes."""
    busy = ctx.state.busy(branch)
    if busy is not None:
        raise UsageError(
            f"Branch `{branch.name}` has a background run in progress ({busy!r}). `await` "
            "or `.cancel()` its handle, or use another branch (`-b NAME`)."
        )
    # the system prompt is checked against what the turn's branch will hold once the
    # re-run policy has dropped the earlier turn (re-running a `-s` cell is no conflict)
    new_system = None if created else _system_change(branch, opts.system, cell, policy)
    chat_model = model or branch.chat_model
    op = opts.op or default_verb(chat_model, tools=bool(tools or branch.tools))
    _check_operation(op, branch, chat_model, opts, ctx.state.session.operations)
    return op, new_system


def _apply_rerun(
    ctx: CellContext,
    opts: TurnOptions,
    branch: Any,
    model: Any,
    cell: Any,
    policy: str,
    new_system: str | None,
) -> tuple[Any, Any, Any, bool]:
    """Apply the re-run policy: the branch the turn goes on, what the policy did, the turn's
    model (a fresh CLI agent on a forked or replaced timeline) and whether it is fresh."""
    state = ctx.state
    chat_model = model or branch.chat_model
    was_active = branch.name == state.active
    rerun = cells.apply_policy(state.session, branch, cell, policy)
    target = rerun.branch
    if new_system is not None:
        target.msgs.add_message(system=new_system)
    if was_active:
        state.set_active(target)  # a fork of the active branch stays the active branch
    fresh = False
    if rerun.action in ("fork", "replace") and chat_model.is_cli:
        model, fresh = _fresh_agent(ctx, target, model, opts.model), True
    return target, rerun, model, fresh


def _system_change(branch: Any, system: str | None, cell: Any, policy: str) -> str | None:
    """The system prompt to set on the turn's branch, or ``None`` to leave it; a `UsageError`
    when the branch the turn goes on already has a conversation under another prompt."""
    if system is None:
        return None
    current = branch.system.system_message if branch.system is not None else None
    if system == current:
        return None  # the same prompt again (a re-run of its cell): nothing to change
    kept = cells.messages_after_policy(branch, cell, policy)
    if any(m.kind != "system" for m in kept):
        raise UsageError(
            f"`--system`: branch `{branch.name}` already has a conversation, so its system "
            f'prompt is fixed. Start a new branch with it: `%%lion -b NEW --system "..."`.'
        )
    return system


def _fresh_agent(ctx: CellContext, branch: Any, model: Any, spec: str | None) -> Any:
    """A CLI agent with no provider session for a forked or replaced timeline: the old session
    remembers the turns that timeline dropped. Returns the turn's model (``None``: the
    branch's own, replaced by a fresh copy)."""
    if model is not None:
        fresh = model.copy()
        if spec:
            source = _named_model(ctx, spec)  # later `-m` turns resume it
            ctx.state.models[(str(branch.id), spec)] = (fresh, source)
        return fresh
    if branch.chat_model.provider_session_id:  # a fork's clone already has a fresh copy
        branch.chat_model = branch.chat_model.copy()
    return None


def default_model(ctx: CellContext) -> Any:
    """The model for a new branch: ``LionMagics.default_model`` (the cell's) or the settings' default."""
    if ctx.default_model:
        return model_for(ctx, ctx.default_model, None)
    return None


def model_for(ctx: CellContext, spec: str, branch: Any) -> Any:
    """The iModel for ``spec`` on ``branch``, reused across turns so a CLI agent resumes --
    while ``spec`` still means what it meant: a notebook variable that was given a new
    ``iModel`` (its cell run again) gives the next turn the new model, never the old one."""
    key = (str(branch.id) if branch is not None else "", spec)
    source = _named_model(ctx, spec)
    cached = ctx.state.models.get(key)
    if cached is not None and branch is not None and cached[1] is source:
        return cached[0]
    model = resolve_model(spec, ctx.user_ns, dict(ctx.aliases))
    if branch is not None:
        ctx.state.models[key] = (model, source)
    return model


def _named_model(ctx: CellContext, spec: str) -> Any:
    """The ``iModel`` the notebook variable ``spec`` holds now (``None``: not such a name)."""
    from ...models.imodel import iModel

    spec = spec.strip()
    named = ctx.user_ns.get(spec) if spec.isidentifier() else None
    return named if isinstance(named, iModel) else None


def _check_operation(
    op: str, branch: Any, model: Any, opts: TurnOptions, registered: list[str]
) -> None:
    if op not in VERBS:
        if branch.get_operation(op) is None:
            mine = f" Registered: {', '.join(f'`{r}`' for r in registered)}." if registered else ""
            raise UsageError(
                f"`--op {op}`: no such operation. Built in: "
                f"{', '.join(f'`{b}`' for b in VERBS)}.{mine} Register your own "
                "with `%lion operation NAME` (an `async def f(branch, instruction, ...)`)."
            )
        if opts.effort is not None:  # a registered function's keywords are its own
            raise UsageError(
                f"`--effort` applies to the built-in operations, not to the registered "
                f"`--op {op}`: drop `--effort`, or set `reasoning=` on the model it uses."
            )
        return
    if op == "run" and not model.is_cli:
        raise UsageError(
            f"`--op run` needs a CLI agent model, and `{model.provider}/{model.model}` is not one. "
            "Pick one with `-m` (`claude_code/...`, `codex/...`, `gemini_cli/...`, "
            "`offline_cli/...`) or drop `--op run`."
        )
    if model.is_cli and op not in ("run", "parse"):
        raise UsageError(
            f"`--op {op}`: `{model.provider}/{model.model}` is a CLI agent, which only runs "
            "(`--op run`). Drop `--op`, or pick an API model with `-m`."
        )
    if opts.effort is not None and not VERBS[op].takes_model_options:
        raise UsageError(f"`--effort` does not apply to `--op {op}`: drop `--effort`.")
    if opts.tools and not VERBS[op].takes_tools:
        raise UsageError(
            f"`--tools` works with `--op operate`, `--op ReAct` or a registered operation, "
            f"not `--op {op}`. Drop `--op` (tools imply `operate`)."
        )
