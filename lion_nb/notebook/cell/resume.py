"""Raise the budget that stopped a cell's turn, and continue the turn (ADR-0107 D5).

A turn that reaches a budget ends in `BudgetExceeded` before the call that would cross it
starts. Where the turn is shown as a widget, the view offers a button: "Raise the cell
budget to $X and continue". `budget_offer` makes that offer from the error:

- **Which budget.** The one that stopped the turn, and the limit it hit (dollars or tokens):
  the cell's ``--budget`` (the turn keeps one meter, so the continued turn counts what the
  first part spent), the branch's, or the session's -- when that is
  ``%config LionMagics.session_budget``, the setting is raised too, so the next cell does
  not put the old cap back.
- **To what.** At least twice the old limit and half as much again as the spend plus the
  blocked call's worst case, rounded up to two significant figures: one click is enough for
  the call that was refused, and the cap stays a cap.
- **What continues.** A turn that recorded nothing (its first call was refused: nothing of
  it is on the branch) is run again as planned. A turn that recorded steps (a ReAct or
  operate loop stopped between calls) goes on from what the branch holds: the same
  operation, with `CONTINUE` as its instruction.
- **Where.** The continued turn is a background run on the kernel's loop (the click arrives
  after the cell ended; the kernel stays free): it streams into the same turn view, its
  Stop works, its branch is busy for other cells meanwhile, and its answer fills the output
  the view reserved in the turn's cell. ``-o NAME`` gets the answer.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cell_context import CellContext

__all__ = ["CONTINUE", "BudgetOffer", "budget_offer", "raised_limit"]

#: the instruction of a continued turn that had recorded steps
CONTINUE = "Continue the task above from where you stopped."


@dataclass(frozen=True, slots=True)
class BudgetOffer:
    """What the view shows (``text``, the button's ``action``) and what the button does."""

    text: str
    action: str
    go: Any  # () -> the background run of the continued turn, or None if it cannot start


def raised_limit(limit: float, spent: float, needed: float, *, whole: bool = False) -> float:
    """The new limit: ``max(2 * limit, 1.5 * (spent + needed))`` rounded up to two
    significant figures (a whole number for tokens)."""
    target = max(2 * limit, 1.5 * (spent + needed))
    if target <= 0:
        return 1 if whole else 0.01
    step = 10 ** (math.floor(math.log10(target)) - 1)
    value = math.ceil(round(target / step, 9)) * step
    return int(max(value, 1)) if whole else float(f"{value:.10g}")


def _money(usd: float) -> str:
    return f"${usd:.4f}" if usd < 1 else f"${usd:,.2f}"


def _limit_text(kind: str, value: float) -> str:
    return f"{int(value):,} tokens" if kind == "tokens" else f"${value:g}"


def budget_offer(
    ctx: CellContext, plan: Any, execute: Any, error: BaseException, view: Any
) -> BudgetOffer | None:
    """The offer for a turn that ended in ``error``; ``None`` unless a cell, branch or
    session budget stopped it. ``execute`` runs a planned turn (`execute.execute`; given, not
    imported, since `turn` is what offers this)."""
    from ...errors import BudgetExceeded

    if not isinstance(error, BudgetExceeded) or error.budget is None:
        return None
    if error.where not in ("cell", "branch", "session"):
        return None
    kind = error.limit
    old = getattr(error.budget, kind, None)
    if old is None:
        return None
    if kind == "tokens":
        spent, spent_text = float(error.spent_tokens), f"{error.spent_tokens:,} tokens"
        needed_text = f"about {int(error.needed):,} tokens"
    else:
        spent, spent_text = float(error.spent_usd or 0.0), _money(error.spent_usd or 0.0)
        needed_text = f"up to {_money(error.needed)}"
    new = raised_limit(old, spent, float(error.needed), whole=kind == "tokens")
    text = (
        f"The {error.where} budget of {_limit_text(kind, old)} is reached: {spent_text} spent, "
        f"and the next call could take {needed_text}."
    )
    action = f"Raise the {error.where} budget to {_limit_text(kind, new)} and continue"

    def go() -> Any:
        return _continue(ctx, plan, execute, view, error, kind, new)

    return BudgetOffer(text, action, go)


def _raise(ctx: CellContext, error: Any, kind: str, new: float) -> None:
    setattr(error.budget, kind, new)
    error.budget._warned = False  # one warning again, at the new limit's share
    if error.where == "session" and kind == "usd":
        ctx.keep_session_budget(error.budget, new)  # else the next cell puts the old cap back


def _recorded(plan: Any) -> bool:
    from .cells import TAG

    return any(
        (m.metadata.get(TAG) or {}).get("turn") == plan.turn_id for m in plan.branch.messages
    )


def _continue(
    ctx: CellContext, plan: Any, execute: Any, view: Any, error: Any, kind: str, new: float
) -> Any:
    from .background import start_background
    from .failures import presentable
    from .handle_view import SafeView

    state = ctx.state
    busy = state.busy(plan.branch)
    if busy is not None:
        return None  # a continued turn (or another run) is using the branch already
    _raise(ctx, error, kind, new)
    again = dataclasses.replace(
        plan, text=CONTINUE if _recorded(plan) else plan.text, stop=type(plan.stop)()
    )
    view.info.stop = again.stop
    view.restart()

    async def work() -> Any:
        try:
            return await execute(again, SafeView(view), state.session)
        except Exception as exc:
            shown = presentable(exc)
            if shown is exc:
                raise
            raise shown from None

    def done(handle: Any) -> None:
        if handle.status == "done" and plan.options.out:
            ctx.user_ns[plan.options.out] = handle.task.result()

    label = f"continued: {plan.text.strip().splitlines()[0][:30]}"
    handle = start_background(work, branch=plan.branch, label=label, view=view, on_done=done)
    handle.task.add_done_callback(lambda _t: again.stop.release())
    again.stop.bind(handle.task.get_loop(), handle.cancel)
    state.runs[handle.id] = handle
    return handle
