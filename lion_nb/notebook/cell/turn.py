"""One turn from a cell, start to finish: interpolate, plan (`plan`), open the view, run
(`execute`) in the foreground or the background, and deliver the result.

While a foreground turn runs, its loop is kept awake (`runner.loop_kept_awake`) so that an
interrupt of a silent model acts at once, and in a terminal IPython a Ctrl-C cancels it as the
interrupt does (`runner.interrupt_cancels`); its Stop is a `TurnStop` (`stop`).
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from IPython.core.error import UsageError

from .cell_context import CellContext
from .execute import ATTACHING_OPERATIONS, execute, execute_shown
from .failures import as_usage_error
from .options import TurnOptions
from .plan import TurnPlan, plan_turn
from .stop import TurnStop

__all__ = ["TurnPlan", "TurnStop", "deliver", "execute", "plan_turn", "prepare"]


# -- from a cell to a result ---------------------------------------------------------------------
def prepare(ctx: CellContext, opts: TurnOptions, body: str) -> tuple[TurnPlan, Any]:
    """Interpolate ``body``, plan the turn and open its view (shown in the running cell):
    three steps, each its own function (`_instruction`, `plan.plan_turn`, `_open_view`)."""
    ctx.apply_session_budget(ctx.state.session)
    text, attached = _instruction(ctx, opts, body)
    try:
        plan = plan_turn(ctx, opts, text)
    except UsageError:
        raise
    except Exception as exc:
        raise as_usage_error(exc) from None
    plan.images, plan.files = attached.images, attached.files
    return plan, _open_view(ctx, plan, attached)


def _instruction(ctx: CellContext, opts: TurnOptions, body: str) -> tuple[str, Any]:
    """The turn's instruction: ``body`` interpolated (unless ``--raw``), with the ``--file``
    and ``--notebook`` context, and what was attached on the way (images, files)."""
    from .interpolate import Attached, interpolate

    attached = Attached(budget=ctx.context_budget)
    text = (
        body
        if opts.raw or not ctx.interpolate
        else interpolate(body, ctx.user_ns, ctx.state.specials(), attached)
    )
    text = text.rstrip().lstrip("\n")
    if text:
        text = _with_context(ctx, opts, text, attached)
    if not text:
        raise UsageError(
            "`%%lion`: the cell has no instruction. Write it on the lines below `%%lion`, "
            "e.g.\n\n%%lion\nSummarize the table above."
        )
    return text, attached


def _open_view(ctx: CellContext, plan: TurnPlan, attached: Any) -> Any:
    """The turn's view, started: what the turn runs on and what re-running and the context
    did, shown before the first model call."""
    from .handle_view import TurnInfo, make_view

    opts = plan.options
    note = "; ".join(n for n in (_rerun_note(plan), _context_note(plan, attached)) if n)
    info = TurnInfo(
        branch=plan.branch.name or str(plan.branch.id),
        operation=plan.op,
        model=plan.model_label,
        fmt=opts.fmt,
        background=opts.bg,
        max_rate=ctx.max_updates_per_second,
        live=ctx.live_view,
        note=note,
        stop=plan.stop,  # before the view exists: a factory may wire its Stop button to it
        branch_cost=plan.branch.cost,
    )
    view = make_view(info, quiet=opts.quiet)
    if not opts.bg:  # a view may offer to raise the budget that stops the turn, and continue
        from .resume import budget_offer

        info.budget_offer = functools.partial(budget_offer, ctx, plan, execute)
    view.start()
    return view


def _with_context(ctx: CellContext, opts: TurnOptions, text: str, attached: Any) -> str:
    """``text`` with the ``--file`` files and the ``--notebook`` cells added (a file's images
    and documents go to ``attached``)."""
    from ...context import load_file, notebook_context

    extra = []
    for path in opts.files:
        try:
            content = load_file(path, budget=ctx.context_budget)
        except (OSError, ValueError) as exc:
            raise UsageError(f"`--file {path}`: {exc}".replace(f"`{path}`: ", "", 1)) from None
        attached.images += content.images
        attached.files += content.files
        attached.report.append(content.describe(path))
        extra.append(content.text)
    if opts.notebook:
        shell = ctx.shell
        inputs = list(getattr(shell.history_manager, "input_hist_raw", None) or [])
        content = notebook_context(
            inputs,
            shell.user_ns.get("Out") or {},
            current=shell.execution_count,
            budget=ctx.context_budget * 4,
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


async def run_foreground(ctx: CellContext, plan: TurnPlan, view: Any, *, cell_value: bool) -> Any:
    """Run the turn in this cell and deliver its result (variable, ``Out[n]``, next cell).

    Its Stop cancels the task running the cell, as the kernel's interrupt does; it is the
    notebook's current Stop while the turn runs. A Stop stops this turn only: the cell ends
    quietly (its view says what was kept; the value is ``None``) and Run All goes on. The
    interrupt stops everything: the cancellation propagates (`RunInterrupted`)."""
    from .runner import interrupt_cancels, loop_kept_awake

    state = ctx.state
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
    deliver(ctx, plan, result, cell_value=cell_value)
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


def start_background_turn(ctx: CellContext, plan: TurnPlan, view: Any, *, cell_value: bool) -> Any:
    """Start the turn as a background run; its handle is the cell's value."""
    from .background import start_background

    state = ctx.state
    shell = ctx.shell

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


def deliver(ctx: CellContext, plan: TurnPlan, result: Any, *, cell_value: bool) -> None:
    shell = ctx.shell
    opts = plan.options
    if opts.out:
        shell.user_ns[opts.out] = result
    if opts.fmt == "code" and result is not None:
        from .output_formats import as_text, extract_code

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
