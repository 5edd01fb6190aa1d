"""Budgets that stop spend before it happens.

A `Budget` caps dollars, tokens or both. It applies where it is set: ``session.budget``
(every call of the session's branches), ``branch.budget``, a batch (``session.map(...,
budget=)``) or a scope (`budget_scope`: a notebook cell's ``%%lion --budget``). Session
and branch budgets count everything their ledger holds; a scope counts the calls made
inside it.

Before each model call, the spend so far plus the call's own worst case (its estimated
input, all uncached, plus its ``max_tokens``, or with no ``max_tokens`` its thinking
allowance, `lion_nb.models.reasoning.thinking_allowance`, and the least output) is checked
against every budget that applies (`check_budgets`). The input estimate starts from the branch's last real count
(`estimate_input`), so a server that counts more than the offline estimate cannot carry a
call past a budget; a call with no ``max_tokens`` is given one that fits when its budgets
leave less than `OUTPUT_BOUND` tokens of room, and is refused when they leave under
`MIN_OUTPUT`. A provider batch is checked whole before it is submitted
(`fitting_requests`). A call that would cross one is not started: `BudgetExceeded`
names the budget, the spend and the way to raise it, and nothing of the turn is recorded. A
dollar budget over a model with no price fails closed (a `ConfigurationError` naming the
model and ``price=``) rather than letting unknown spend through. Once spend reaches
``warn_at`` of a limit, one warning.

Calls already in flight when a budget is reached finish: with ``concurrency > 1`` a batch
can end up to ``concurrency - 1`` calls past its cap.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ..errors import BudgetExceeded, ConfigurationError
from ..shapes import JsonObject
from .ledger import AFTER_RECORD, _owner, branch_ledger

if TYPE_CHECKING:
    from ..models.imodel import iModel
    from ..models.prices import Pricer
    from .parts import Attached as Session
    from .parts import Spender as Branch

__all__ = [
    "Budget",
    "BudgetWarning",
    "Meter",
    "after_call",
    "budget_scope",
    "check_budgets",
    "estimate_input",
    "fitting_requests",
    "note_usage",
]


#: whether any `Budget` was made in this process: until one is, no call has a budget to check
#: and the checks return at once (most programs never make one)
_MADE = [False]


class BudgetWarning(UserWarning):
    """Spend under a budget reached its ``warn_at`` share."""


class Budget:
    """A cap on spend: ``usd`` dollars and/or ``tokens`` (input plus output); ``warn_at`` is
    the share of a limit at which one warning is given. Raise a limit by assigning to it."""

    __slots__ = ("_tokens", "_usd", "_warned", "warn_at")

    def __init__(
        self, usd: float | None = None, tokens: int | None = None, warn_at: float | None = 0.8
    ):
        if warn_at is not None and not (isinstance(warn_at, (int, float)) and 0 < warn_at <= 1):
            raise ConfigurationError(
                f"`Budget(warn_at={warn_at!r:.40})`: give a share between 0 and 1, or None."
            )
        self.usd = usd
        self.tokens = tokens
        self.warn_at = warn_at
        self._warned = False
        _MADE[0] = True

    @property
    def usd(self) -> float | None:
        """The dollar limit (``None``: none)."""
        return self._usd

    @usd.setter
    def usd(self, value: float | None) -> None:
        _check_limit("usd", value)
        self._usd = None if value is None else float(value)

    @property
    def tokens(self) -> int | None:
        """The token limit, input plus output (``None``: none)."""
        return self._tokens

    @tokens.setter
    def tokens(self, value: int | None) -> None:
        _check_limit("tokens", value)
        self._tokens = value

    @classmethod
    def of(cls, value: object) -> Budget | None:
        """A `Budget` from a Budget, a number of dollars, or ``None``."""
        if value is None or isinstance(value, Budget):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return cls(usd=value)
        raise ConfigurationError(
            f"`budget={value!r:.40}`: give a `lion_nb.Budget(usd=..., tokens=...)` or a number "
            "of dollars."
        )

    def __repr__(self) -> str:
        parts = [f"usd={self.usd!r}"] if self.usd is not None else []
        if self.tokens is not None:
            parts.append(f"tokens={self.tokens!r}")
        return f"Budget({', '.join(parts)})"


def _check_limit(name: str, value: Any) -> None:
    """A limit is a finite number >= 0: NaN compares false with everything, so a NaN limit
    would never stop a call, and an infinite one is no limit (that is ``None``)."""
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or (isinstance(value, float) and not math.isfinite(value))
        or value < 0
        or value > 1e300  # past what a float holds: no limit a call could reach
    ):
        raise ConfigurationError(
            f"`Budget({name}={value!r:.40})`: give a finite number >= 0, or None for no limit."
        )


class Meter:
    """What was spent under a scoped budget (a cell, a batch)."""

    __slots__ = ("budget", "calls", "tokens", "unpriced", "usd", "where")

    def __init__(self, budget: Budget, where: str):
        self.budget = budget
        self.where = where
        self.usd = 0.0
        self.tokens = 0
        self.calls = 0
        self.unpriced = 0

    def add(self, usd: float | None, tokens: int) -> None:
        self.calls += 1
        self.tokens += tokens
        if usd is None:
            self.unpriced += 1
        else:
            self.usd += usd


_SCOPES: contextvars.ContextVar[tuple[Meter, ...]] = contextvars.ContextVar(
    "lion_nb_budget_scopes", default=()
)


@contextmanager
def budget_scope(meter: Meter | Budget | None, where: str = "cell") -> Iterator[Meter | None]:
    """Apply a budget to the calls made in this context (and the tasks it starts)."""
    if meter is None:
        yield None
        return
    if isinstance(meter, Budget):
        meter = Meter(meter, where)
    token = _SCOPES.set((*_SCOPES.get(), meter))
    try:
        yield meter
    finally:
        _SCOPES.reset(token)


def _applying(branch: Branch, session: Session | None) -> list[tuple[Budget, str, Any]]:
    """``(budget, where, spend)`` for every budget over a call of ``branch``; ``spend`` is a
    `Ledger` or a `Meter`."""
    from .ledger import session_ledger

    found: list[tuple[Budget, str, Any]] = []
    budget = branch.spend.budget
    if budget is not None:
        found.append((budget, "branch", branch_ledger(branch)))
    if session is not None:
        budget = session.spend.budget
        if budget is not None:
            found.append((budget, "session", session_ledger(session)))
    found.extend((m.budget, m.where, m) for m in _SCOPES.get())
    return found


def _spent(spend: Any) -> tuple[float, int, int]:
    return spend.usd, spend.tokens, spend.unpriced


class BudgetedRequest(Protocol):
    """What a budget reads of a call's request: a `ChatRequest`, or a CLI run's prompt in
    that shape. ``options`` is written: a call with no ``max_tokens`` gets the budget's."""

    messages: list[JsonObject]
    tools: list[JsonObject] | None
    options: JsonObject


