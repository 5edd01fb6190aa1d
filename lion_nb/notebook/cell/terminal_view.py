"""`TerminalView`: a turn shown in a terminal IPython, where output cannot be updated in place.

A terminal prints every display update as new output, so the text view's refreshes (up to
twenty a second, each with the whole answer so far) would print the answer again and again.
This view writes what is new only: the header line once, each streamed fragment as it
arrives, each tool call and result on its own line, and at the end the cost footer or what
ended the turn. The model's thinking streams the same way, marked: a ``[Thinking…]`` line,
then its text with each line behind ``│``, closed by a ``[Thought for N s · ~T tokens]``
line when the answer starts (or a tool is called), as the widget folds its section. What a
model streams is printed without its control characters (escape sequences included), so an
answer cannot move the cursor, recolour or retitle the terminal. A streamed text answer is then not displayed a second time; an answer that
did not stream (a model that does not stream, a structured result) is displayed once, as in
a notebook.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from typing import Any

from .view_seam import TurnInfo, TurnView, plain_note, show_answer

__all__ = ["TerminalView"]

# control characters but tab and newline (ESC and the one-byte CSI start escape sequences)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _printable(text: str) -> str:
    return _CONTROL.sub("", text)


class TerminalView(TurnView):
    """Prints a turn's stream to ``stdout`` as it comes, never twice."""

    def __init__(self, info: TurnInfo, out: Any = None):
        super().__init__(info)
        from ...widgets._spend import TurnSpend
        from .thinking_text import ThinkingText

        self._out = out
        self._thinking = ThinkingText()
        self._spend = TurnSpend()
        self._streamed: list[str] = []
        self._at_line_start = True
        self._incomplete = False

    # -- the seam ------------------------------------------------------------------------
    def start(self) -> None:
        info = self.info
        head = " · ".join(p for p in (info.branch, info.operation, info.model, "running…") if p)
        self._line(f"[{head}]")
        if info.note:
            self._line(f"[{plain_note(info.note)}]")

    def text(self, fragment: str) -> None:
        from ...models.clean import clean_text

        if not fragment:
            return
        self._thought()
        self._streamed.append(fragment)
        self._write(_printable(clean_text(fragment)))

    def thinking(self, fragment: str) -> None:
        from ...models.clean import clean_text

        if not fragment:
            return
        if self._thinking.add(fragment):
            self._line("[Thinking…]")
        self._write_marked(_printable(clean_text(fragment)))

    def message(self, message: Any) -> None:
        from ...operations.early_end import is_incomplete

        kind = getattr(message, "kind", "")
        self._incomplete = self._incomplete or is_incomplete(message)
        if kind in ("action_request", "assistant_response"):
            self._thought()
        if kind == "action_request":
            self._line(f"→ {message.rendered}")
        elif kind == "action_response":
            self._line(f"← {message.function}: {message.rendered[:200]}")
        elif kind == "assistant_response":
            self._spend.add(message.metadata or {})

    def finish(self, result: Any) -> None:
        self._thought()
        streamed = "".join(self._streamed).strip()
        if not (streamed and isinstance(result, str) and result.strip() == streamed):
            self._end_line()
            show_answer(result, dataclasses.replace(self.info, note=""))  # the note was shown
        if self._spend.calls and self.info.branch_cost is not None:
            self._spend.total = self.info.branch_cost()
        line = self._spend.line()
        if line:
            self._line(f"[{line}]")
        else:
            self._end_line()

    def fail(self, error: BaseException, *, interrupted: bool = False) -> None:
        self._thought()
        what = "interrupted" if interrupted else f"failed: {type(error).__name__}"
        if self._incomplete:
            from ...operations.early_end import KEPT_NOTE

            what = f"{what} · {KEPT_NOTE}"
        self._line(f"[{what}]")

    # -- output ----------------------------------------------------------------------------
    def _thought(self) -> None:
        """End a running thinking phase with its summary line."""
        summary = self._thinking.stop()
        if summary:
            self._line(f"[{summary}]")

    def _write_marked(self, text: str) -> None:
        """Thinking text, every line it starts behind the ``│`` mark."""
        if self._at_line_start:
            text = "│ " + text
        head, ends, rest = text.rpartition("\n")
        if ends:  # lines that end inside the text: the next one starts marked
            text = head.replace("\n", "\n│ ") + "\n" + ("│ " + rest if rest else "")
        self._write(text)

    def _stream(self) -> Any:
        return self._out if self._out is not None else sys.stdout

    def _write(self, text: str) -> None:
        out = self._stream()
        out.write(text)
        out.flush()
        self._at_line_start = text.endswith("\n")

    def _end_line(self) -> None:
        if not self._at_line_start:
            self._write("\n")

    def _line(self, text: str) -> None:
        self._end_line()
        self._write(text + "\n")
