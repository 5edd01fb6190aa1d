"""One turn from a cell: plan it (branch, model, operation, formats), then run it.

Planning resolves every name before anything is sent, so a mistake costs nothing: the
branch (picked, or created with ``--system`` / ``--model``), the model (for this turn only on
an existing branch), the operation (``run`` for a CLI model, ``operate`` when the cell or the
branch has tools, else ``communicate``), the response format and the tools. Then the re-run
policy is applied (see `cells`); a ``--system`` prompt is checked against the branch as the
policy leaves it (the same prompt again changes nothing), and a CLI agent on a forked or
replaced timeline gets a fresh provider session.

``-b NAME`` applies to its cell only: cells without it use the active branch, which changes
with ``%lion switch`` / ``new`` / ``clone`` -- and when a re-run forks the active branch.
So does ``-t``: the cell's tools are offered to its turn and taken off the branch when the
turn ends (a tool for every later turn is what ``%lion tool`` registers). An ``operate`` turn
whose model only called tools gets one follow-up exchange, tools off, that answers from
their results: the cell's value is the answer (text, or the ``-r`` model's instance), never
operate's record of the calls. ``-f code`` asks the model for Python code (`CODE_GUIDANCE`).

Running streams text fragments and recorded messages to the turn's view, tags every message
the turn recorded with its cell, and leaves the conversation as the operation left it: a
failed or interrupted turn keeps what was received (ADR-0021), and the view says what
happened.

Every turn has a `TurnStop` (the view's ``info.stop``, a Stop button's target), made before
its view exists. A foreground turn's Stop cancels the task running the cell -- exactly what
the kernel's interrupt does, so both end the turn the same way (partial messages kept, one
terminal signal) -- but a Stop stops that turn only: its cell ends quietly and the next one
runs, where the interrupt raises `RunInterrupted`. A background run's Stop is its handle's
``cancel()``. A Stop may come from any thread (a comm handler, a worker loop's host) and is
always carried out on the turn's own loop; once the turn has ended it does nothing, so a
late click can never cancel whatever the cell runs next. While a foreground turn runs, its
loop is kept awake (`runner.loop_kept_awake`) so that an interrupt of a silent model acts at
once, and in a terminal IPython a Ctrl-C cancels it as the interrupt does
(`runner.interrupt_cancels`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from IPython.core.error import UsageError

from . import cells
from .failures import as_usage_error, presentable, provider_error
from .options import (
    BUILTIN_OPERATIONS,
    TurnOptions,
    resolve_model,
    resolve_response_format,
    resolve_tools,
)

__all__ = ["TurnPlan", "TurnStop", "execute", "plan_turn"]


class TurnStop:
    """Stops one turn from any thread; ``True`` if the turn was still running.

    Bound to the turn's loop and a cancel function once the turn's task exists (a request
    that came earlier is carried out then); the cancel always runs on that loop, at most
    once. After `release` (the turn ended) a call returns ``False`` and does nothing.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cancel: Callable[[], Any] | None = None
        self._requested = False
        self._ended = False
        self.fired = False  #: the cancel was carried out: the turn ends because of this Stop

    def __call__(self) -> bool:
        with self._lock:
            if self._ended:
                return False
            if self._requested:
                return True  # already stopping
            self._requested = True
            loop = self._loop
        if loop is None:
            return True  # carried out by `bind`
        return self._schedule(loop)

    def bind(self, loop: asyncio.AbstractEventLoop, cancel: Callable[[], Any]) -> None:
        """The turn runs on ``loop``; ``cancel()`` (called there) stops it."""
        with self._lock:
            self._loop, self._cancel = loop, cancel
            pending = self._requested and not self._ended
        if pending:
            self._schedule(loop)

    def release(self) -> None:
        """The turn ended: from now on a call does nothing."""
        with self._lock:
            self._ended = True

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> bool:
        # always through the loop: safe from a comm handler, another thread, or the turn's own
        # loop before the turn's task has taken its first step
        try:
            loop.call_soon_threadsafe(self._cancel_now)
        except RuntimeError:  # the loop is closed: the turn is over
            return False
        return True

    def _cancel_now(self) -> None:
        with self._lock:
            cancel = None if self._ended else self._cancel
        if cancel is not None:
            self.fired = True
            cancel()


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


