"""`LiveThinking`: a model's thinking while it streams, as the state a view sends.

The turn view, `BranchView` and `Chat` show a "Thinking" section live: the front end counts
the elapsed time from ``started`` itself, the kernel sends the text and an estimate of its
tokens (`lion_nb.tokens`) at the view's throttle. The section is open while the model thinks
and folds away once the answer starts (``running`` false, ``seconds`` set).

Thinking can be long (hundreds of thousands of characters); what is sent is its last
``tail`` characters, rendered and sanitized like every model output, with the count of the
ones before. So each update costs the same however long the thinking grew, in the kernel, on
the wire and in the browser; the answer's recorded message keeps all of it.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["LiveThinking"]

TAIL = 4_000  # characters of the live thinking sent to the front end


class LiveThinking:
    """The thinking of the answer being streamed."""

    def __init__(self, tail: int = TAIL):
        self._tail = tail
        self.clear()

    def clear(self) -> None:
        self._parts: list[str] = []
        self.size = 0
        self.tokens = 0
        self._t0: float | None = None
        self._started = 0.0  # epoch milliseconds, for the front end's clock
        self.seconds: float | None = None
        self._drawn: tuple[tuple[int, float | None], dict[str, Any]] | None = None

    def __bool__(self) -> bool:
        return self._t0 is not None

    @property
    def running(self) -> bool:
        return self._t0 is not None and self.seconds is None

    def add(self, fragment: str) -> None:
        """One more fragment (the first starts the clock)."""
        if not fragment:
            return
        from ..tokens import estimate_tokens

        if self.seconds is not None:  # thinking again (after a tool call): a new section
            self.clear()

        if self._t0 is None:
            self._t0, self._started = time.monotonic(), time.time() * 1000
        self._parts.append(fragment)
        self.size += len(fragment)
        self.tokens += estimate_tokens(fragment)
        if len(self._parts) > 512:  # a long stream of small fragments: keep few strings
            self._parts = ["".join(self._parts)]

    def whole(self, text: str, seconds: Any = None) -> None:
        """The thinking of an answer that did not stream it (all at once, already over)."""
        self.clear()
        self.add(text)
        self.seconds = float(seconds) if isinstance(seconds, (int, float)) else 0.0

    def stop(self) -> None:
        """The answer started (or the turn ended): thinking is over."""
        if self.running and self._t0 is not None:
            self.seconds = round(time.monotonic() - self._t0, 2)

    def text(self) -> str:
        return "".join(self._parts)

    def state(self) -> dict[str, Any]:
        """What the front end draws ({} before any thinking)."""
        if self._t0 is None:
            return {}
        key = (self.size, self.seconds)
        if self._drawn is not None and self._drawn[0] == key:
            return self._drawn[1]  # nothing new: not rendered again
        from ..models.clean import clean_text
        from ..rendering.answer_parts import thinking_html

        tail = self._last(self._tail)
        skipped = self.size - len(tail)
        if skipped:  # start at a line, not inside a word or a Markdown construct
            cut = tail.find("\n", 0, 500)
            if cut >= 0:
                tail, skipped = tail[cut + 1 :], skipped + cut + 1
        state = {
            "html": thinking_html(clean_text(tail)),
            "skipped": skipped,
            "tokens": self.tokens,
            "started": self._started,
            "seconds": self.seconds,
            "running": self.running,
        }
        self._drawn = (key, state)
        return state

    def _last(self, n: int) -> str:
        picked: list[str] = []
        have = 0
        for part in reversed(self._parts):
            picked.append(part)
            have += len(part)
            if have >= n:
                break
        return "".join(reversed(picked))[-n:]
