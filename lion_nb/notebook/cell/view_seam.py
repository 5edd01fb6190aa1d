"""The display seam's two types, `TurnInfo` and `TurnView`, and `show_answer`.

A turn talks to a `TurnView` only (see `handle_view`, which picks the view and holds the
default ones). Every view -- the text one there, the live widget one in `widget_view` --
builds on these, so they sit below both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["TurnInfo", "TurnView", "note_html", "plain_note", "show_answer"]

logger = logging.getLogger("lion_nb.notebook")


@dataclass(slots=True)
class TurnInfo:
    """What a view knows about the turn it shows."""

    branch: str
    operation: str
    model: str
    fmt: str = "markdown"
    background: bool = False
    max_rate: float = 20.0
    note: str = ""
    #: stops the turn (a Stop button calls it); ``True`` if it was still running. Set by the
    #: runner once the turn's task exists; ``None`` until then.
    stop: Callable[[], bool] | None = None
    #: "auto" (a widget where a widget front end is present, else text), "widget" or "text"
    live: str = "auto"
    #: the branch's running cost (``branch.cost``), shown after the turn; ``None``: not shown
    branch_cost: Callable[[], Any] | None = None
    #: ``(error, view)`` -> a `resume.BudgetOffer` to raise the budget that ended the turn and
    #: continue it in ``view``, or ``None`` (another error); set by the runner
    budget_offer: Callable[[BaseException, Any], Any] | None = None
    #: the turn's last recorded answer (its thinking and citations go with the shown answer)
    answer: Any = None


class TurnView:
    """The seam. Every method is optional to override and must not raise."""

    def __init__(self, info: TurnInfo):
        self.info = info

    def start(self) -> None: ...

    def text(self, fragment: str) -> None: ...

    def thinking(self, fragment: str) -> None:
        """A fragment of the model's thinking (a view that shows none ignores it)."""

    def message(self, message: Any) -> None: ...

    def finish(self, result: Any) -> None: ...

    def fail(self, error: BaseException, *, interrupted: bool = False) -> None: ...


def show_answer(result: Any, info: TurnInfo, *, into: Any = None) -> None:
    """Display a finished turn's answer once, as its own output (with the re-run note); in
    the display handle ``into`` when given (an output reserved in the turn's cell)."""
    from .output_formats import mime_bundle

    bundle = mime_bundle(result, info.fmt)
    if info.answer is not None and info.fmt == "markdown" and isinstance(result, str):
        _with_answer_parts(bundle, result, info.answer)
    if info.note:  # e.g. where a re-run kept the earlier turn
        bundle["text/plain"] = f"[{info.note}]\n{bundle.get('text/plain', '')}"
        if "text/html" in bundle:
            bundle["text/html"] = f"<small>{note_html(info.note)}</small>{bundle['text/html']}"
    try:
        if into is not None:
            into.update(bundle, raw=True)
        else:
            from IPython.display import display

            display(bundle, raw=True)
    except Exception:
        logger.warning("could not display the answer", exc_info=True)


def _with_answer_parts(bundle: dict[str, Any], text: str, answer: Any) -> None:
    """The answer's thinking (folded; no duration, so executed notebooks compare equal) and
    its citations, in the shown answer. Markers only where ``text`` is the answer's own text
    (their offsets are into it); the list of sources either way."""
    from ...rendering.answer_parts import (
        answer_html,
        citations_text,
        thinking_details_html,
        thinking_html,
    )

    metadata = dict(getattr(answer, "metadata", None) or {})
    cited = metadata.get("citations")
    thinking = metadata.get("thinking")
    thinking = thinking if isinstance(thinking, str) and thinking.strip() else ""
    thought = bool(thinking)
    if not cited and not thought:
        return
    if cited and text != getattr(answer, "response", None) and isinstance(cited, list):
        metadata["citations"] = [{**c, "end": None} for c in cited if isinstance(c, dict)]
    html = answer_html(text, metadata)
    if thought:
        html = thinking_details_html(thinking_html(thinking)) + html
    bundle["text/html"] = html
    sources = citations_text(metadata)
    if sources:
        bundle["text/plain"] = f"{bundle.get('text/plain', '')}\n\n{sources}"


def note_html(note: str) -> str:
    """A note's HTML: escaped, its `names` as code (the backticks are markup, not text)."""
    import re
    from html import escape

    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(note))


def plain_note(note: str) -> str:
    """A note for a place that shows text only: without its backticks."""
    return note.replace("`", "")