def plan_turn(magics: Any, opts: TurnOptions, text: str) -> TurnPlan:
    """Resolve ``opts`` against the notebook namespace and the Session. Nothing changes in
    the Session unless the whole plan is valid (a branch created for it is removed again)."""
    state, ns = magics.state, magics.shell.user_ns
    session = state.session
    rf = resolve_response_format(opts.response_format, ns) if opts.response_format else None
    servers = [n for n in opts.tools if n in state.mcp]  # `-t NAME` of an MCP server
    tools = resolve_tools([n for n in opts.tools if n not in servers], ns)
    model = None
    name = opts.branch
    branch = state.branch(name)  # None: the active one
    created = branch is None
    if created:
        if opts.branch is None:
            raise UsageError("The session has no branch left: create one with `%lion new NAME`.")
        new_model = model_for(magics, opts.model, None) if opts.model else default_model(magics)
        branch = session.new_branch(name=name, system=opts.system, chat_model=new_model)
    elif opts.model:
        model = model_for(magics, opts.model, branch)
    cell = cells.current_cell(magics.shell, state.hooked_cell_id)
    if servers:
        from ..state.mcp import mcp_tools_for

        tools += mcp_tools_for(magics, branch, servers, tools)
    policy = opts.policy or magics.rerun
    try:
        busy = state.busy(branch)
        if busy is not None:
            raise UsageError(
                f"Branch `{branch.name}` has a background run in progress ({busy!r}). `await` "
                "or `.cancel()` its handle, or use another branch (`-b NAME`)."
            )
        # the system prompt is checked against what the turn's branch will hold once the
        # re-run policy has dropped the earlier turn (re-running a `-s` cell is no conflict)
        new_system = None if created else _system_change(branch, opts.system, cell, policy)
        chat_model = model or branch.chat_model
        op = opts.op or (
            "run" if chat_model.is_cli else "operate" if tools or branch.tools else "communicate"
        )
        _check_operation(op, branch, chat_model, opts, session.operations)
    except BaseException:
        if created:
            session.remove_branch(branch)
        raise
    was_active = branch.name == state.active
    rerun = cells.apply_policy(session, branch, cell, policy)
    target = rerun.branch
    if new_system is not None:
        target.msgs.add_message(system=new_system)
    if was_active:
        state.set_active(target)  # a fork of the active branch stays the active branch
    fresh = False
    if rerun.action in ("fork", "replace") and chat_model.is_cli:
        model, fresh = _fresh_agent(magics, target, model, opts.model), True
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


def _fresh_agent(magics: Any, branch: Any, model: Any, spec: str | None) -> Any:
    """A CLI agent with no provider session for a forked or replaced timeline: the old session
    remembers the turns that timeline dropped. Returns the turn's model (``None``: the
    branch's own, replaced by a fresh copy)."""
    if model is not None:
        fresh = model.copy()
        if spec:
            source = _named_model(magics, spec)  # later `-m` turns resume it
            magics.state.models[(str(branch.id), spec)] = (fresh, source)
        return fresh
    if branch.chat_model.provider_session_id:  # a fork's clone already has a fresh copy
        branch.chat_model = branch.chat_model.copy()
    return None


def default_model(magics: Any) -> Any:
    """The model for a new branch: ``LionMagics.default_model`` or the settings' default."""
    if magics.default_model:
        return model_for(magics, magics.default_model, None)
    return None


def model_for(magics: Any, spec: str, branch: Any) -> Any:
    """The iModel for ``spec`` on ``branch``, reused across turns so a CLI agent resumes --
    while ``spec`` still means what it meant: a notebook variable that was given a new
    ``iModel`` (its cell run again) gives the next turn the new model, never the old one."""
    key = (str(branch.id) if branch is not None else "", spec)
    source = _named_model(magics, spec)
    cached = magics.state.models.get(key)
    if cached is not None and branch is not None and cached[1] is source:
        return cached[0]
    model = resolve_model(spec, magics.shell.user_ns, dict(magics.aliases))
    if branch is not None:
        magics.state.models[key] = (model, source)
    return model


