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

import operator
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from ._live import SESSIONS

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

    __slots__ = (
        "admitted",
        "anchor",
        "branch_id",
        "calls",
        "counts",
        "owner",
        "owner_id",
        "rows",
        "unpriced",
        "usd",
    )

    def __init__(self, branch_id: str = "") -> None:
        #: the owning branch's id as text (made once: ``str(uuid)`` costs a microsecond)
        self.branch_id = branch_id
        #: the owning session (a weak reference) and its id, looked up once per owner
        self.owner: Any = None
        self.owner_id: Any = None
        self.rows: list[tuple] = []
        self.usd = 0.0
        self.calls = 0
        self.unpriced = 0
        self.counts = [0, 0, 0, 0, 0]
        #: ``(estimate, offset)``: the estimated input of the last call with a real count, and
        #: how many tokens the real count exceeded the estimate by (`budget.estimate_input`)
        self.anchor: tuple[int, int] | None = None
        #: ``(request, estimate)`` of the call a budget last admitted (`budget.note_usage`)
        self.admitted: tuple[Any, int] | None = None

    def add(self, row: tuple) -> None:
        self.rows.append(row)
        self.calls += 1
        usd = row[8]
        if usd is None:
            self.unpriced += 1
        else:
            self.usd += usd
        counts = self.counts
        counts[0] += row[3]
        counts[1] += row[4]
        counts[2] += row[5]
        counts[3] += row[6]
        counts[4] += row[7]

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
            entry = {"time": row[0], "branch": names.get(row[1]) or row[1]}
            entry.update(zip(_ROW_KEYS[1:], row[1:], strict=True))
            out.append(entry)
        out.sort(key=lambda r: r["time"])
        return out


def _count(value: Any) -> int:
    return value if type(value) is int else int(value) if isinstance(value, float) else 0


_COUNTS_OF = operator.itemgetter(*_COUNTS)


def _row(branch_id: str, model: str, usage: Any, usd: float | None, when: float) -> tuple:
    """One ledger row. A normalized usage holds the five counts as ints (one look-up for
    all five); anything else is coerced (slow path)."""
    if usage.__class__ is not dict and not isinstance(usage, dict):
        return (when, branch_id, model, 0, 0, 0, 0, 0, usd, False)
    try:
        inp, out, read, write, reason = _COUNTS_OF(usage)
    except KeyError:
        g = usage.get
        inp, out, read, write, reason = (g(k) for k in _COUNTS)
    if not (type(inp) is type(out) is type(read) is type(write) is type(reason) is int):
        inp, out, read, write, reason = map(_count, (inp, out, read, write, reason))
    return (when, branch_id, model, inp, out, read, write, reason, usd, "estimated" in usage)


def branch_ledger(branch: Branch) -> Ledger:
    """The branch's ledger; a restored branch's is rebuilt from its messages once."""
    private = branch.__pydantic_private__
    ledger = private.get("_ledger")
    if ledger is None:
        ledger = private["_ledger"] = Ledger(branch.id_text)
        for message in branch.messages:
            meta = message.metadata
            if "cost_usd" not in meta or meta.get("clone_from") or "usage" not in meta:
                continue
            usd = meta["cost_usd"]
            usd = (
                float(usd) if isinstance(usd, (int, float)) and not isinstance(usd, bool) else None
            )
            when = getattr(message, "created_at", None) or time.time()
            model = str(meta.get("model") or "?")
            ledger.add(_row(ledger.branch_id, model, meta["usage"], usd, when))
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


#: called after every recorded call as ``hook(branch, session, usd, tokens)``; `budget`
#: registers its check here when it is first imported (no budget exists before that)
AFTER_RECORD: list[Callable[[Any, Any, float | None, int], None]] = []


def _owner(branch: Branch) -> Session | None:
    """The session that owns ``branch`` (``None``: none), remembered by its ledger."""
    private = branch.__pydantic_private__
    owner = private.get("_owning_session_id")
    if owner is None:
        return None
    ledger = private.get("_ledger") or branch_ledger(branch)
    if ledger.owner_id is owner or ledger.owner_id == owner:  # `is`: no UUID.__eq__ call
        session = ledger.owner()
        if session is not None:
            return session
    session = SESSIONS.get(owner)
    if session is not None:
        import weakref

        ledger.owner, ledger.owner_id = weakref.ref(session), owner
    return session


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
    pricer = imodel.pricer
    if usd is _MISSING or (usd is not None and not isinstance(usd, (int, float))):
        usd = pricer.cost(usage)
    if usd is not None and discount != 1.0:
        usd *= discount
    private = branch.__pydantic_private__
    ledger = private.get("_ledger") or branch_ledger(branch)
    row = _row(ledger.branch_id, pricer.label, usage, usd, time.time())
    ledger.add(row)
    session = _owner(branch)
    if session is not None:
        mine = session.__pydantic_private__.get("_ledger")
        if mine is not None:
            mine.add(row)
    for hook in AFTER_RECORD:
        hook(branch, session, usd, row[3] + row[4])
    return usd
