"""Budgets that stop spend before it happens.

A `Budget` caps dollars, tokens or both. It applies where it is set: ``session.budget``
(every call of the session's branches), ``branch.budget``, a batch (``session.map(...,
budget=)``) or a scope (`budget_scope`: a notebook cell's ``%%lion --budget``). Session
and branch budgets count everything their ledger holds; a scope counts the calls made
inside it.

Before each model call, the spend so far plus the call's own worst case (its estimated
input, all uncached, plus its ``max_tokens`` when set) is checked against every budget that
applies (`check_budgets`). A call that would cross one is not started: `BudgetExceeded`
names the budget, the spend and the way to raise it, and nothing of the turn is recorded. A
dollar budget over a model with no price fails closed (a `ConfigurationError` naming the
model and ``price=``) rather than letting unknown spend through. Once spend reaches
``warn_at`` of a limit, one warning.

Calls already in flight when a budget is reached finish: with ``concurrency > 1`` a batch
can end up to ``concurrency - 1`` calls past its cap.
"""

from __future__ import annotations

import contextvars
import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import BudgetExceeded, ConfigurationError
from .ledger import AFTER_RECORD, _owner

if TYPE_CHECKING:
    from .branch import Branch
    from .session import Session

__all__ = ["Budget", "BudgetWarning", "Meter", "after_call", "budget_scope", "check_budgets"]


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
    def of(cls, value: Any) -> Budget | None:
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
    from .ledger import branch_ledger, session_ledger

    found: list[tuple[Budget, str, Any]] = []
    budget = branch.__pydantic_private__.get("_budget")
    if budget is not None:
        found.append((budget, "branch", branch_ledger(branch)))
    if session is not None:
        budget = session.__pydantic_private__.get("_budget")
        if budget is not None:
            found.append((budget, "session", session_ledger(session)))
    found.extend((m.budget, m.where, m) for m in _SCOPES.get())
    return found


def _spent(spend: Any) -> tuple[float, int, int]:
    return spend.usd, spend.tokens, spend.unpriced


def check_budgets(branch: Branch, imodel: Any, request: Any) -> None:
    """Raise before a call that would cross a budget (see the module docstring)."""
    if not _MADE[0]:
        return
    private = branch.__pydantic_private__
    session = None
    if private.get("_owning_session_id") is not None:
        session = _owner(branch)
    if (
        private.get("_budget") is None
        and not _SCOPES.get()
        and (session is None or session.__pydantic_private__.get("_budget") is None)
    ):
        return
    from ..tokens import estimate_message_tokens, estimate_tokens

    est_in = estimate_message_tokens(request.messages)
    if request.tools:
        est_in += estimate_tokens(request.tools)
    options = {**(getattr(imodel, "options", None) or {}), **(request.options or {})}
    max_tokens = options.get("max_completion_tokens") or options.get("max_tokens")
    max_tokens = max_tokens if isinstance(max_tokens, int) else None
    label = f"{imodel.provider}/{imodel.model}"
    worst_usd: float | None = None
    for budget, where, spend in _applying(branch, session):
        usd, tokens, unpriced = _spent(spend)
        if budget.usd is not None:
            if worst_usd is None:
                pricer = imodel.pricer
                if not pricer.priced:
                    raise ConfigurationError(
                        f"`{label}` has no known price, so the {where} budget of "
                        f"${budget.usd:g} cannot be kept. Give the model a price: "
                        f'`iModel(..., price={{"input": ..., "output": ...}})` (dollars per '
                        "million tokens), or `price=0` if it is free."
                    )
                worst_usd = pricer.worst_case(est_in, max_tokens) or 0.0
            if unpriced:
                raise ConfigurationError(
                    f"The {where} budget of ${budget.usd:g} cannot be kept: {unpriced} call(s) "
                    "under it had no price. Give those models `price=`."
                )
            if usd + worst_usd > budget.usd:
                raise BudgetExceeded(
                    f"The {where} budget of ${budget.usd:g} is reached: ${usd:.4f} spent, and "
                    f"this call of `{label}` could cost up to ${worst_usd:.4f} more. It was not "
                    f"started; nothing of it is recorded. {_raise_hint(where)}",
                    budget=budget,
                    where=where,
                    spent_usd=usd,
                    spent_tokens=tokens,
                    limit="usd",
                    needed=worst_usd,
                )
        if budget.tokens is not None and tokens + est_in + (max_tokens or 0) > budget.tokens:
            raise BudgetExceeded(
                f"The {where} budget of {budget.tokens:,} tokens is reached: {tokens:,} used, "
                f"and this call of `{label}` needs about {est_in + (max_tokens or 0):,} more. "
                f"It was not started; nothing of it is recorded. {_raise_hint(where)}",
                budget=budget,
                where=where,
                spent_usd=usd,
                spent_tokens=tokens,
                limit="tokens",
                needed=est_in + (max_tokens or 0),
            )


def _raise_hint(where: str) -> str:
    return {
        "session": "Raise it with `session.budget = lion_nb.Budget(usd=...)` "
        "(`%config LionMagics.session_budget = ...` in a notebook).",
        "branch": "Raise it with `branch.budget = lion_nb.Budget(usd=...)`.",
        "cell": "Raise it with `%%lion --budget USD`.",
        "batch": "Raise `run.budget.usd` (or `.tokens`), then `run.retry()` finishes the rest.",
    }.get(where, "Raise the budget to go on.")


def after_call(branch: Branch, session: Session | None, usd: float | None, tokens: int) -> None:
    """Count a recorded call against the scoped budgets; warn once at ``warn_at``."""
    if not _MADE[0]:
        return
    scopes = _SCOPES.get()
    for meter in scopes:
        meter.add(usd, tokens)
    if (
        not scopes
        and branch.__pydantic_private__.get("_budget") is None
        and (session is None or session.__pydantic_private__.get("_budget") is None)
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
                f"{spent} of the {where} budget of {limit} is spent.", BudgetWarning, stacklevel=2
            )


AFTER_RECORD.append(after_call)  # the ledger tells every recorded call to the budgets
