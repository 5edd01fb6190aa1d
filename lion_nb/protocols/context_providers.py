"""Pre-turn context injection: an ordered registry of providers with a total token budget.

A `ContextProvider` renders ephemeral text (retrieved notes, the time, a user profile) for one
provider request. The text is folded into that request's system guidance and never appended
to the conversation, so a branch's message history stays the durable record (ADR-0016 D3).

Semantics the operation path relies on, exactly:

- Providers run one after another in registration order. One that raises is logged, named in
  ``failed`` and the turn continues; cancellation is never swallowed.
- ``None`` or empty text yields no block and is not recorded as fired.
- A truthy per-provider ``max_tokens`` bounds that provider's output: over it, the provider
  is ``skipped``. ``max_tokens=0`` disables the check (it is a truthiness test); a negative
  value skips every non-empty output. No range validation is done on purpose.
- Outputs are admitted against the total ``budget`` by descending priority, ties in
  registration order; an output that does not fit is ``skipped`` (a non-positive budget admits
  no positive-token output). Admitted blocks are rendered back in registration order.
- After actions ran, ``gather_writeback`` visits providers sequentially in registration order
  and awaits their optional ``writeback(branch, action_responses)`` hook. A missing or ``None``
  hook is skipped; a non-callable or synchronous one fails at the await and is contained like
  any other provider error.

A branch's context is one `BranchContext` (``branch.context``): its providers, their last
report and the text waiting for the next request. The operation-path helpers at the bottom
(`prepare_context`, `take_context_injection`, `writeback_after_actions`) work on it; an
operation asks for the text once, with `BranchContext.take_for`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..tokens import estimate_tokens

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .messages import ActionResponse, Instruction, System

__all__ = [
    "BranchContext",
    "ContextHost",
    "ContextProvider",
    "ContextProviderRegistry",
    "ProviderReport",
    "prepare_context",
    "take_context_injection",
    "writeback_after_actions",
]

logger = logging.getLogger("lion_nb.context_providers")

DEFAULT_BUDGET = 2000
"""Total tokens one request may receive from all providers together."""


@runtime_checkable
class ContextProvider(Protocol):
    """Renders text to inject into the next request, or ``None`` for nothing.

    A provider may also define ``async def writeback(branch, action_responses)`` to persist
    something derived from the actions a turn executed. It is optional, so it is not part of
    the structural check.
    """

    async def provide(  # the branch: any object with its attributes (a real `Branch` at run time)
        # Any: a provider reads whatever it needs of the branch; a Protocol here would pin its reads
        self,
        branch: Any,
        instruction: Instruction,
    ) -> str | None: ...


@dataclass(frozen=True)
class ProviderReport:
    """What one provider pass produced: the blocks and who fired, was skipped or failed.

    ``fired`` holds one ``{"name", "tokens", "priority"}`` dict per admitted block, in
    registration order.
    """

    blocks: list[str] = field(default_factory=list)
    fired: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The blocks as they are injected: joined by blank lines."""
        return "\n\n".join(self.blocks)

    @property
    def tokens(self) -> int:
        return sum(f["tokens"] for f in self.fired)


@dataclass(slots=True)
class _Entry:
    provider: Any
    priority: int
    max_tokens: int | None
    name: str


