"""`ThinkingText`: a model's thinking as the text views show it while a turn streams.

The widget view draws a "Thinking" section that is open while the model thinks and folds
into "Thought for N s" once the answer starts. The text views (`handle_view.HandleView`,
which redraws one display handle, and `terminal_view.TerminalView`, which can only print
what is new) show the same phases in text: a marked section while it runs, with its elapsed
time and estimated tokens, then one summary line in its place. A new phase after a tool call
is a new section. The timing and counting are the widget's own (`LiveThinking`), so the views
cannot disagree; the whole thinking stays in the answer's record and its shown output.
"""

from __future__ import annotations

import time

__all__ = ["ThinkingText"]

#: characters of the running thinking a redrawing view shows (the newest ones)
TAIL = 2_000


class ThinkingText:
    """The phases of one turn's thinking."""

    def __init__(self) -> None:
        from ...widgets._thinking import LiveThinking

        self.live = LiveThinking()
        self._t0 = 0.0  # when the running phase started
        self.phases = 0
        self._seconds = 0.0  # of the phases that ended
        self._tokens = 0

    @property
    def running(self) -> bool:
        return self.live.running

    def add(self, fragment: str) -> bool:
        """One more fragment; whether it starts a new phase."""
        new = bool(fragment) and not self.live.running
        if new:
            self._t0 = time.monotonic()
        self.live.add(fragment)
        return new

    def stop(self) -> str:
        """The phase ends (the answer started, a tool was called, the turn ended): its
        summary line, or "" when no phase was running."""
        if not self.live.running:
            return ""
        self.live.stop()
        self.phases += 1
        self._seconds += self.live.seconds or 0.0
        self._tokens += self.live.tokens
        return _summary(self.live.seconds, self.live.tokens)

    def total(self) -> str:
        """ "Thought for 5.3 s · ~90 tokens" for every phase that ended ("" for none)."""
        return _summary(self._seconds, self._tokens) if self.phases else ""

    def head(self) -> str:
        """ "Thinking… 2 s · ~40 tokens" (of the running phase)."""
        seconds = time.monotonic() - self._t0
        return f"Thinking… {seconds:.0f} s · {_tokens(self.live.tokens)}"

    def tail(self, limit: int = TAIL) -> tuple[str, int]:
        """The running phase's newest ``limit`` characters (made clean), and how many come
        before them."""
        from ...models.clean import clean_text

        text = self.live.text()[-limit:] if limit > 0 else ""
        return clean_text(text), self.live.size - len(text)


def _summary(seconds: float | None, tokens: int) -> str:
    from ...rendering.answer_parts import thinking_words

    return f"{thinking_words(seconds)} · {_tokens(tokens)}"


def _tokens(n: int) -> str:
    return f"~{n:,} token" + ("" if n == 1 else "s")
