"""The ledger: what every model call of a branch, and of a session, cost.

Each call is priced once, when it is recorded (`record_call`), and added to running totals
of its branch and of the session that owns the branch: ``branch.cost()`` and
``session.cost()`` read those totals, so a turn costs the same to account for whatever the
history before it. The price of a call also goes into its answer's metadata (``cost_usd``,
``None`` when the model is unpriced) beside its ``usage``: that is how costs survive a
kernel restart -- the store keeps the messages, and a restored branch rebuilds its ledger
from them once, when first asked. Copies of messages (a clone's history) are not counted
again: they were paid for by the branch they came from.

A call the ledger never saw (one of an earlier kernel whose answer was not recorded, a
`chat` whose result was dropped) is not in a restored ledger.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from .budget import after_call

if TYPE_CHECKING:
    from .branch import Branch
    from .session import Session

__all__ = ["Cost", "CostRows", "Ledger", "branch_ledger", "record_call", "session_ledger"]

_MISSING: Any = object()


@dataclass(frozen=True, slots=True)
class Cost:
    """What a set of model calls cost. ``usd`` is ``None`` when any call is unpriced (a
    partial sum would look like the whole); ``input_tokens`` counts cached input too."""

    usd: float | None = 0.0
    calls: int = 0
    unpriced_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    @property
    def cached_share(self) -> float:
        """The share of input tokens read from the provider's cache (0 without input)."""
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else 0.0

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        usd = None if self.usd is None or other.usd is None else self.usd + other.usd
        counts = {f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)[1:]}
        return Cost(usd, **counts)

    def line(self) -> str:
        """One line: calls, tokens (cached share) and dollars."""
        calls = f"{self.calls} call{'s' * (self.calls != 1)}"
        tokens = f"{self.tokens:,} tokens"
        if self.cache_read_tokens:
            tokens += f" ({self.cached_share:.0%} of input cached)"
        return f"{calls} · {tokens} · {format_usd(self.usd, self.unpriced_calls)}"

    def __str__(self) -> str:
        return self.line()


def format_usd(usd: float | None, unpriced: int = 0) -> str:
    """Dollars as text; an unpriced total says so instead of showing a number."""
    if usd is None:
        return f"$ unknown ({unpriced} unpriced call{'s' * (unpriced != 1)}; give `price=`)"
    if usd == 0:
        return "$0"
    return f"${usd:.4f}" if usd < 1 else f"${usd:,.2f}"


class CostRows(list):
    """One dict per model call (``time``, ``branch``, ``branch_id``, ``model``, the token
    counts, ``usd``, ``estimated``); ``to_dataframe()`` with the ``pandas`` extra."""

    def to_dataframe(self) -> Any:
        try:
            import pandas as pd
        except ImportError:
            from ..errors import ConfigurationError

            raise ConfigurationError(
                "`to_dataframe()` needs pandas: `pip install 'lion-nb[pandas]'`."
            ) from None
        return pd.DataFrame(list(self), columns=list(_ROW_KEYS))


_ROW_KEYS = (
    "time",
    "branch",
    "branch_id",
    "model",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "usd",
    "estimated",
)
_COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


class Ledger:
    """Running totals and one row per call (a tuple in `_ROW_KEYS` order)."""

    __slots__ = ("calls", "counts", "rows", "unpriced", "usd")

    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.usd = 0.0
        self.calls = 0
        self.unpriced = 0
        self.counts = [0, 0, 0, 0, 0]

    def add(self, row: tuple) -> None:
        self.rows.append(row)
        self.calls += 1
        usd = row[9]
        if usd is None:
            self.unpriced += 1
        else:
            self.usd += usd
        counts = self.counts
        counts[0] += row[4]
        counts[1] += row[5]
        counts[2] += row[6]
        counts[3] += row[7]
        counts[4] += row[8]

    @property
    def tokens(self) -> int:
        return self.counts[0] + self.counts[1]

    @property
    def spent_usd(self) -> float | None:
        return None if self.unpriced else self.usd

    def cost(self) -> Cost:
        return Cost(self.spent_usd, self.calls, self.unpriced, *self.counts)

    def as_rows(self, branch_names: dict[str, str | None] | None = None) -> CostRows:
        names = branch_names or {}
        out = CostRows()
        for row in self.rows:
            entry = dict(zip(_ROW_KEYS, row, strict=True))
            entry["branch"] = names.get(row[2], row[1])
            out.append(entry)
        out.sort(key=lambda r: r["time"])
        return out


def _row(
    branch: Branch, model: str, usage: Any, usd: float | None, when: float | None = None
) -> tuple:
    if isinstance(usage, dict):
        counts = [usage.get(k) or 0 for k in _COUNTS]
        counts = [
            c if isinstance(c, int) else int(c) if isinstance(c, float) else 0 for c in counts
        ]
        estimated = bool(usage.get("estimated"))
    else:
        counts, estimated = [0, 0, 0, 0, 0], False
    return (
        time.time() if when is None else when,
        branch.name,
        str(branch.id),
        model,
        *counts,
        usd,
        estimated,
    )


def branch_ledger(branch: Branch) -> Ledger:
    """The branch's ledger; a restored branch's is rebuilt from its messages once."""
    private = branch.__pydantic_private__
    ledger = private.get("_ledger")
    if ledger is None:
        ledger = private["_ledger"] = Ledger()
        for message in branch.messages:
            meta = message.metadata
            if "cost_usd" not in meta or meta.get("clone_from") or "usage" not in meta:
                continue
            when = getattr(message, "created_at", None)
            ledger.add(
                _row(branch, str(meta.get("model") or "?"), meta["usage"], meta["cost_usd"], when)
            )
        session = _owner(branch)
        mine = session.__pydantic_private__.get("_ledger") if session is not None else None
        if mine is not None:
            for row in ledger.rows:
                mine.add(row)
    return ledger


def session_ledger(session: Session) -> Ledger:
    """The session's ledger: its branches' calls, kept as they are recorded."""
    private = session.__pydantic_private__
    ledger = private.get("_ledger")
    if ledger is None:
        ledger = Ledger()
        for branch in session.branches:
            for row in branch_ledger(branch).rows:
                ledger.add(row)
        private["_ledger"] = ledger
    return ledger


def _owner(branch: Branch) -> Session | None:
    owner = branch.__pydantic_private__.get("_owning_session_id")
    if owner is None:
        return None
    from .session import _SESSIONS

    return _SESSIONS.get(owner)


def record_call(
    branch: Branch,
    imodel: Any,
    usage: Any,
    *,
    usd: Any = _MISSING,
    discount: float = 1.0,
) -> float | None:
    """Account for one model call of ``branch``; returns its price (``None``: unpriced).
    ``usd`` is a price the provider reported (a CLI agent's own figure)."""
    if usd is _MISSING or (usd is not None and not isinstance(usd, (int, float))):
        usd = imodel.pricer.cost(usage)
    if usd is not None and discount != 1.0:
        usd *= discount
    row = _row(branch, f"{imodel.provider}/{imodel.model}", usage, usd)
    private = branch.__pydantic_private__
    ledger = private.get("_ledger") or branch_ledger(branch)
    ledger.add(row)
    session = _owner(branch)
    if session is not None:
        mine = session.__pydantic_private__.get("_ledger")
        if mine is not None:
            mine.add(row)
    after_call(branch, session, usd, row[4] + row[5])
    return usd
