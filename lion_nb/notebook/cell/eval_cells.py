"""``%%lion --eval CASES --check EXPR``: the cell as a prompt template, evaluated.

The cell's text is the template each case fills (``{field}`` is the case's field, see
`lion_nb.evals.cases`); ``--check`` (repeatable) gives the checks, ``--compare`` the
models (else ``-m``, else the branch's model), ``--repeat`` the repeats and ``--name`` the
name the run is saved and compared under. Decisions:

- **One pass of braces, the evaluation's.** The notebook's interpolation does not run on an
  ``--eval`` cell: its braces are the cases' fields, filled per case. A value of the
  notebook goes into the cases, or into the template before the cell runs.
- **A check is an expression of the notebook**, evaluated with the checks of
  `lion_nb.evals` in reach (``--check "contains('Paris')"`` needs no import); it may give
  one check or a list of them. A name the notebook lacks is a `UsageError` naming it.
- **Showing it.** The `EvalGrid` is shown live where widgets can show (a text line
  elsewhere); the kernel's interrupt stops the run like the batch cells'. Then the summary
  (pass rate and 95 % interval per prompt × model) and, with ``--name``, what changed since
  the last run of that name are shown as their own output. The run is the cell's value and
  ``-o``'s variable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from .options import TurnOptions

if TYPE_CHECKING:
    from .cell_context import CellContext

__all__ = ["EvalReport", "run_eval_cell"]


def _value(ctx: CellContext, expr: str, option: str, extra: dict[str, Any] | None = None) -> Any:
    source = expr.strip()
    namespace = {**(extra or {}), **ctx.user_ns}
    try:
        return eval(compile(source, f"<lion {option}>", "eval"), namespace)
    except NameError as exc:
        raise UsageError(
            f"`{option} {source}`: no variable named `{getattr(exc, 'name', None) or exc}` in "
            "the notebook namespace. Define it in a cell above."
        ) from None
    except SyntaxError:
        raise UsageError(
            f"`{option} {source}`: not a Python expression. Quote an expression with spaces: "
            f"`{option} \"contains('Paris')\"`."
        ) from None
    except Exception as exc:
        raise UsageError(
            f"`{option} {source}` could not be evaluated: {type(exc).__name__}: {exc}."
        ) from None


def _checks(ctx: CellContext, opts: TurnOptions) -> list[Any]:
    import lion_nb.evals as evals

    names = {name: getattr(evals, name) for name in evals.__all__}
    checks: list[Any] = []
    for expr in opts.checks:
        value = _value(ctx, expr, "--check", names)
        found = list(value) if isinstance(value, (list, tuple)) else [value]
        for check in found:
            if not callable(check):
                raise UsageError(
                    f"`--check {expr}` is a {type(check).__name__}, not a check. Give a check "
                    "such as `contains('Paris')` or a function `(answer, case)`."
                )
        checks += found
    return checks


def _start(ctx: CellContext, opts: TurnOptions, body: str) -> Any:
    from .batch_cells import _source
    from .plan import model_for

    text = body.rstrip().lstrip("\n")
    if not text:
        raise UsageError("`%%lion --eval`: the cell has no prompt. Write the template below.")
    cases = _value(ctx, opts.eval_over or "", "--eval")
    checks = _checks(ctx, opts)
    branch, model = _source(ctx, opts)
    if opts.compare:
        models: Any = {spec: model_for(ctx, spec, None) for spec in opts.compare}
    else:
        models = [model] if model is not None else None
    try:
        return ctx.state.session.evaluate(
            cases,
            prompt=text,
            models=models,
            checks=checks,
            repeat=opts.repeat or 1,
            name=opts.eval_name,
            branch=branch,
            **({"reasoning": opts.effort} if opts.effort is not None else {}),
        )
    except Exception as exc:
        from .failures import as_usage_error

        raise as_usage_error(exc) from None


async def run_eval_cell(ctx: CellContext, opts: TurnOptions, body: str, *, cell_value: bool) -> Any:
    """Run the evaluation, show the grid live, then the summary and the changes."""
    import asyncio

    from IPython.display import display

    from .runner import loop_kept_awake
    from .turn import set_cell_value

    run = _start(ctx, opts, body)
    grid = None
    if not opts.quiet and _widgets(ctx):
        from ...widgets.eval_grid import EvalGrid

        grid = EvalGrid(run, live=True, max_rate=ctx.max_updates_per_second)
        display(grid)
    state = ctx.state
    previous = state.swap_foreground_stop(run.stop)
    try:
        with loop_kept_awake():
            await run
    except (asyncio.CancelledError, KeyboardInterrupt):
        run.stop()  # an interrupted cell stops its run; what finished stays on `run`
        raise
    finally:
        state.swap_foreground_stop(previous, only_if=run.stop)
    if not opts.quiet:
        display(EvalReport(run, grid=grid is None))
    if opts.out:
        ctx.user_ns[opts.out] = run
    if cell_value:
        set_cell_value(ctx.shell, run)
    return run


def _widgets(ctx: CellContext) -> bool:
    live = ctx.live_view
    if live == "widget":
        return True
    if live != "auto":
        return False
    from ...widgets.progress import widget_frontend

    return widget_frontend()


class EvalReport:
    """A finished evaluation: the summary, the changes since the last run of its name and,
    where no live grid was shown, the grid as text."""

    def __init__(self, run: Any, *, grid: bool = False):
        self.run = run
        self.grid = grid

    def lines(self) -> list[str]:
        run = self.run
        ended, total = run.progress()
        lines = [f"{run.name}: {ended}/{total} cells ({run.state})", run.summary_text()]
        if run.changes is not None:
            lines.append(f"Since the last `{run.name}` run: " + run.changes.text())
        flaky = run.flaky()
        if flaky:
            ids = ", ".join(f"{f['case_id']} ({f['prompt']} × {f['model']})" for f in flaky)
            lines.append(f"Flaky: {ids}")
        return lines

    def __repr__(self) -> str:
        text = "\n".join(self.lines())
        if self.grid:
            from ...evals.grid import build_grid

            text += "\n" + build_grid(self.run, self.run.changes).text()
        return text

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))
