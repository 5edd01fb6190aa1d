"""`WidgetView`: a cell's turn shown live as a `TurnWidget` (where a widget front end is).

It adapts the display seam to the widget: the widget is displayed when the turn starts, its
Stop button calls the runner's ``TurnInfo.stop``, and the answer is displayed once, as its
own output, when the turn finishes -- exactly as the text view does, so a notebook shows the
same answer output whichever view ran it.

When a budget stops the turn, the view offers to raise it and continue (`resume`): it reserves
an empty output in the turn's cell, where the continued turn's answer goes -- the click comes
after the cell ended, when a plain display would land in whatever cell runs then.
"""

from __future__ import annotations

from typing import Any

from .view_seam import TurnInfo, TurnView, show_answer

__all__ = ["WidgetView"]


class WidgetView(TurnView):
    """The seam's methods forwarded to a `TurnWidget`."""

    def __init__(self, info: TurnInfo):
        super().__init__(info)
        from ...widgets.turn import TurnWidget
        from .view_seam import plain_note

        head = " · ".join(p for p in (info.branch, info.operation, info.model) if p)
        self.widget = TurnWidget(
            head,
            note=plain_note(info.note),  # the widget shows text, not Markdown
            markdown=info.fmt == "markdown",
            max_rate=info.max_rate,
        )
        self._answer_slot: Any = None  # where a continued turn's answer goes

    def _stop(self) -> bool:
        stop = self.info.stop  # set by the runner once the turn's task exists
        return bool(stop()) if stop is not None else False

    def start(self) -> None:
        from IPython.display import display

        self.widget.start(stop=self._stop)
        display(self.widget)

    def text(self, fragment: str) -> None:
        self.widget.text(fragment)

    def thinking(self, fragment: str) -> None:
        self.widget.thinking(fragment)

    def message(self, message: Any) -> None:
        self.widget.message(message)

    def code_running(self, running: bool) -> None:
        """The model's code runs in the kernel (its Stop then interrupts the kernel)."""
        self.widget.show_code_running(running)

    def restart(self) -> None:
        """The turn goes on in this view (a continued turn): running again, not shown again."""
        self.widget.start(stop=self._stop)

    def finish(self, result: Any) -> None:
        self.widget.note = ""  # the answer below carries it: the note is shown once
        self.widget.finish(result)
        if self.info.branch_cost is not None:
            self.widget.branch_total(self.info.branch_cost())
        show_answer(result, self.info, into=self._answer_slot)

    def fail(self, error: BaseException, *, interrupted: bool = False) -> None:
        offer = self.info.budget_offer
        found = None if interrupted or offer is None else offer(error, self)
        if found is not None and self._answer_slot is None:
            from IPython.display import display

            self._answer_slot = display({"text/plain": ""}, raw=True, display_id=True)
        with self.widget.hold_sync():  # one update: the end is announced with the offer
            self.widget.fail(error, interrupted=interrupted)
            if self.info.branch_cost is not None:
                self.widget.branch_total(self.info.branch_cost())
            if found is not None:
                self.widget.offer_budget(found.text, found.action, found.go)

    async def ask(self, ask: Any) -> Any:
        """Approve / Deny in the widget (``approve="ask"``)."""
        return await self.widget.ask(ask)