def estimate_input(branch: Branch, request: BudgetedRequest) -> tuple[int, int]:
    """A call's input tokens, estimated: the request's own estimate, raised by what the last
    call with a real count showed the estimate misses (the server's chat template, a
    tokenizer that counts more) -- that is, the last real count plus the messages added
    since. The estimate of a conversation's history is incremental (`lion_nb.tokens`), so
    this costs the new messages, not the whole history. Returns ``(estimate, raised)``."""
    est = _request_tokens(request)
    ledger = branch.spend.ledger
    anchor = ledger.anchor if ledger is not None else None
    if anchor is not None and est >= anchor[0]:  # the history went on from that call
        return est, est + anchor[1]
    return est, est


def note_usage(
    branch: Branch, request: BudgetedRequest, response: Any
) -> None:  # Any: an endpoint's response (its `usage` is read if it has one)
    """Remember how far a call's real usage was above its estimate, for `estimate_input`
    (only for a call a budget admitted: no budget, nothing to do)."""
    if not _MADE[0]:
        return
    ledger = branch.spend.ledger
    admitted = ledger.admitted if ledger is not None else None
    if admitted is None or admitted[0] is not request:
        return
    ledger.admitted = None
    usage = response.usage
    if not isinstance(usage, dict) or "estimated" in usage:
        return
    from ..tokens import estimate_tokens

    # the answer as the next request holds it (one message: its text and its tool calls)
    answer_tokens = 4 + estimate_tokens(response.text)
    answer_tokens += sum(estimate_tokens(c.arguments) + 3 for c in response.tool_calls)
    est = admitted[1]
    real = (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0)
    real -= usage.get("reasoning_tokens") or 0  # billed, but not in the next request
    # the next request holds this one's input and the answer: anchor on their real count
    ledger.anchor = (est + answer_tokens, max(0, real - est - answer_tokens))


