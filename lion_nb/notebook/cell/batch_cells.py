"""``%%lion --map ITERABLE`` and ``%%lion --compare MODEL,MODEL``: one cell, many turns.

``--map`` runs the cell once per item of ``ITERABLE`` (a name or an expression of the
notebook: a list, a DataFrame, a Series...) through `Session.map`; ``--compare`` runs it once
per model through `Session.compare`. Decisions:

- **Two passes of braces.** The notebook's own interpolation runs once, on the cell, as for
  any turn (``{df.shape}``, ``{In[3]}``; a value converted as for one turn, ADR-0110: a
  frame's schema, a figure as an image that every item sends, ``--file`` and ``--notebook``
  added); the per-item placeholders -- ``{item}``,
  ``{item[key]}``, ``{item.attr}``, ``{index}`` -- are set aside for it and filled per item
  by the batch (attribute and item lookups only, values scrubbed of secrets).
- **The cell's options mean what they mean for one turn**, applied to every item: ``-b``
  is the branch the items are cloned from (created with ``-s`` / ``-m`` when new), ``-m``
  the model of this run, ``--op``, ``-r``, ``-t`` (offered to each item's own clone) and
  ``--max-extensions`` as for a turn; each item runs the very code a single turn runs.
  Re-run policies do not apply (a run always makes new branches), nor does ``-f code``.
- **Showing it.** The run's progress (`lion_nb.widgets.BatchProgress`, or its text
  fallback) is shown while it runs; its Stop -- like the kernel's interrupt -- starts
  nothing new and cancels the calls in flight. Then the results are shown once, as their own
  output: a table of items and answers (a DataFrame for DataFrame input), or the models'
  answers side by side. The results are the cell's value and ``-o``'s variable.
- ``--map ... --bg`` returns the run at once (await it, ``.stop()`` it, ``.retry()`` it);
  it is listed by ``%lion runs`` and stopped by ``%lion cancel``.
"""

from __future__ import annotations

import itertools
import re
import time
from html import escape
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from .options import TurnOptions, resolve_response_format, resolve_tools

if TYPE_CHECKING:
    from .cell_context import CellContext

__all__ = ["run_batch_cell", "start_batch_cell"]

_ITEM = re.compile(r"\{(?:item|index)(?:\.[A-Za-z_]\w*|\[[^\[\]{}]*\])*\}")
_SHOWN_ROWS = 50
_ids = itertools.count(1)


# -- planning ------------------------------------------------------------------------------------
def _template(ctx: CellContext, opts: TurnOptions, body: str) -> tuple[str, Any]:
    """The cell's text, its values converted as for one turn (``{df}`` a schema, ``{fig}``
    an image), with ``--file`` and ``--notebook`` added; and what was attached."""
    from .interpolate import Attached, interpolate
    from .turn import _with_context

    text = body
    attached = Attached(budget=ctx.context_budget)
    if not opts.raw and ctx.interpolate:
        if opts.map_over is not None:  # kept for the batch, which fills them per item
            text = _ITEM.sub(lambda m: "{" + m.group(0) + "}", text)
        text = interpolate(text, ctx.user_ns, ctx.state.specials(), attached)
    text = text.rstrip().lstrip("\n")
    if not text:
        raise UsageError("`%%lion`: the cell has no instruction. Write it below `%%lion`.")
    return _with_context(ctx, opts, text, attached), attached


def _items(ctx: CellContext, expr: str) -> Any:
    source = expr.strip()
    try:
        return eval(compile(source, "<lion --map>", "eval"), ctx.user_ns)
    except NameError as exc:
        raise UsageError(
            f"`--map {source}`: no variable named `{getattr(exc, 'name', None) or exc}` in the "
            "notebook namespace. Define the items in a cell above."
        ) from None
    except SyntaxError:
        raise UsageError(
            f"`--map {source}`: not a Python expression. Quote an expression with spaces: "
            '`--map "rows[:10]"`.'
        ) from None
    except Exception as exc:
        raise UsageError(
            f"`--map {source}` could not be evaluated: {type(exc).__name__}: {exc}."
        ) from None


