"""A run's progress as a snapshot: counts, tokens, cost, time left, and its one-line text."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Progress", "count_parts"]


@dataclass(frozen=True, slots=True)
class Progress:
    """A snapshot of a run. ``cost_usd`` and ``eta`` are ``None`` when unknown."""

    name: str
    via: str
    state: str
    total: int
    done: int
    failed: int
    stopped: int
    in_flight: int
    pending: int
    tokens: int
    cost_usd: float | None
    elapsed: float
    eta: float | None
    #: items not started because a budget was reached
    not_started: int = 0

    @property
    def projected_usd(self) -> float | None:
        """The run's cost if the items left cost what the finished ones did on average."""
        if self.cost_usd is None or not self.finished:
            return None
        return self.cost_usd / self.finished * self.total

    @property
    def finished(self) -> int:
        return self.done + self.failed + self.stopped

    def line(self) -> str:
        """One line of text, for the text view and reprs."""
        parts = count_parts(
            self.done, self.total, self.failed, self.stopped, self.tokens, self.in_flight
        )
        if self.not_started:
            parts.append(f"{self.not_started} not started (budget)")
        if self.cost_usd is not None:
            spend = f"${self.cost_usd:.4f}"
            projected = self.projected_usd
            if projected and self.finished < self.total:  # nothing to project from $0
                spend += f" (projected ${projected:.4f})"
            parts.append(spend)
        if self.eta is not None and self.state in ("running", "submitted"):
            parts.append(f"ETA {self.eta:.0f} s")
        return f"{self.name} ({self.via}, {self.state}): " + " · ".join(parts)


def count_parts(
    done: int, total: int, failed: int, stopped: int, tokens: int, in_flight: int = 0
) -> list[str]:
    """A batch's counts as short phrases ("3/10 done", "1 failed", ...), the ones that are
    not zero, for the text view and the progress widget's static rendering."""
    parts = [f"{done}/{total} done"]
    if failed:
        parts.append(f"{failed} failed")
    if stopped:
        parts.append(f"{stopped} stopped")
    if in_flight:
        parts.append(f"{in_flight} in flight")
    if tokens:
        parts.append(f"{tokens:,} tokens")
    return parts
