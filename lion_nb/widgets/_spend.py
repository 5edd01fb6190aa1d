"""`TurnSpend`: a turn's model calls summed into one footer line, for both turn views.

model · tokens (cached share) · thinking tokens (when the model reported any) · $ for the
turn, then the branch's running total, and the turn's trace id when tracing is on (whole,
so it can be copied into a trace viewer's search; ADR-0116). It reads the
``usage`` and ``cost_usd`` the ledger put in each answer's metadata (ADR-0107), so it needs
no widget library: the text view of a cell uses it too.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TurnSpend"]


class TurnSpend:
    """A turn's model calls, summed for the footer: model, tokens, cached share, dollars."""

    def __init__(self) -> None:
        self.model = ""
        self.input = self.output = self.cached = self.reasoning = self.calls = 0
        self.usd: float | None = 0.0
        self.note = ""
        self.trace_id = ""  # the last call's trace id (tracing on)
        self.total: Any = None  # the branch's `Cost`, once the turn has ended

    def add(self, meta: dict[str, Any]) -> None:
        usage = meta.get("usage")
        if not isinstance(usage, dict) or "cost_usd" not in meta:
            return
        self.trace_id = str(meta.get("trace_id") or self.trace_id)
        self.calls += 1
        self.model = str(meta.get("model") or self.model)
        self.input += int(usage.get("input_tokens") or 0)
        self.output += int(usage.get("output_tokens") or 0)
        self.cached += int(usage.get("cache_read_tokens") or 0)
        self.reasoning += int(usage.get("reasoning_tokens") or 0)
        usd = meta.get("cost_usd")
        self.usd = None if usd is None or self.usd is None else self.usd + float(usd)
        self.note = str(meta.get("cache_note") or self.note)

    def line(self) -> str:
        """The footer ("" before the turn's first priced call)."""
        from ..runtime.ledger import format_usd

        if not self.calls:
            return ""
        tokens = f"{self.input + self.output:,} tokens"
        if self.cached and self.input:
            tokens += f" ({self.cached / self.input:.0%} cached)"
        thought = f"{self.reasoning:,} thinking" if self.reasoning > 0 else ""
        parts = [self.model, tokens, thought, format_usd(self.usd, 1)]
        total = self.total
        if total is not None:
            parts.append(f"branch {format_usd(total.usd, total.unpriced_calls)}")
        if self.trace_id:
            parts.append(f"trace {self.trace_id}")
        line = " · ".join(p for p in parts if p)
        return f"{line} · {self.note}" if self.note else line