def _source(ctx: CellContext, opts: TurnOptions) -> tuple[Any, Any]:
    """The branch the items are cloned from (created when ``-b`` names a new one) and the
    model of this run (``None``: the branch's own)."""
    from .plan import default_model, model_for

    state = ctx.state
    name = opts.branch
    branch = state.branch(name)  # None: the active one
    if branch is None:
        if opts.branch is None:
            raise UsageError("The session has no branch left: create one with `%lion new NAME`.")
        model = model_for(ctx, opts.model, None) if opts.model else default_model(ctx)
        branch = state.session.new_branch(name=name, system=opts.system, chat_model=model)
        return branch, None
    if opts.system is not None:
        current = branch.system.system_message if branch.system is not None else None
        if opts.system != current:
            raise UsageError(
                f"`--system`: branch `{branch.name}` exists; its system prompt stays. Name a "
                "new branch with `-b` to give the items another one."
            )
    return branch, model_for(ctx, opts.model, branch) if opts.model else None


def _operation(ctx: CellContext, opts: TurnOptions, attached: Any = None) -> Any:
    """An async ``f(item_branch, prompt)`` that runs the cell's turn on one item's branch."""
    from . import cells
    from .execute import call_turn
    from .plan import TurnPlan

    ns = ctx.user_ns
    rf = resolve_response_format(opts.response_format, ns) if opts.response_format else None
    tools = resolve_tools(opts.tools, ns)
    cell = cells.current_cell(ctx.shell, ctx.state.hooked_cell_id)
    turn_id = f"{next(_ids)}-{int(time.time())}"

    def op_for(item_branch: Any) -> str:  # as for one turn, on the item's own model
        if opts.op:
            return opts.op
        if item_branch.chat_model.is_cli:
            return "run"
        return "operate" if tools or item_branch.tools else "communicate"

    async def one(item_branch: Any, prompt: Any) -> Any:
        op = op_for(item_branch)
        plan = TurnPlan(
            branch=item_branch,
            text=prompt,
            op=op,
            options=opts,
            cell=cell,
            response_format=rf,
            tools=tools,
            turn_id=turn_id,
        )
        if attached is not None:  # every item gets the cell's images and files
            plan.images, plan.files = list(attached.images), list(attached.files)
        before = len(item_branch.messages)
        try:
            return await call_turn(plan)
        finally:
            cells.tag_messages(item_branch.messages[before:], cell, turn_id)

    one.__name__ = opts.op or "turn"
    return one


def _start(ctx: CellContext, opts: TurnOptions, body: str) -> Any:
    text, attached = _template(ctx, opts, body)
    branch, model = _source(ctx, opts)
    session = ctx.state.session
    try:
        operation = _operation(ctx, opts, attached)
        if opts.compare:
            from .plan import model_for

            models = [model_for(ctx, spec, None) for spec in opts.compare]
            return session.compare(
                text, models, branch=branch, operation=operation, budget=opts.budget
            )
        items = _items(ctx, opts.map_over or "")
        return session.map(
            items, text, branch=branch, model=model, operation=operation, budget=opts.budget
        )
    except UsageError:
        raise
    except Exception as exc:
        from .failures import as_usage_error

        raise as_usage_error(exc) from None


# -- running -------------------------------------------------------------------------------------
async def run_batch_cell(
    ctx: CellContext, opts: TurnOptions, body: str, *, cell_value: bool
) -> Any:
    """Run the cell over its items (or models), show the progress, then the results."""
    import asyncio

    from .runner import loop_kept_awake

    if opts.bg:
        return start_batch_cell(ctx, opts, body, cell_value=cell_value)
    run = _start(ctx, opts, body)
    view = _show_progress(ctx, opts, run)
    state = ctx.state
    previous = state.swap_foreground_stop(run.stop)
    try:
        with loop_kept_awake():
            output = await run
    except (asyncio.CancelledError, KeyboardInterrupt):
        run.stop()  # an interrupted cell stops its run; what finished stays on `run`
        raise
    finally:
        state.swap_foreground_stop(previous, only_if=run.stop)
        from ...widgets.progress import TextProgress

        if isinstance(view, TextProgress):
            view.close()
    return _deliver(ctx, opts, run, output, cell_value=cell_value)


