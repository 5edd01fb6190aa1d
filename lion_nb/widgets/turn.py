"""`TurnWidget`: one turn shown live -- streamed text, tool calls, elapsed time, tokens, Stop.

A model that thinks shows a "Thinking" section first (``thinking_state``): open and growing while it
thinks, with its time and tokens; folded away, and kept, once the answer starts.

It is what a ``%%lion`` cell shows while its turn runs when a widget front end is present
(the notebook layer builds it through its view seam; any code running a turn can use it the
same way: ``start``, ``text``, ``message``, ``finish`` / ``fail``). Text is streamed by
setting widget state through a `Throttle`, never by printing into an Output widget.

The front end counts elapsed time itself from ``started`` while ``running`` is true, so a
silent model costs no comm traffic; the kernel sends the final figure at the end.

Stop calls ``stop`` (given by whoever runs the turn): it cancels the turn, which ends the way
an interrupt does -- what was received is kept, and the status says so ("stopped · incomplete
answer kept on the branch") once the branch recorded it (ADR-0106). While the model's code
runs in the kernel (``code_running``), Stop also interrupts the kernel, where the front end
gives the widget its kernel: the running code holds the thread that reads Stop's message.
A proposed cell's step has "Insert below", which puts it under the turn's cell (or copies it,
where the front end gives no notebook).

``ask`` is the turn's asker for tools whose policy is ``approve="ask"``
(`lion_nb.protocols.approval`): the call (tool, server, arguments) is listed in ``asks`` with
Approve / Deny / "approve for this tool from now on" / "for this turn"; a call that runs
code (``run_python``) shows it highlighted with its risk flags, and Edit then run (the edited
code runs, and both are recorded). The turn awaits the click -- on the
kernel's loop, which keeps serving the front end meanwhile. Stop (or the interrupt) cancels
the wait, which denies the call. A coding agent's permission request (ACP) shows the agent's
own options instead (allow once / always, reject once / always), answered as ``"option:ID"``.
A widget no front end has drawn (it says so when it draws a call to answer) waits ``unseen_grace`` seconds,
then nobody is there to answer (nbval, nbconvert) and the call is denied.

The images and files the turn sent are shown under its header (images from ``data:`` URLs
only, files as chips), and stay when it ends.

When the turn has finished, the streamed text is cleared: the answer is shown once, as its own
output, by whoever ran the turn. The widget keeps its header (status, time, tokens) and the
tool calls. Its static rendering is empty on purpose, at start and end alike: a saved notebook
shows the answer's own output, and executed notebooks compare equal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

from ._base import call_safely, esm
from ._entries import EntryCache, message_meta
from ._spend import TurnSpend
from ._thinking import LiveThinking
from ._throttle import Throttle

__all__ = ["TurnWidget"]


class TurnWidget(anywidget.AnyWidget):
    """A live turn: header, tool calls, streamed text and a Stop button."""

    _esm = esm("turn.js")

    head = traitlets.Unicode("").tag(sync=True)
    note = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    running = traitlets.Bool(False).tag(sync=True)
    started = traitlets.Float(0.0).tag(sync=True)  # epoch milliseconds
    elapsed = traitlets.Float(0.0).tag(sync=True)  # seconds, final
    tokens = traitlets.Int(0).tag(sync=True)
    #: model · tokens (cached share) · $ for the turn, and the branch's running total
    footer = traitlets.Unicode("").tag(sync=True)
    steps = traitlets.List(traitlets.Dict()).tag(sync=True)
    text_html = traitlets.Unicode("").tag(sync=True)
    #: the model's thinking (`_thinking.LiveThinking.state`): open while it thinks, then folded
    thinking_state = traitlets.Dict().tag(sync=True)
    stoppable = traitlets.Bool(False).tag(sync=True)
    #: the model's code runs in this kernel now (`show_code_running`): Stop interrupts the
    #: kernel too, since the code holds the thread that would read Stop's message
    code_running = traitlets.Bool(False).tag(sync=True)
    #: this widget's model id: the front end finds the cell showing it ("Insert below")
    widget_id = traitlets.Unicode("").tag(sync=True)
    asks = traitlets.List(traitlets.Dict()).tag(sync=True)  # calls waiting for approval
    #: seconds an ask waits for a front end to show the widget before nobody is there to
    #: answer (a headless run: nbval, nbconvert) and the call is denied
    unseen_grace: float = 10.0
    #: a budget that stopped the turn: ``{"text", "action"}`` (the button), or empty
    budget = traitlets.Dict().tag(sync=True)

    #: the turn's images and files (`_entries.attachments`), images by hash in ``media``
    attachments = traitlets.List(traitlets.Dict()).tag(sync=True)
    media = traitlets.Dict().tag(sync=True)

    def __init__(
        self,
        head: str = "",
        *,
        note: str = "",
        stop: Callable[[], Any] | None = None,
        markdown: bool = True,
        max_rate: float = 20.0,
        **kwargs: Any,
    ):
        super().__init__(head=head, note=note, **kwargs)
        self._stop = stop
        self._markdown = markdown
        self._text: list[str] = []
        self._thinking = LiveThinking()
        self._steps: dict[str, dict[str, Any]] = {}
        self._plans: dict[str, str] = {}  # an ACP plan's step -> the step it is shown in
        self._incomplete = False  # the turn recorded an answer cut short
        self._cache = EntryCache(size=64)
        self._t0 = 0.0
        self._spend = TurnSpend()
        self._throttle = Throttle(self._flush, max_rate)
        self._waiting: dict[str, Any] = {}  # ask id -> future of the decision
        self._asked: dict[str, Any] = {}  # ask id -> its `Ask`
        self._turn_approved: set[str] = set()  # tools approved for this turn
        self._shown = _Flag()  # a front end drew this widget (it said so)
        self._raise: Callable[[], Any] | None = None  # what the budget's button does
        self.widget_id = self.model_id or ""
        self.on_msg(self._on_front_end)

    # -- the turn's events -----------------------------------------------------------------------
    def start(self, stop: Callable[[], Any] | None = None) -> None:
        if stop is not None:
            self._stop = stop
        self._t0 = time.monotonic()
        self._raise = None
        with self.hold_sync():
            self.budget = {}
            self.started = time.time() * 1000
            self.running = True
            self.stoppable = True
            self.status = "running"

    def text(self, fragment: str) -> None:
        if fragment:
            self._thinking.stop()  # the answer started: the thinking folds away
        self._text.append(fragment)
        self._throttle.poke()

    def thinking(self, fragment: str) -> None:
        """One fragment of the model's thinking, shown live in the "Thinking" section."""
        self._thinking.add(fragment)
        self._throttle.poke()

    def message(self, message: Any) -> None:
        from ..operations.early_end import is_incomplete

        kind = getattr(message, "kind", "")
        self._incomplete = self._incomplete or is_incomplete(message)
        if kind == "action_request":
            step = self._plan_step(message)
            index = self._steps[step]["index"] if step in self._steps else len(self._steps)
            self._steps[step] = self._cache.entry(message, index)
        elif kind == "action_response":
            key = str(message.action_request_id) if message.action_request_id else None
            if key is not None:
                key = self._plans.get(key, key)
            request_entry = self._steps.get(key) if key else None
            index = request_entry["index"] if request_entry else len(self._steps)
            self._steps[key or str(message.id)] = self._cache.entry(message, index)
        elif kind == "instruction":
            self._attach(message)
            return
        elif kind == "assistant_response":
            tokens = message_meta(message).get("tokens")
            if tokens:
                self.tokens += tokens
            self._spend.add(message.metadata or {})
            self.footer = self._spend.line()
            if not self._text and message.response:
                self._text.append(message.response)  # a model that does not stream text
            thought = (message.metadata or {}).get("thinking")
            if not self._thinking and isinstance(thought, str) and thought.strip():
                self._thinking.whole(thought, (message.metadata or {}).get("thinking_seconds"))
        else:
            return
        self._throttle.poke()

    def _plan_step(self, message: Any) -> str:
        """Where a call is shown: an ACP agent's plan updates replace its first plan's step,
        so the plan is one checklist that changes as the agent works."""
        key = str(message.id)
        if (message.metadata or {}).get("acp") == "plan":
            first = self._plans.setdefault("", key)
            self._plans[key] = first
            return first
        return key

    def _attach(self, message: Any) -> None:
        """Show the images and files the turn sent (each image once)."""
        from ._entries import attachments

        shown, media = attachments(message)
        if shown:
            with self.hold_sync():
                self.media = {**self.media, **media}
                self.attachments = [*self.attachments, *shown]

    def finish(self, result: Any = None) -> None:
        self._end("done")
        self._text.clear()
        self._throttle.flush()

    def fail(self, error: BaseException, *, interrupted: bool = False) -> None:
        """End the turn as stopped or failed; the status says when an incomplete answer was
        kept (the text shown so far stays: it is what the branch holds)."""
        if interrupted:
            status = "stopped"
        else:
            from ..models.secrets import redact

            status = redact(f"failed: {type(error).__name__}: {error}")[:300]
        if self._incomplete:
            from ..operations.early_end import KEPT_NOTE

            status = f"{status} · {KEPT_NOTE}"
        self._end(status)
        self._throttle.flush()

    def stop(self) -> bool:
        """Stop the turn (what the Stop button does); ``False`` when there is nothing to stop."""
        if not self.running or self._stop is None:
            return False
        self.stoppable = False
        self.status = "stopping"
        return bool(call_safely(self._stop))

    def show_code_running(self, running: bool) -> None:
        """The model's code started (``True``) or ended running in this kernel."""
        self.code_running = running  # the front end hears of a change only

    def branch_total(self, cost: Any) -> None:
        """Show the branch's running total (a `Cost`) after the turn's own figures."""
        self._spend.total = cost
        self.footer = self._spend.line()

    # -- a budget that stopped the turn --------------------------------------------------------
    def offer_budget(self, text: str, action: str, go: Callable[[], Any]) -> None:
        """Show that a budget stopped the turn (``text``) with a button (``action``) that
        calls ``go`` -- raise the budget and continue the turn."""
        self._raise = go
        self.budget = {"text": text, "action": action}

    def raise_budget(self) -> bool:
        """What the budget's button does; ``False`` when nothing is offered (or it failed)."""
        go, offered = self._raise, self.budget
        if go is None or self.running:
            return False
        self._raise = None
        self.budget = {}
        if call_safely(go) is None:  # could not continue (the branch is busy): offer it again
            if not self.running:
                self._raise, self.budget = go, offered
            return False
        return True

    # -- approval --------------------------------------------------------------------------------
    async def ask(self, ask: Any) -> Any:
        """Show ``ask`` (a `lion_nb.protocols.approval.Ask`) and wait for the decision:
        ``True``, ``False`` or ``"always"``."""
        import asyncio
        import uuid

        from ._entries import _pre, json_text

        if ask.tool in self._turn_approved:  # "approve for this turn" was given for it
            return True
        from ..protocols.approval import NOBODY

        key = uuid.uuid4().hex[:12]
        future = asyncio.get_running_loop().create_future()
        self._waiting[key] = future
        self._asked[key] = ask
        shown = {
            "id": key,
            "tool": ask.tool,
            "server": ask.server or "",
            "arguments": _pre(json_text(ask.arguments), 4_000),
            **_card(ask.extra),
        }
        options = (ask.extra or {}).get("options")
        if options:  # a coding agent's own choices (ACP): one button each
            shown["options"] = [
                {
                    "id": str(o["id"]),
                    "name": str(o.get("name") or o["id"]),
                    "kind": str(o.get("kind") or ""),
                }
                for o in options
            ]
        with self.hold_sync():
            self.asks = [*self.asks, shown]
            self.status = "waiting for approval"
        try:
            if not self._shown.is_set():  # nobody may be there (nbval, nbconvert): wait a while
                seen = asyncio.ensure_future(self._shown.wait())
                try:
                    await asyncio.wait({future, seen}, timeout=self.unseen_grace)
                finally:
                    seen.cancel()
                if not future.done() and not self._shown.is_set():
                    return NOBODY
            return await future
        finally:
            self._waiting.pop(key, None)
            self._asked.pop(key, None)
            with self.hold_sync():
                self.asks = [a for a in self.asks if a["id"] != key]
                if self.running and not self.asks:
                    self.status = "running"

    def answer(self, key: str, decision: str, code: str | None = None) -> bool:
        """Decide a waiting call: ``"approve"``, ``"deny"``, ``"always"``, ``"turn"``
        (approve this tool for the rest of the turn) or ``"edit"`` (run ``code`` instead of
        the model's, where the card offers it). ``False`` when nothing waits under ``key``."""
        from ..protocols.approval import ALWAYS, Edited

        future = self._waiting.get(key)
        if future is None or future.done():
            return False
        ask = self._asked.get(key)
        value: Any = {"approve": True, "deny": False, "always": ALWAYS, "turn": True}.get(
            decision, False
        )
        if decision == "turn" and ask is not None:
            self._turn_approved.add(ask.tool)
        if decision == "edit":
            field = ask.extra.get("edit") if ask is not None else None
            if ask is None or not field or not isinstance(code, str):
                return False  # nothing to edit here: the call still waits
            value = Edited({**ask.arguments, field: code})
        if decision.startswith("option:"):  # one of a coding agent's options, by id
            value = decision
        future.get_loop().call_soon_threadsafe(_settle, future, value)
        return True

    # -- internals -------------------------------------------------------------------------------
    def _end(self, status: str) -> None:
        self._thinking.stop()
        with self.hold_sync():
            self.elapsed = round(time.monotonic() - self._t0, 2) if self._t0 else 0.0
            self.running = False
            self.stoppable = False
            self.code_running = False
            self.status = status

    def _on_front_end(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "shown":
            self._shown.set()
        elif isinstance(content, dict) and content.get("type") == "stop":
            self.stop()
        elif isinstance(content, dict) and content.get("type") == "raise_budget":
            self.raise_budget()
        elif isinstance(content, dict) and content.get("type") == "approval":
            code = content.get("code")
            self.answer(
                str(content.get("id")),
                str(content.get("decision")),
                code if isinstance(code, str) else None,
            )

    def _flush(self) -> None:
        from ..models.clean import clean_text

        text = clean_text("".join(self._text))  # not a message yet: made clean here
        if text and self._markdown:
            from ..rendering import markdown_html

            html = markdown_html(text)  # not highlighted: re-lexed on every batch otherwise
        elif text:
            from html import escape

            html = f"<pre>{escape(text)}</pre>"
        else:
            html = ""
        with self.hold_sync():
            self.steps = sorted(self._steps.values(), key=lambda e: e["index"])
            self.text_html = html
            thinking = self._thinking.state()
            if thinking != self.thinking_state:
                self.thinking_state = thinking

    @property
    def streamed_text(self) -> str:
        return "".join(self._text)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The widget view, with an empty ``text/plain``: the answer is its own output, so a
        saved notebook shows that and nothing here (see the module docstring)."""
        found = super()._repr_mimebundle_(**kwargs)
        data = found[0] if isinstance(found, tuple) else found
        if data is not None:
            data["text/plain"] = ""
        return found

    def __repr__(self) -> str:
        return f"TurnWidget({self.head!r}, {self.status or 'new'})"


class _Flag:
    """Set once (from the comm handler, any thread); awaited on the kernel's loop."""

    def __init__(self) -> None:
        self._set = False
        self._waiters: list[Any] = []

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
        for future in self._waiters:
            future.get_loop().call_soon_threadsafe(_settle, future, True)
        self._waiters.clear()

    async def wait(self) -> None:
        import asyncio

        if self._set:
            return
        future = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        try:
            await future
        finally:
            if future in self._waiters:
                self._waiters.remove(future)


def _card(extra: dict[str, Any]) -> dict[str, Any]:
    """What an ask's card adds for code (`Ask.extra` from the tool): the code highlighted,
    its risk flags, and the argument Edit changes."""
    if not isinstance(extra.get("code_html"), str):
        return {}
    flags = [
        {"flag": str(f.get("flag", "")), "label": str(f.get("label", ""))}
        for f in extra.get("flags") or ()
        if isinstance(f, dict)
    ]
    return {
        "code_html": extra["code_html"],
        "code": str(extra.get("code", "")),
        "flags": flags,
        "edit": str(extra.get("edit") or ""),
    }


def _settle(future: Any, value: Any) -> None:
    if not future.done():
        future.set_result(value)
