"""The notebook itself as context (``%%lion --notebook``): the cells above, newest first.

Each cell is its source as typed and the text of its result (``Out[n]``, converted like any
value, its share of the budget at most); cells are added newest first until the budget is
spent, and the text says how many were left out. ``%%lion`` cells are skipped: their
questions and answers are in the branch already.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..tokens import estimate_tokens
from .content import Content, fit_text

__all__ = ["notebook_context"]

_LION = ("%%lion", "%lion ")


def notebook_context(
    inputs: Sequence[str], outputs: Mapping[int, Any], *, current: int, budget: int
) -> Content:
    """Cells ``current - 1`` down to 1 of ``inputs`` (the raw sources, indexed by execution
    count) with their ``outputs``, newest first, within ``budget`` tokens."""
    from .convert import to_content

    cells = [
        n
        for n in range(min(current, len(inputs)) - 1, 0, -1)
        if inputs[n].strip() and not inputs[n].lstrip().startswith(_LION)
    ]
    parts: list[str] = []
    used = 40
    shown = 0
    for n in cells:
        source = fit_text(inputs[n].strip(), max(budget // 4, 50))
        block = f"Cell In[{n}]:\n```python\n{source}\n```"
        if n in outputs:
            result = to_content(outputs[n], budget=max(budget // 8, 50))
            media = result.images or result.files  # a figure's image is not sent again
            text = f"[{result.summary}, shown in the notebook]" if media else result.text
            block += f"\nOut[{n}]:\n{text}"
        cost = estimate_tokens(block) + 2
        if used + cost > budget:
            break
        parts.append(block)
        used += cost
        shown += 1
    left = len(cells) - shown
    head = f"The notebook's cells above this one, newest first ({shown} of {len(cells)}"
    head += f"; {left} older cell{'s' if left != 1 else ''} left out):" if left else "):"
    if not cells:
        head = "The notebook has no cells above this one."
    return Content(
        text="\n\n".join([head, *parts]),
        summary=f"{shown} cell{'s' if shown != 1 else ''}" + (f" of {len(cells)}" if left else ""),
    )