def _request_tokens(request: Any) -> int:
    """A request's input tokens as estimated from its messages and tools."""
    from ..tokens import estimate_message_tokens, estimate_tokens

    est = estimate_message_tokens(request.messages)
    if request.tools:
        est += estimate_tokens(request.tools)
    return est


def _max_tokens(imodel: Any, request: Any) -> int | None:
    """The output limit a request is sent with (the model's options, then the request's)."""
    options = {**(getattr(imodel, "options", None) or {}), **(request.options or {})}
    value = options.get("max_completion_tokens") or options.get("max_tokens")
    return value if isinstance(value, int) else None


def _thinking(imodel: Any, request: Any) -> int:
    """The output tokens the call's thinking may take besides its answer (no ``max_tokens``
    bounds it here: both APIs count thinking inside that limit)."""
    from ..models.reasoning import thinking_allowance

    options = {**(getattr(imodel, "options", None) or {}), **(request.options or {})}
    return thinking_allowance(options)


#: the least output a call is started with when a budget has to bound it
MIN_OUTPUT = 16
#: a call with no ``max_tokens`` is given one only when its budgets leave less room than
#: this: above it, a limit could exceed what the model accepts (and rarely matters)
OUTPUT_BOUND = 4096


def check_budgets(branch: Branch, imodel: iModel, request: BudgetedRequest) -> None:
    """Raise before a call that would cross a budget (see the module docstring). A call with
    no ``max_tokens`` is given the largest one every budget that applies leaves room for."""
    if not _MADE[0]:
        return
    spend = branch.spend
    session = None
    if branch.attachment.session_id is not None:
        session = _owner(branch)
    if (
        spend.budget is None
        and not _SCOPES.get()
        and (session is None or session.spend.budget is None)
    ):
        return
    raw, est_in = estimate_input(branch, request)
    (spend.ledger or branch_ledger(branch)).admitted = (request, raw)
    max_tokens = _max_tokens(imodel, request)
    label = f"{imodel.provider}/{imodel.model}"
    applying = _applying(branch, session)
    if max_tokens is None:
        thinking = _thinking(imodel, request)  # output the call may think before it answers
        max_tokens = _fitting_output(applying, imodel, est_in, label, thinking)
        if max_tokens is not None:
            max_tokens += thinking  # the limit bounds thinking and answer together
            request.options = {**(request.options or {}), "max_tokens": max_tokens}
        else:  # unbounded: its thinking and the least output it is started with must fit
            max_tokens = thinking + MIN_OUTPUT
    _, crossed = _first_crossed(applying, imodel, imodel.pricer, label, est_in, max_tokens)
    if crossed is None:
        return
    budget, where, usd, tokens, kind, needed = crossed
    if kind == "usd":
        message = (
            f"The {where} budget of ${budget.usd:g} is reached: ${usd:.4f} spent, and this "
            f"call of `{label}` could cost up to ${needed:.4f} more."
        )
    else:
        message = (
            f"The {where} budget of {budget.tokens:,} tokens is reached: {tokens:,} used, and "
            f"this call of `{label}` needs about {needed:,} more."
        )
    raise BudgetExceeded(
        f"{message} It was not started; nothing of it is recorded. {_raise_hint(where, kind)}",
        budget=budget,
        where=where,
        spent_usd=usd,
        spent_tokens=tokens,
        limit=kind,
        needed=needed,
    )


def _first_crossed(
    applying: list[tuple[Budget, str, Any]],
    imodel: Any,
    pricer: Any,
    label: str,
    est_in: int,
    max_tokens: int,
    *,
    planned_usd: float = 0.0,
    planned_tokens: int = 0,
) -> tuple[float, tuple[Budget, str, float, int, str, Any] | None]:
    """A call's worst case in dollars (by ``pricer``), and the first budget it would cross on
    top of what is spent and what is ``planned`` before it: ``(budget, where, spent usd,
    spent tokens, "usd" | "tokens", needed)``, or ``None``. A dollar budget over an unpriced
    model, or over calls that had no price, fails closed (`ConfigurationError`)."""
    worst_usd: float | None = None
    for budget, where, spend in applying:
        usd, tokens, unpriced = _spent(spend)
        if budget.usd is not None:
            if worst_usd is None:
                _check_priced(imodel, budget, where, label)
                worst_usd = pricer.worst_case(est_in, max_tokens) or 0.0
            if unpriced:
                raise ConfigurationError(
                    f"The {where} budget of ${budget.usd:g} cannot be kept: {unpriced} call(s) "
                    "under it had no price. Give those models `price=`."
                )
            if usd + planned_usd + worst_usd > budget.usd:
                return worst_usd, (budget, where, usd, tokens, "usd", planned_usd + worst_usd)
        needed = planned_tokens + est_in + max_tokens
        if budget.tokens is not None and tokens + needed > budget.tokens:
            return worst_usd or 0.0, (budget, where, usd, tokens, "tokens", needed)
    return worst_usd or 0.0, None


