"""An exception as its type, message and traceback -- the innermost frames kept, since
that is where the error happened -- within the budget."""

from __future__ import annotations

import traceback

from ..tokens import estimate_tokens
from .content import Content, fit_text

__all__ = ["exception_text"]


def exception_text(exc: BaseException, budget: int) -> Content:
    head = f"{type(exc).__name__}: {exc}".rstrip(": ")
    frames = traceback.format_tb(exc.__traceback__) if exc.__traceback__ else []
    kept: list[str] = []
    used = estimate_tokens(head) + 10
    for frame in reversed(frames):  # innermost first
        cost = estimate_tokens(frame)
        if used + cost > budget:
            break
        kept.insert(0, frame)
        used += cost
    cut = len(frames) - len(kept)
    lines = [head]
    if frames:
        lines.append("Traceback (most recent call last):")
        if cut:
            lines.append(f"  [… {cut} outer frame{'s' if cut != 1 else ''} cut …]")
        lines.append("".join(kept).rstrip())
    summary = f"{type(exc).__name__}, {len(frames)} frames" if frames else type(exc).__name__
    return Content(text=fit_text("\n".join(lines), budget), summary=summary)
