"""A turn that ends early: what the branch keeps, how it is marked, what the caller gets
(ADR-0106).

The one rule, for every way a turn can end before its answer is complete -- a stream cut
short (``[DONE]`` without a finish reason, a dropped connection, an error event or a stall
in the middle of a stream) and a cancellation (the kernel's interrupt, a Stop button,
``%lion cancel``, a cancelled task):

- Once any answer text has arrived, the instruction and that text are recorded, in that
  order, through the branch's ordinary message path (so ``MessageAdded`` fires). The
  assistant message carries ``metadata["incomplete"] = True`` and
  ``metadata["incomplete_reason"]`` (`INTERRUPTED` for a cancellation, the provider's words
  for a failure, e.g. "the stream ended without a finish reason").
- Before any text has arrived, nothing is recorded: the branch stays as it was.
- Then the turn still ends as it ended: a cancellation propagates unchanged; a failure with
  kept text raises the provider's own typed error (`StreamInterruptedError` for a cut
  stream), which carries ``partial_text``; a failure before any text raises `ExecutionError`
  with that error as its cause, as every failed call does.

A provider bills the tokens of a turn that ended early, so the call is in the ledger and
counts against the budgets once text has arrived (`bill_partial`): its usage is estimated
(the input the stream reported, else as a budget estimates it; the output from the text
kept) and marked
``"estimated": True``, and the kept answer carries that usage and its price like any
other, so a restored branch counts it again.

Text counts as arrived when the endpoint streamed it: the provider's error carries it
(``partial_text``), and while someone listens to the stream (`streaming_to`) `Received`
keeps a copy of the fragments, which is all a cancellation leaves. Tool calls that were
still arriving are not kept: half a call cannot be run or answered. ``communicate`` (so
``operate`` and ``ReAct``) applies the rule here; ``run`` applies it to a CLI agent's text
(its pending text at a failure or a cancellation is marked the same way).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..models.endpoints.base import current_sink, streaming_to
from ..shapes import JsonObject

if TYPE_CHECKING:
    from ..models.imodel import iModel
    from ..protocols.messages import AssistantResponse
    from ..runtime.budget import BudgetedRequest
    from ..session.branch import Branch

__all__ = [
    "INCOMPLETE",
    "INTERRUPTED",
    "KEPT_NOTE",
    "REASON",
    "Received",
    "bill_partial",
    "billed",
    "is_cancellation",
    "is_incomplete",
    "mark_incomplete",
    "partial_answer",
    "reason_for",
]

#: the metadata key that marks an answer that was cut short
INCOMPLETE = "incomplete"
#: the metadata key that says why
REASON = "incomplete_reason"
#: the reason recorded for a cancelled turn
INTERRUPTED = "interrupted"
#: what a turn's view adds to its status when the turn kept an incomplete answer
KEPT_NOTE = "incomplete answer kept on the branch"


class Received:
    """The answer text streamed inside the block, while someone listens to the stream.

    Tees into the current sink rather than replacing it, and adds no sink where there was
    none: a call nobody watches is not turned into a stream by being recorded."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self._scope: Any = None

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def __enter__(self) -> Received:
        sink = current_sink()
        if sink is not None:

            def tee(fragment: str) -> None:
                self.parts.append(fragment)
                sink(fragment)

            self._scope = streaming_to(tee)
            self._scope.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._scope is not None:
            self._scope.__exit__(*exc)
            self._scope = None


def is_cancellation(exc: BaseException) -> bool:
    """A cancelled turn (a task cancelled, the kernel's interrupt), not a failure."""
    import anyio

    return isinstance(exc, (anyio.get_cancelled_exc_class(), KeyboardInterrupt, GeneratorExit))


def reason_for(exc: BaseException) -> str:
    """The ``incomplete_reason`` for a turn that ``exc`` ended."""
    if is_cancellation(exc):
        return INTERRUPTED
    message = getattr(exc, "provider_message", None) or str(exc) or type(exc).__name__
    return str(message)[:300]


def mark_incomplete(metadata: JsonObject, reason: str) -> JsonObject:
    """``metadata`` marked as an answer that was cut short for ``reason`` (changed in place)."""
    metadata[INCOMPLETE] = True
    metadata[REASON] = reason
    return metadata


def is_incomplete(message: object) -> bool:
    """Whether ``message`` is an assistant answer that was cut short."""
    metadata = getattr(message, "metadata", None)
    return isinstance(metadata, dict) and metadata.get(INCOMPLETE) is True


#: the attribute of the exception that ended a billed call: ``(text, usage, usd)``
_BILLED = "lion_billed"


def bill_partial(
    branch: Branch,
    imodel: iModel,
    request: BudgetedRequest,
    text: str,
    exc: BaseException,
    reported: JsonObject | None = None,
) -> None:
    """Record a call that ended early after ``text`` arrived, with an estimated usage, and
    note it on ``exc`` (`billed`) so that the kept answer carries the same figures.
    ``reported`` is the usage the stream reported before it ended (real counts win)."""
    from ..models.usage import usage_dict
    from ..runtime.budget import estimate_input
    from ..runtime.ledger import record_call
    from ..tokens import estimate_tokens

    try:
        got = reported or {}
        inp = got.get("input_tokens") or estimate_input(branch, request)[1]
        out = max(got.get("output_tokens") or 0, estimate_tokens(text))
        usage = usage_dict(
            inp,
            out,
            cache_read=got.get("cache_read_tokens") or 0,
            cache_write=got.get("cache_write_tokens") or 0,
        )
        usage["estimated"] = True
        usd = record_call(branch, imodel, usage)
        setattr(exc, _BILLED, (text, usage, usd))
    except Exception:  # accounting never replaces how the turn ended (a cancellation, say)
        pass


def billed(exc: BaseException | None) -> tuple[str, JsonObject, float | None] | None:
    """``(text, usage, usd)`` of the billed call that ``exc`` ended (`bill_partial`)."""
    return getattr(exc, _BILLED, None) if exc is not None else None


def partial_answer(
    branch: Branch,
    imodel: iModel,
    text: str,
    reason: str,
    bill: tuple[str, JsonObject, float | None] | None = None,
) -> AssistantResponse:
    """The assistant message for ``text`` that arrived before the turn ended early; ``bill``
    is its call's `billed` figures."""
    from ..protocols.messages import AssistantResponse

    metadata = mark_incomplete({"model": f"{imodel.provider}/{imodel.model}"}, reason)
    if bill is not None:
        metadata["usage"], metadata["cost_usd"] = bill[1], bill[2]
    return AssistantResponse(
        response=text,
        sender=branch.id_text,
        recipient=branch.user or "user",
        metadata=metadata,
    )
