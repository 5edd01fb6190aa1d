"""`TerminalView`: a turn shown in a terminal IPython, where output cannot be updated in place.

A terminal prints every display update as new output, so the text view's refreshes (up to
twenty a second, each with the whole answer so far) would print the answer again and again.
This view writes what is new only: the header line once, each streamed fragment as it
arrives, each tool call and result on its own line, and at the end the cost footer or what
ended the turn. A streamed text answer is then not displayed a second time; an answer that
did not stream (a model that does not stream, a structured result) is displayed once, as in
a notebook.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from .view_seam import TurnInfo, TurnView, plain_note, show_answer

__all__ = ["TerminalView"]


class TerminalView(TurnView):
    """Prints a turn's stream to ``stdout`` as it comes, never twice."""

    def __init__(self, info: TurnInfo, out: Any = None):
        super().__init__(info)
        from ...widgets._spend import TurnSpend

        self._out = out
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
        self._streamed.append(fragment)
        self._write(clean_text(fragment))

    def message(self, message: Any) -> None:
        from ...operations.early_end import is_incomplete

        kind = getattr(message, "kind", "")
        self._incomplete = self._incomplete or is_incomplete(message)
        if kind == "action_request":
            self._line(f"→ {message.rendered}")
        elif kind == "action_response":
            self._line(f"← {message.function}: {message.rendered[:200]}")
        elif kind == "assistant_response":
            self._spend.add(message.metadata or {})

    def finish(self, result: Any) -> None:
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
        what = "interrupted" if interrupted else f"failed: {type(error).__name__}"
        if self._incomplete:
            from ...operations.early_end import KEPT_NOTE

            what = f"{what} · {KEPT_NOTE}"
        self._line(f"[{what}]")

    # -- output ----------------------------------------------------------------------------
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