def fitting_requests(
    branch: Branch,
    imodel: iModel,
    requests: Sequence[BudgetedRequest],
    *,
    session: Session | None = None,
    pricer: Pricer | None = None,
    meter: Meter | None = None,
    planned: list[float] | None = None,
) -> tuple[int, BudgetExceeded | None]:
    """How many of ``requests`` (in order) fit, all together, every budget over the calls of
    ``branch``'s clones (its session's, a scope's) and ``meter``'s, by their worst cases
    (``pricer``: the batch's discounted price); and the `BudgetExceeded` for the first that
    does not. A provider batch is checked whole before it is submitted: once submitted, its
    calls cannot be stopped one by one. ``planned`` (``[usd, tokens]``): the worst cases of
    the job's batches submitted before this one, updated with the ones that fit here."""
    if not _MADE[0]:
        return len(requests), None
    if session is None and branch.attachment.session_id is not None:
        session = _owner(branch)
    # the items run on clones of ``branch``: its own budget is not theirs (as in a live run)
    applying = [found for found in _applying(branch, session) if found[1] != "branch"]
    if meter is not None and all(spend is not meter for _, _, spend in applying):
        applying.append((meter.budget, meter.where, meter))
    if not applying:
        return len(requests), None
    pricer = pricer or imodel.pricer
    label = f"{imodel.provider}/{imodel.model}"
    sum_usd, sum_tokens = (float(planned[0]), int(planned[1])) if planned else (0.0, 0)
    for n, request in enumerate(requests):
        est_in = _request_tokens(request)
        limit = _max_tokens(imodel, request)
        max_tokens = _thinking(imodel, request) + MIN_OUTPUT if limit is None else limit
        worst_usd, crossed = _first_crossed(
            applying,
            imodel,
            pricer,
            label,
            est_in,
            max_tokens,
            planned_usd=sum_usd,
            planned_tokens=sum_tokens,
        )
        if crossed is not None:
            budget, where, usd, tokens, kind, needed = crossed
            if kind == "usd":
                message = (
                    f"The {where} budget of ${budget.usd:g} is reached: ${usd:.4f} spent, "
                    f"and the batch's first {n + 1} item(s) could cost up to ${needed:.4f}"
                )
            else:
                message = (
                    f"The {where} budget of {budget.tokens:,} tokens is reached: {tokens:,} "
                    f"used, and the batch's first {n + 1} item(s) need about {needed:,}"
                )
            if planned is not None:
                planned[:] = [sum_usd, sum_tokens]
            return n, BudgetExceeded(
                f"{message}; {n} fit, the rest were not submitted. {_raise_hint(where, kind)}",
                budget=budget,
                where=where,
                spent_usd=usd,
                spent_tokens=tokens,
                limit=kind,
                needed=needed,
            )
        sum_usd += worst_usd
        sum_tokens += est_in + max_tokens
    if planned is not None:
        planned[:] = [sum_usd, sum_tokens]
    return len(requests), None


def _check_priced(imodel: Any, budget: Budget, where: str, label: str) -> None:
    if not imodel.pricer.priced:
        raise ConfigurationError(
            f"`{label}` has no known price, so the {where} budget of "
            f"${budget.usd:g} cannot be kept. Give the model a price: "
            f'`iModel(..., price={{"input": ..., "output": ...}})` (dollars per '
            "million tokens), or `price=0` if it is free."
        )