def start_batch_cell(ctx: CellContext, opts: TurnOptions, body: str, *, cell_value: bool) -> Any:
    """``--map ... --bg``: start the run and return it at once (the cell's value)."""
    from .turn import set_cell_value

    run = _start(ctx, opts, body)
    _show_progress(ctx, opts, run)
    handle = _RunEntry(run, label=body.strip().splitlines()[0][:40] if body.strip() else "")
    ctx.state.runs[handle.id] = handle
    out = opts.out
    if out:
        run.on_progress(lambda r: _bind_when_done(ctx, out, r))
    if cell_value:
        set_cell_value(ctx.shell, run)
    return run


def _bind_when_done(ctx: CellContext, out: str, run: Any) -> None:
    if run.state in ("finished", "stopped"):
        ctx.user_ns[out] = run.output()


def _show_progress(ctx: CellContext, opts: TurnOptions, run: Any) -> Any:
    if opts.quiet:
        return None
    from ...widgets.progress import show_progress

    return show_progress(run, live=ctx.live_view, max_rate=ctx.max_updates_per_second, in_cell=True)


def _deliver(
    ctx: CellContext, opts: TurnOptions, run: Any, output: Any, *, cell_value: bool
) -> Any:
    from IPython.display import display

    from .turn import set_cell_value

    if not opts.quiet:
        if opts.compare:
            from ...widgets.compare import Comparison

            display(Comparison(run))
        elif run._kind != "list":
            display(output)
        else:
            display(ResultsTable(run))
    if opts.out:
        ctx.user_ns[opts.out] = output
    if cell_value:
        set_cell_value(ctx.shell, output)
    return output


class ResultsTable:
    """A finished run's items and answers (the first 50), and its failures' errors."""

    def __init__(self, run: Any):
        self.run = run

    @staticmethod
    def _text(result: Any) -> str:
        if result.status == "done":
            from .output_formats import as_text

            return as_text(result.value)
        return result.error_text or result.status

    def _rows(self) -> list[Any]:
        return self.run.items[:_SHOWN_ROWS]

    def _more(self) -> int:
        return max(0, len(self.run.items) - _SHOWN_ROWS)

    def _repr_html_(self) -> str:
        p = self.run.progress()
        head = (
            f"<div><strong>{escape(p.name)}</strong> · {p.done}/{p.total} done"
            + (f" · {p.failed} failed" if p.failed else "")
            + (f" · {p.stopped} stopped" if p.stopped else "")
            + "</div>"
        )
        rows = "".join(
            f"<tr><td>{r.index}</td><td>{escape(r.label)}</td>"
            f"<td>{'' if r.status == 'done' else escape(r.status)}</td>"
            f"<td>{escape(self._text(r))}</td></tr>"
            for r in self._rows()
        )
        more = f"<div><em>… {self._more()} more</em></div>" if self._more() else ""
        return (
            f"{head}<table><tr><th>#</th><th>item</th><th></th><th>result</th></tr>"
            f"{rows}</table>{more}"
        )

    def __repr__(self) -> str:
        lines = [self.run.progress().line().split(" (", 1)[0] + f": {len(self.run.items)} items"]
        for r in self._rows():
            mark = "✓" if r.status == "done" else "✗" if r.status == "failed" else "·"
            lines.append(f"{mark} [{r.index}] {r.label} → {' '.join(self._text(r).split())[:200]}")
        if self._more():
            lines.append(f"… {self._more()} more")
        return "\n".join(lines)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


class _RunEntry:
    """A ``--map --bg`` run as ``%lion runs`` / ``%lion cancel`` see a background run."""

    def __init__(self, run: Any, *, label: str):
        from .background import _ids as run_ids

        self.id = next(run_ids)
        self.run = run
        self.label = label
        self.branch = run.source or run._base
        self.started = time.time()

    def done(self) -> bool:
        return not self.run.running and self.run.state != "pending"

    def cancel(self) -> bool:
        return self.run.stop()

    @property
    def status(self) -> str:
        return "running" if self.run.running else self.run.state

    @property
    def elapsed(self) -> float:
        return self.run.progress().elapsed

    def __await__(self):
        return self.run.__await__()
