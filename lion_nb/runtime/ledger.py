"""The ledger: what every model call of a branch, and of a session, cost.

Each call is priced once, when it is recorded (`record_call`), and added to running totals
of its branch and of the session that owns the branch: ``branch.cost()`` and
``session.cost()`` read those totals, so a turn costs the same to account for whatever the
history before it. The price of a call also goes into its answer's metadata (``cost_usd``,
``None`` when the model is unpriced) beside its ``usage``: that is how costs survive a
kernel restart -- the store keeps the messages, and a restored branch rebuilds its ledger
from them once, when first asked. Copies of messages (a clone's history) are not counted
again: they were paid for by the branch they came from.

Numbers from a provider are not trusted (ADR-0107, D7): a row's counts are never below zero,
and a price that is not a finite number >= 0 -- a CLI agent's own figure, or one stored in a
message -- is never added: a reported one gives way to the model's price of the usage, a
stored one is counted as unpriced (so a dollar budget fails closed).

A call the ledger never saw (one of an earlier kernel whose answer was not recorded, a
`chat` whose result was dropped) is not in a restored ledger.
"""

from __future__ import annotations

import logging
import math
import operator
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from ..errors import LionError
from ..models.usage import finite_usd
from ..shapes import JsonMapping
from ._live import SESSIONS
from .ledger_rows import LedgerRows, Row

if TYPE_CHECKING:
    from ..models.imodel import iModel
    from .parts import Attached as Session
    from .parts import Spender as Branch

__all__ = ["Cost", "CostRows", "Ledger", "branch_ledger", "record_call", "session_ledger"]

_MISSING: Any = object()
log = logging.getLogger("lion_nb.ledger")


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


class CostRows(list[dict[str, Any]]):
    """One dict per model call (``time``, ``branch``, ``branch_id``, ``model``, the token
    counts, ``usd``, ``estimated``); ``to_dataframe()`` with the ``pandas`` extra."""

    # Any: a pandas DataFrame (pandas is optional and untyped)
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
        #: one row per call, kept in columns (`ledger_rows`: a million calls fit in 90 MB)
        self.rows = LedgerRows()
        self.usd = 0.0
        self.calls = 0
        self.unpriced = 0
        self.counts = [0, 0, 0, 0, 0]
        #: ``(estimate, offset)``: the estimated input of the last call with a real count, and
        #: how many tokens the real count exceeded the estimate by (`budget.estimate_input`)
        self.anchor: tuple[int, int] | None = None
        #: ``(request, estimate)`` of the call a budget last admitted (`budget.note_usage`)
        self.admitted: tuple[Any, int] | None = None

    def add(self, row: Row) -> None:
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
    """A row's count: a whole number >= 0 (anything else, NaN and infinities too, is 0)."""
    if type(value) is int:
        return max(value, 0)
    if isinstance(value, float) and math.isfinite(value):
        return max(int(value), 0)
    return 0


_COUNTS_OF = operator.itemgetter(*_COUNTS)


def _row(branch_id: str, model: str, usage: Any, usd: float | None, when: float) -> Row:
    """One ledger row. A normalized usage holds the five counts as ints (one look-up for
    all five); anything else is coerced (slow path)."""
    if usage.__class__ is not dict and not isinstance(usage, dict):
        return (when, branch_id, model, 0, 0, 0, 0, 0, usd, False)
    try:
        inp, out, read, write, reason = _COUNTS_OF(usage)
    except KeyError:
        g = usage.get
        inp, out, read, write, reason = (g(k) for k in _COUNTS)
    if (
        not (type(inp) is type(out) is type(read) is type(write) is type(reason) is int)
        or (inp | out | read | write | reason) < 0  # any of them negative
    ):
        inp, out, read, write, reason = map(_count, (inp, out, read, write, reason))
    return (when, branch_id, model, inp, out, read, write, reason, usd, "estimated" in usage)