def _fitting_output(
    applying: list[tuple[Budget, str, Any]],
    imodel: Any,
    est_in: int,
    label: str,
    thinking: int = 0,
) -> int | None:
    """The most answer tokens every budget leaves room for after this call's input and its
    ``thinking`` allowance when that is under `OUTPUT_BOUND` (``None``: no budget needs to
    bound it); `BudgetExceeded` when it is under `MIN_OUTPUT`."""
    room: int | None = None
    hit: tuple[Budget, str, Any, str] | None = None
    base = per_token = None
    for budget, where, spend in applying:
        usd, tokens, unpriced = _spent(spend)
        if budget.usd is not None and not unpriced:
            if base is None:
                _check_priced(imodel, budget, where, label)
                pricer = imodel.pricer
                base = pricer.worst_case(est_in, thinking) or 0.0  # thinking: output price
                per_token = ((pricer.worst_case(est_in, thinking + 1_000_000) or 0.0) - base) / 1e6
            if per_token and usd + base <= budget.usd:
                fits = int((budget.usd - usd - base) / per_token)
                if room is None or fits < room:
                    room, hit = fits, (budget, where, spend, "usd")
        if budget.tokens is not None and tokens + est_in + thinking <= budget.tokens:
            fits = budget.tokens - tokens - est_in - thinking
            if room is None or fits < room:
                room, hit = fits, (budget, where, spend, "tokens")
    if room is None or hit is None or room >= OUTPUT_BOUND:
        return None
    if room >= MIN_OUTPUT:
        return room
    budget, where, spend, kind = hit
    usd, tokens, _ = _spent(spend)
    limit = f"${budget.usd:g}" if kind == "usd" else f"{budget.tokens:,} tokens"
    spent = f"${usd:.4f} spent" if kind == "usd" else f"{tokens:,} used"
    thought = f" and its thinking allowance of {thinking:,} tokens" if thinking else ""
    raise BudgetExceeded(
        f"The {where} budget of {limit} is reached: {spent}, and after this call's input "
        f"(about {est_in:,} tokens){thought} it leaves room for {room} output tokens, under the "
        f"{MIN_OUTPUT} a call of `{label}` is started with. It was not started; nothing of it "
        f"is recorded. {_raise_hint(where, kind)}",
        budget=budget,
        where=where,
        spent_usd=usd,
        spent_tokens=tokens,
        limit=kind,
        needed=(base or 0.0) + MIN_OUTPUT * (per_token or 0.0)
        if kind == "usd"
        else est_in + thinking + MIN_OUTPUT,
    )


def _raise_hint(where: str, kind: str = "usd") -> str:
    """How to raise the ``kind`` (``usd``, ``tokens``) limit of the ``where`` budget."""
    given = "usd=..." if kind == "usd" else "tokens=..."
    if where == "session":
        hint = f"Raise it with `session.budget = lion_nb.Budget({given})`"
        if kind == "usd":
            hint += " (`%config LionMagics.session_budget = ...` in a notebook)"
        return hint + "."
    if where == "branch":
        return f"Raise it with `branch.budget = lion_nb.Budget({given})`."
    if where == "cell":
        return "Raise it with `%%lion --budget USD`."
    if where == "batch":
        return f"Raise `run.budget.{kind}`, then `run.retry()` finishes the rest."
    return "Raise the budget to go on."


def after_call(branch: Branch, session: Session | None, usd: float | None, tokens: int) -> None:
    """Count a recorded call against the scoped budgets; warn once at ``warn_at``."""
    if not _MADE[0]:
        return
    scopes = _SCOPES.get()
    for meter in scopes:
        meter.add(usd, tokens)
    if (
        not scopes
        and branch.spend.budget is None
        and (session is None or session.spend.budget is None)
    ):
        return
    for budget, where, spend in _applying(branch, session):
        if budget._warned or budget.warn_at is None:
            continue
        spent_usd, spent_tokens, _ = _spent(spend)
        over_usd = budget.usd is not None and spent_usd >= budget.warn_at * budget.usd
        over_tokens = budget.tokens is not None and spent_tokens >= budget.warn_at * budget.tokens
        if over_usd or over_tokens:
            budget._warned = True
            spent = f"${spent_usd:.4f}" if over_usd else f"{spent_tokens:,} tokens"
            limit = f"${budget.usd:g}" if over_usd else f"{budget.tokens:,} tokens"
            warnings.warn(
                f"{spent} of the {where} budget of {limit} is spent.",
                BudgetWarning,
                stacklevel=_caller_level(),
            )


#: where lion_nb and the event loops that run its calls live: a warning is not theirs
_INSIDE = tuple(
    os.path.dirname(os.path.abspath(path)) + os.sep
    for path in (sys.modules["lion_nb"].__file__, asyncio.__file__, anyio.__file__)
    if path is not None
)


def _caller_level() -> int:
    """The ``stacklevel`` that attributes a warning of `after_call` to the first frame
    outside lion_nb (the user's cell or script), not to a line of the ledger."""
    frame: FrameType | None = sys._getframe(2)  # after_call's caller
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith(_INSIDE):
        frame = frame.f_back
        level += 1
    return level


AFTER_RECORD.append(after_call)  # the ledger tells every recorded call to the budgets