class ContextProviderRegistry:
    """Providers in registration order, sharing one injection ``budget`` (tokens)."""

    def __init__(self, budget: int = DEFAULT_BUDGET):
        self.budget = budget
        self._entries: list[_Entry] = []

    def register(
        self,
        provider: ContextProvider,
        *,
        priority: int = 0,
        max_tokens: int | None = None,
        name: str | None = None,
    ) -> None:
        """Add ``provider``; ``name`` defaults to its ``name`` attribute, then its class name."""
        if not callable(getattr(provider, "provide", None)):
            raise TypeError(
                f"`{type(provider).__name__}` is not a context provider: define "
                "`async def provide(self, branch, instruction) -> str | None`."
            )
        name = name or getattr(provider, "name", None) or type(provider).__name__
        self._entries.append(_Entry(provider, priority, max_tokens, str(name)))

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def names(self) -> list[str]:
        """Provider names in registration order."""
        return [e.name for e in self._entries]

    def __repr__(self) -> str:
        return f"ContextProviderRegistry(budget={self.budget}, providers={self.names})"

    async def gather(self, branch: ContextHost, instruction: Instruction) -> ProviderReport:
        """Run every provider once and admit their outputs against the budget."""
        report = ProviderReport()
        outputs: list[tuple[_Entry, str, int]] = []
        for entry in self._entries:
            try:
                text = await entry.provider.provide(branch, instruction)
            except Exception:
                logger.warning(
                    "context provider `%s` failed; continuing", entry.name, exc_info=True
                )
                report.failed.append(entry.name)
                continue
            if not text:
                continue
            text = str(text)
            tokens = estimate_tokens(text)
            if entry.max_tokens and tokens > entry.max_tokens:
                report.skipped.append(entry.name)
                continue
            outputs.append((entry, text, tokens))

        admitted: set[int] = set()
        total = 0
        # sorted() is stable: equal priorities keep registration order.
        for index, (entry, _text, tokens) in sorted(
            enumerate(outputs), key=lambda item: -item[1][0].priority
        ):
            if total + tokens > self.budget:
                report.skipped.append(entry.name)
                continue
            total += tokens
            admitted.add(index)

        for index, (entry, text, tokens) in enumerate(outputs):
            if index in admitted:
                report.blocks.append(text)
                report.fired.append(
                    {"name": entry.name, "tokens": tokens, "priority": entry.priority}
                )
        return report

    async def gather_writeback(
        self, branch: ContextHost, action_responses: list[ActionResponse]
    ) -> None:
        """Offer the turn's action responses to each provider's optional ``writeback`` hook."""
        for entry in self._entries:
            hook = getattr(entry.provider, "writeback", None)
            if hook is None:
                continue
            try:
                await hook(branch, action_responses)
            except Exception:
                logger.warning(
                    "context provider `%s` writeback failed; continuing",
                    entry.name,
                    exc_info=True,
                )


# -- operation path ------------------------------------------------------------------------


class BranchContext:
    """The context a branch injects: its provider registry (``None`` until first asked),
    the last report, and the text waiting for the next request."""

    __slots__ = ("injection", "last_report", "providers")

    def __init__(self) -> None:
        self.providers: ContextProviderRegistry | None = None
        self.last_report: ProviderReport | None = None
        self.injection: str | None = None

    def take(self) -> str | None:
        """The waiting text, cleared, so it reaches one request only."""
        text, self.injection = self.injection, None
        return text

    async def take_for(self, branch: ContextHost, instruction: Instruction) -> str | None:
        """Gather the providers' text for the request about to be made and hand it over
        once (``None``: no providers, or nothing to fold in). Whatever happens, nothing is
        left waiting for a later request."""
        if not self.providers:
            return None
        try:
            await prepare_context(branch, instruction)
            return self.injection
        finally:
            self.injection = None


class ContextHost(Protocol):
    """A branch as the context helpers see it (a `lion_nb.session.branch.Branch`)."""

    @property
    def context(self) -> BranchContext: ...
    @property
    def system(self) -> System | None: ...


async def prepare_context(branch: ContextHost, instruction: Instruction) -> ProviderReport | None:
    """Gather provider text for the request about to be prepared.

    Returns ``None`` and touches nothing when the branch never got providers (an older report
    stays readable). Without a system message there is nowhere to fold the text, so providers
    are not invoked and the report lists every provider as skipped. Otherwise the report is
    stored as the branch's last report and the blocks wait in ``context.injection`` until
    `take_context_injection` collects them.
    """
    context = branch.context
    registry = context.providers
    if not registry:
        return None
    if branch.system is None:
        report = ProviderReport(skipped=list(registry.names))
        context.injection = None
    else:
        report = await registry.gather(branch, instruction)
        context.injection = report.text or None
    context.last_report = report
    return report


def take_context_injection(branch: ContextHost) -> str | None:
    """Return the pending injection and clear it, so it reaches one request only."""
    return branch.context.take()


async def writeback_after_actions(
    branch: ContextHost, action_responses: Sequence[ActionResponse | None] | None
) -> None:
    """Run provider writeback with the non-``None`` responses of actions that executed."""
    registry = branch.context.providers
    if not registry:
        return
    responses = [r for r in action_responses or () if r is not None]
    if not responses:
        return
    await registry.gather_writeback(branch, responses)