def _named_model(magics: Any, spec: str) -> Any:
    """The ``iModel`` the notebook variable ``spec`` holds now (``None``: not such a name)."""
    from ...models.imodel import iModel

    spec = spec.strip()
    named = magics.shell.user_ns.get(spec) if spec.isidentifier() else None
    return named if isinstance(named, iModel) else None


def _check_operation(
    op: str, branch: Any, model: Any, opts: TurnOptions, registered: list[str]
) -> None:
    if op not in BUILTIN_OPERATIONS:
        if branch.get_operation(op) is None:
            mine = f" Registered: {', '.join(f'`{r}`' for r in registered)}." if registered else ""
            raise UsageError(
                f"`--op {op}`: no such operation. Built in: "
                f"{', '.join(f'`{b}`' for b in BUILTIN_OPERATIONS)}.{mine} Register your own "
                "with `%lion operation NAME` (an `async def f(branch, instruction, ...)`)."
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
    if opts.tools and op in ("chat", "communicate", "run", "interpret", "parse"):
        raise UsageError(
            f"`--tools` works with `--op operate`, `--op ReAct` or a registered operation, "
            f"not `--op {op}`. Drop `--op` (tools imply `operate`)."
        )


@contextlib.contextmanager
def _model_for_turn(branch: Any, model: Any) -> Iterator[None]:
    """Use ``model`` as the branch's chat model for this turn only."""
    if model is None:
        yield
        return
    saved = branch.chat_model
    branch.chat_model = model
    try:
        yield
    finally:
        branch.chat_model = saved


def _offer_tools(branch: Any, tools: list[Any]) -> list[str] | None:
    """Register the cell's tools on the branch for this turn (replacing an older definition
    of the same name: redefining a function and re-running the cell is the notebook way) and
    return their names; ``None`` when the cell names none. `_tools_for_turn` undoes it."""
    if not tools:
        return None
    return [branch.acts.register_tool(func, update=True).name for func in tools]


@contextlib.contextmanager
def _tools_for_turn(branch: Any, funcs: list[Any]) -> Iterator[None]:
    """Keep the cell's tools (``-t``) on the branch for this turn only: afterwards every tool
    the turn registered for them is removed, or the definition it replaced is put back.
    Tools registered meanwhile for other functions (``%lion tool``) stay."""
    if not funcs:
        yield
        return
    acts = branch.acts
    saved = dict(acts.registry)
    try:
        yield
    finally:
        for name, tool in list(acts.registry.items()):
            if saved.get(name) is tool or not any(
                tool is f or tool.func_callable is f for f in funcs
            ):
                continue
            if name in saved:
                acts.register_tool(saved[name], update=True)
            else:
                acts.remove_tool(name)


#: the follow-up of an exchange that only called tools: the answer comes from their results
ANSWER_FROM_TOOLS = "Answer the request above, using the tool results."
#: what ``--format code`` asks of the model: the answer goes into a code cell
CODE_GUIDANCE = "Answer with Python code only, in one ```python fenced block."


def _tools_only(result: Any) -> bool:
    """Whether operate's result is its shape for an exchange that called tools but gave no
    answer yet (text beside tool calls is a preamble, not the answer)."""
    return isinstance(result, dict) and {"response", "action_responses"} <= set(result)


async def _operate(
    branch: Any,
    text: str,
    rf: Any,
    names: list[str] | None,
    guidance: Any,
    media: dict[str, Any] | None = None,
) -> Any:
    """``operate``, then -- when the model only called tools -- one follow-up exchange without
    tools that answers from their results, so the cell shows the answer (an instance of
    ``rf`` when given), not operate's record of the calls. One observed run."""
    from ...runtime.lifecycle import observed_run

    actions = bool(names) or bool(branch.tools)  # tools registered with `%lion tool` too

    async def exchange() -> Any:
        result = await branch.operate(
            instruction=text,
            guidance=guidance,
            response_format=rf,
            actions=actions,
            tools=names,
            **(media or {}),
        )
        if actions and _tools_only(result):
            return await branch.communicate(
                ANSWER_FROM_TOOLS, guidance=guidance, response_format=rf
            )
        return result

    return await observed_run(branch, exchange(), "operate")


#: the operations that take images and files with the instruction
ATTACHING_OPERATIONS = ("communicate", "chat", "operate", "run")


async def _call(plan: TurnPlan, view: Any, session: Any) -> Any:
    branch, text, rf, op = plan.branch, plan.text, plan.response_format, plan.op
    guidance = CODE_GUIDANCE if plan.options.fmt == "code" else None
    media = {"images": plan.images or None, "files": plan.files or None}
    if op == "communicate":
        return await branch.communicate(text, guidance=guidance, response_format=rf, **media)
    if op == "chat":
        return await branch.chat(text, guidance=guidance, response_format=rf, **media)
    if op == "operate":
        names = _offer_tools(branch, plan.tools)
        return await _operate(branch, text, rf, names, guidance, media)
    if op == "ReAct":
        kw: dict[str, Any] = {"tools": _offer_tools(branch, plan.tools), "response_format": rf}
        if plan.options.extensions is not None:
            kw["max_extensions"] = plan.options.extensions
        return await branch.ReAct({"instruction": text}, **kw)
    if op == "interpret":
        return await branch.interpret(text)
    if op == "parse":
        return await branch.parse(text, response_format=rf, handle_validation="raise")
    if op == "run":
        parts: list[str] = []
        async with contextlib.aclosing(branch.run(text, **media)) as stream:
            async for message in stream:
                if message.kind == "assistant_response" and message.response:
                    parts.append(message.response)
        answer = "\n\n".join(parts) or None
        if rf is not None and answer is not None:
            return await branch.parse(answer, response_format=rf, handle_validation="raise")
        return answer
    extra: dict[str, Any] = {"instruction": text}
    if rf is not None:
        extra["response_format"] = rf
    if plan.tools:
        extra["tools"] = plan.tools
    return await session.run_operation(op, branch=branch, **extra)


async def execute_shown(plan: TurnPlan, view: Any, session: Any) -> Any:
    """`execute`, its error raised as the notebook shows it (`presentable`), in the
    foreground as in a background run."""
    try:
        return await execute(plan, view, session)
    except Exception as exc:
        shown = presentable(exc)
        if shown is exc:
            raise
        raise shown from None


async def execute(plan: TurnPlan, view: Any, session: Any) -> Any:
    """Run ``plan``, reporting to ``view`` (already started). Returns the turn's result."""
    from ...models.endpoints import streaming_to
    from ...protocols.signals import MessageAdded
    from ...runtime.budget import budget_scope

    branch = plan.branch
    branch_id = str(branch.id)

    def on_message(signal: Any) -> None:
        if signal.branch_id == branch_id:
            view.message(signal.message)

    before = set(branch.messages.keys())
    subscription = branch.observe(MessageAdded, on_message)
    try:
        from ...protocols.approval import asking, current_asker

        with (
            streaming_to(view.text),
            _model_for_turn(branch, plan.model),
            _tools_for_turn(branch, plan.tools),
            budget_scope(_cell_meter(plan), "cell"),
            asking(getattr(view, "ask", None) or current_asker()),  # approve="ask"
        ):
            result = await _call(plan, view, session)
    except BaseException as exc:
        import anyio

        interrupted = isinstance(exc, (anyio.get_cancelled_exc_class(), KeyboardInterrupt))
        view.fail(provider_error(exc) or exc, interrupted=interrupted)
        raise
    finally:
        subscription.cancel()
        new = [m for m in branch.messages if m.id not in before]
        cells.tag_messages(new, plan.cell, plan.turn_id)
        from ..state.persistence import checkpoint

        checkpoint(session)  # the tags reach the session store now, not after the cell
    view.finish(result)
    return result


def _cell_meter(plan: TurnPlan) -> Any:
    """The cell's ``--budget`` meter: one per turn, so a continued turn counts what it spent."""
    usd = plan.options.budget
    if plan.meter is None and usd is not None:
        from ...runtime.budget import Budget, Meter

        plan.meter = Meter(Budget(usd=usd), "cell")
    return plan.meter


def apply_session_budget(magics: Any, session: Any) -> None:
    """``LionMagics.session_budget`` on the notebook's Session (spend so far counts)."""
    usd = magics.session_budget
    current = session.budget
    mine = getattr(magics, "_config_budget", None)  # the Budget this setting made, if any
    if usd is None:
        if current is not None and current is mine:  # the setting was cleared: so is its cap
            session.budget = None
        return
    if current is None or current.usd != usd:
        from ...runtime.budget import Budget

        session.budget = Budget(usd=usd, tokens=current.tokens if current else None)
        magics._config_budget = session.budget


# -- from a cell to a result ---------------------------------------------------------------------
def prepare(magics: Any, opts: TurnOptions, body: str) -> tuple[TurnPlan, Any]:
    """Interpolate ``body``, plan the turn and open its view (shown in the running cell)."""
    from .display import TurnInfo, make_view
    from .interpolate import Attached, interpolate

    state = magics.state
    apply_session_budget(magics, state.session)

    attached = Attached(budget=magics.context_budget)
    text = (
        body
        if opts.raw or not magics.interpolate
        else interpolate(body, magics.shell.user_ns, state.specials(), attached)
    )
    text = text.rstrip().lstrip("\n")
    if text:
        text = _with_context(magics, opts, text, attached)
    if not text:
        raise UsageError(
            "`%%lion`: the cell has no instruction. Write it on the lines below `%%lion`, "
            "e.g.\n\n%%lion\nSummarize the table above."
        )
    try:
        plan = plan_turn(magics, opts, text)
    except UsageError:
        raise
    except Exception as exc:
        raise as_usage_error(exc) from None
    plan.images, plan.files = attached.images, attached.files
    note = "; ".join(n for n in (_rerun_note(plan), _context_note(plan, attached)) if n)
    info = TurnInfo(
        branch=plan.branch.name or str(plan.branch.id),
        operation=plan.op,
        model=plan.model_label,
        fmt=opts.fmt,
        background=opts.bg,
        max_rate=magics.max_updates_per_second,
        live=magics.live_view,
        note=note,
        stop=plan.stop,  # before the view exists: a factory may wire its Stop button to it
        branch_cost=plan.branch.cost,
    )
    view = make_view(info, quiet=opts.quiet)
    if not opts.bg:  # a view may offer to raise the budget that stops the turn, and continue
        from .resume import budget_offer

        info.budget_offer = functools.partial(budget_offer, magics, plan, execute)
    view.start()
    return plan, view


def _with_context(magics: Any, opts: TurnOptions, text: str, attached: Any) -> str:
    """``text`` with the ``--file`` files and the ``--notebook`` cells added (a file's images
    and documents go to ``attached``)."""
    from ...context import load_file, notebook_context

    extra = []
    for path in opts.files:
        try:
            content = load_file(path, budget=magics.context_budget)
        except (OSError, ValueError) as exc:
            raise UsageError(f"`--file {path}`: {exc}".replace(f"`{path}`: ", "", 1)) from None
        attached.images += content.images
        attached.files += content.files
        attached.report.append(content.describe(path))
        extra.append(content.text)
    if opts.notebook:
        shell = magics.shell
        inputs = list(getattr(shell.history_manager, "input_hist_raw", None) or [])
        content = notebook_context(
            inputs,
            shell.user_ns.get("Out") or {},
            current=shell.execution_count,
            budget=magics.context_budget * 4,
        )
        attached.report.append(content.describe("--notebook"))
        extra.append(content.text)
    return "\n\n".join([text, *extra])


def _context_note(plan: TurnPlan, attached: Any) -> str:
    """What each value, file and the notebook became, for the turn's view."""
    if not attached.report:
        return ""
    note = "context: " + "; ".join(attached.report)
    if (attached.images or attached.files) and plan.op not in ATTACHING_OPERATIONS:
        note += f" (images and files are not sent with `--op {plan.op}`: it takes text only)"
    return note


def _rerun_note(plan: TurnPlan) -> str:
    """What a re-run did, for the cell's view ("" for a first run or ``append``)."""
    if plan.rerun == "fork":
        note = f"re-run: the earlier turn is kept on `{plan.kept_as}`"
    elif plan.rerun == "replace":
        note = "re-run: the earlier turn and what followed it were replaced"
    else:
        return ""
    if plan.fresh_session:
        note += f"; the agent `{plan.model_label}` starts a fresh session"
    return note


async def run_foreground(magics: Any, plan: TurnPlan, view: Any, *, cell_value: bool) -> Any:
    """Run the turn in this cell and deliver its result (variable, ``Out[n]``, next cell).

    Its Stop cancels the task running the cell, as the kernel's interrupt does; it is the
    notebook's current Stop while the turn runs. A Stop stops this turn only: the cell ends
    quietly (its view says what was kept; the value is ``None``) and Run All goes on. The
    interrupt stops everything: the cancellation propagates (`RunInterrupted`)."""
    from .runner import interrupt_cancels, loop_kept_awake

    state = magics.state
    task = asyncio.current_task()
    if task is not None:
        plan.stop.bind(asyncio.get_running_loop(), task.cancel)
    previous = state.swap_foreground_stop(plan.stop)
    try:
        with loop_kept_awake(), interrupt_cancels(task):
            result = await execute_shown(plan, view, state.session)
    except asyncio.CancelledError:
        if not _only_stopped(plan.stop, task):
            raise
        return None
    finally:
        plan.stop.release()
        state.swap_foreground_stop(previous, only_if=plan.stop)
    deliver(magics, plan, result, cell_value=cell_value)
    return result


def _only_stopped(stop: TurnStop, task: Any) -> bool:
    """Whether the turn's cancellation was its Stop's alone (then it is taken back here);
    not when something else cancelled the task too (the interrupt)."""
    if not stop.fired or task is None:
        return False
    cancelling = getattr(task, "cancelling", None)  # Python >= 3.11
    if cancelling is None:
        return True
    if cancelling() > 1:
        return False
    task.uncancel()
    return True


def start_background_turn(magics: Any, plan: TurnPlan, view: Any, *, cell_value: bool) -> Any:
    """Start the turn as a background run; its handle is the cell's value."""
    from .background import start_background

    state = magics.state
    shell = magics.shell

    def done(handle: Any) -> None:
        if handle.status == "done" and plan.options.out:
            shell.user_ns[plan.options.out] = handle.task.result()

    async def work() -> Any:
        try:
            return await execute_shown(plan, view, state.session)
        finally:
            plan.stop.release()

    label = plan.text.strip().splitlines()[0][:40]
    handle = start_background(work, branch=plan.branch, label=label, view=view, on_done=done)
    handle.task.add_done_callback(lambda _t: plan.stop.release())  # also if it never started
    plan.stop.bind(handle.task.get_loop(), handle.cancel)
    state.runs[handle.id] = handle
    if cell_value:
        set_cell_value(shell, handle)
    return handle


def deliver(magics: Any, plan: TurnPlan, result: Any, *, cell_value: bool) -> None:
    shell = magics.shell
    opts = plan.options
    if opts.out:
        shell.user_ns[opts.out] = result
    if opts.fmt == "code" and result is not None:
        from .render import as_text, extract_code

        shell.set_next_input(extract_code(as_text(result)), replace=False)
    if cell_value:
        set_cell_value(shell, result)


def set_cell_value(shell: Any, value: Any) -> None:
    """Make ``value`` the running cell's value (``Out[n]``, ``_``) without displaying it again."""
    if value is None:
        return
    hook = shell.displayhook
    try:
        hook.update_user_ns(value)
        hook.fill_exec_result(value)
    except Exception:  # a display hook without a cache: the value is still returned
        pass