def branch_ledger(branch: Branch) -> Ledger:
    """The branch's ledger; a restored branch's is rebuilt from its messages once."""
    spend = branch.spend
    ledger: Ledger | None = spend.ledger
    if ledger is None:
        ledger = spend.ledger = Ledger(branch.id_text)
        for message in branch.messages:
            meta = message.metadata
            if "cost_usd" not in meta or meta.get("clone_from") or "usage" not in meta:
                continue
            usd = finite_usd(meta["cost_usd"])
            when = getattr(message, "created_at", None) or time.time()
            model = str(meta.get("model") or "?")
            ledger.add(_row(ledger.branch_id, model, meta["usage"], usd, when))
        session = _owner(branch)
        mine = session.spend.ledger if session is not None else None
        if mine is not None:
            for row in ledger.rows:
                mine.add(row)
    return ledger


def session_ledger(session: Session) -> Ledger:
    """The session's ledger: its branches' calls, kept as they are recorded."""
    spend = session.spend
    ledger: Ledger | None = spend.ledger
    if ledger is None:
        ledger = Ledger()
        for branch in session.branches:
            for row in branch_ledger(branch).rows:
                ledger.add(row)
        spend.ledger = ledger
    return ledger


#: called after every recorded call as ``hook(branch, session, usd, tokens)``; `budget`
#: registers its check here when it is first imported (no budget exists before that)
AFTER_RECORD: list[Callable[[Any, Any, float | None, int], None]] = []


def _owner(branch: Branch) -> Session | None:
    """The session that owns ``branch`` (``None``: none), remembered by its ledger."""
    owner = branch.attachment.session_id
    if owner is None:
        return None
    ledger: Ledger = branch.spend.ledger or branch_ledger(branch)
    if ledger.owner_id is owner or ledger.owner_id == owner:  # `is`: no UUID.__eq__ call
        known: Session | None = ledger.owner()
        if known is not None:
            return known
    session: Session | None = SESSIONS.get(owner)
    if session is not None:
        import weakref

        ledger.owner, ledger.owner_id = weakref.ref(session), owner
    return session


def _checked_price(pricer: Any, usage: Any, priced: Any) -> float | None:
    """A computed price kept only if it is a finite number >= 0 (else unpriced, warned)."""
    usd = finite_usd(priced)
    if usd is None:
        warnings.warn(
            f"`{pricer.label}`: the usage {usage!r:.80} prices at {priced!r:.40}; the call is "
            "counted as unpriced.",
            UserWarning,
            stacklevel=3,
        )
    return usd


def record_call(
    branch: Branch,
    imodel: iModel,
    usage: JsonMapping | None,
    *,
    usd: Any = _MISSING,  # Any: a provider's own figure, untrusted: `finite_usd` checks it
    discount: float = 1.0,
) -> float | None:
    """Account for one model call of ``branch``; returns its price (``None``: unpriced).
    ``usd`` is a price the provider reported (a CLI agent's own figure); one that is not a
    finite number >= 0 is refused with a warning, and the usage is priced instead."""
    pricer = imodel.pricer
    if usd is not _MISSING and usd is not None:
        reported, usd = usd, finite_usd(usd)
        if usd is None:
            warnings.warn(
                f"`{pricer.label}` reported a cost of {reported!r:.40}, not a finite number of "
                "dollars >= 0: the call is priced from its usage instead.",
                UserWarning,
                stacklevel=2,
            )
            usd = _MISSING
    if usd is _MISSING:
        try:
            usd = pricer.cost(usage)
        except (TypeError, ValueError, OverflowError):  # a usage no normalizer made
            usd = math.nan
        if usd is not None and not (usd.__class__ is float and 0.0 <= usd < math.inf):
            usd = _checked_price(pricer, usage, usd)
    if usd is not None and discount != 1.0:
        usd *= discount
    ledger = branch.spend.ledger or branch_ledger(branch)
    row = _row(ledger.branch_id, pricer.label, usage, usd, time.time())
    ledger.add(row)
    session = _owner(branch)
    if session is not None:
        mine = session.spend.ledger
        if mine is not None:
            mine.add(row)
    for hook in AFTER_RECORD:
        try:
            hook(branch, session, usd, row[3] + row[4])
        except (LionError, Warning):  # a budget's own refusal or warning stops the call
            raise
        except Exception:  # a broken hook must not break the call it accounts for
            log.warning("the ledger hook %r failed", hook, exc_info=True)
    price: float | None = usd  # a finite number >= 0 by now, or None
    return price
