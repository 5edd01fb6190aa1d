"""The display sink: what a turn reports to while it runs, and where the cell shows it.

A turn talks to a `TurnView` only: ``start`` once, ``text`` for each streamed fragment,
``message`` for each recorded message (instruction, tool call, tool result, answer), then
exactly one of ``finish`` (with the result) or ``fail``. Which view a turn gets is decided by
one factory (`set_view_factory`), so a richer view -- a live widget -- replaces the default
without the runner knowing.

In a terminal IPython, where every display update prints as new output, the view is
`terminal_view.TerminalView`, which prints only what is new. Elsewhere the default,
`HandleView`, keeps one IPython display handle per turn and updates it in
batches: at most ``max_rate`` updates a second (20 by default), the last fragments flushed by
a timer, never by printing from a background task. A view never raises into the turn: a
failing display is logged and the run goes on.

The live handle starts empty and ends with the turn's cost footer (model · tokens (cached
share) · $ for the turn · the branch's total; empty when no call was recorded), the line the
widget view shows under its header; the finished answer is displayed once, as its own output. A frontend shows the stream in place and then the answer; a headless runner that
ignores display updates (nbval, nbconvert) records exactly what a live notebook keeps, so
executed notebooks compare equal to their saved outputs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .view_seam import TurnInfo, TurnView, show_answer

__all__ = [
    "HandleView",
    "NullView",
    "SafeView",
    "TurnInfo",
    "TurnView",
    "make_view",
    "set_view_factory",
    "show_answer",
    "terminal_shell",
    "widget_frontend",
]

logger = logging.getLogger("lion_nb.notebook")


_EMPTY: dict[str, Any] = {"text/plain": ""}


class NullView(TurnView):
    """Shows nothing (``--quiet``)."""


class HandleView(TurnView):
    """Streams into one display handle, at most ``info.max_rate`` updates a second."""

    def __init__(self, info: TurnInfo):
        super().__init__(info)
        from ...widgets._spend import TurnSpend
        from ...widgets._throttle import Throttle
        from .thinking_text import ThinkingText

        self._handle: Any = None
        self._thinking = ThinkingText()
        self._spend = TurnSpend()
        self._text: list[str] = []
        self._steps: list[str] = []
        self._throttle = Throttle(self._flush, info.max_rate)
        self.updates = 0
        self._incomplete = False  # the turn recorded an answer cut short

    # -- the seam ------------------------------------------------------------------------
    def start(self) -> None:
        from IPython.display import display

        self._handle = display(_EMPTY, raw=True, display_id=True)
        self._update(self._bundle(streaming=True))

    def text(self, fragment: str) -> None:
        if fragment:
            self._thought()  # the answer started: the thinking folds into its summary
        self._text.append(fragment)
        self._throttle.poke()

    def thinking(self, fragment: str) -> None:
        self._thinking.add(fragment)
        self._throttle.poke()

    def message(self, message: Any) -> None:
        from ...operations.early_end import is_incomplete

        kind = getattr(message, "kind", "")
        self._incomplete = self._incomplete or is_incomplete(message)
        if kind in ("action_request", "assistant_response"):
            self._thought()
        if kind == "action_request":
            self._steps.append(f"→ {message.rendered}")
        elif kind == "action_response":
            out = message.rendered
            self._steps.append(f"← {message.function}: {out[:200]}")
        elif kind == "assistant_response":
            self._spend.add(message.metadata or {})
            if self._text or not message.response:
                return
            self._text.append(message.response)  # a model that does not stream text
        else:
            return
        self._throttle.poke()

    def finish(self, result: Any) -> None:
        self._throttle.cancel()
        self._thought()
        self._update(self._footer())
        show_answer(result, self.info)

    def fail(self, error: BaseException, *, interrupted: bool = False) -> None:
        self._throttle.cancel()
        self._thought()
        what = "interrupted" if interrupted else f"failed: {type(error).__name__}"
        if self._incomplete:
            from ...operations.early_end import KEPT_NOTE

            what = f"{what} · {KEPT_NOTE}"
        self._update(self._bundle(streaming=False, status=what))

    # -- output ----------------------------------------------------------------------------
    def _thought(self) -> None:
        """End a running thinking phase: its summary line goes with the turn's steps."""
        summary = self._thinking.stop()
        if summary:
            self._steps.append(f"[{summary}]")

    def _footer(self) -> dict[str, Any]:
        """The handle's last state: how long the turn thought and the cost footer, or empty
        when neither applies."""
        from html import escape

        if self._spend.calls and self.info.branch_cost is not None:
            self._spend.total = self.info.branch_cost()
        lines = [line for line in (self._thinking.total(), self._spend.line()) if line]
        if not lines:
            return _EMPTY
        plain = "\n".join(f"[{line}]" for line in lines)
        return {"text/plain": plain, "text/html": f"<small>{escape(' · '.join(lines))}</small>"}

    def _flush(self) -> None:
        self._update(self._bundle(streaming=True))

    def _update(self, bundle: dict[str, Any]) -> None:
        if self._handle is None:
            return
        try:
            self._handle.update(bundle, raw=True)
            self.updates += 1
        except Exception:
            logger.warning("could not update the cell's display", exc_info=True)

    def _bundle(self, *, streaming: bool, status: str = "") -> dict[str, Any]:
        from html import escape

        info = self.info
        state = status or ("running…" if streaming else "")
        head = " · ".join(
            p for p in (info.branch, info.operation, info.model, state, info.note) if p
        )
        from ...models.clean import clean_text

        text = clean_text("".join(self._text))  # not a message yet: made clean here
        steps = "\n".join(self._steps)
        thinking, thinking_html = self._running_thinking()
        plain = "\n".join(part for part in (f"[{head}]", steps, thinking, text) if part)
        if info.fmt == "markdown" and text:
            from .output_formats import markdown_html

            body = markdown_html(text)
        else:
            body = f"<pre>{escape(text)}</pre>" if text else ""
        steps_html = f"<pre>{escape(steps)}</pre>" if steps else ""
        html = f"<div><small>{escape(head)}</small>{steps_html}{thinking_html}{body}</div>"
        return {"text/html": html, "text/plain": plain}

    def _running_thinking(self) -> tuple[str, str]:
        """The running thinking phase as text and HTML: its head (elapsed time, tokens) and
        its newest part, open; ("", "") when the model is not thinking."""
        if not self._thinking.running:
            return "", ""
        from ...rendering.answer_parts import thinking_details_html, thinking_html

        head = self._thinking.head()
        tail, skipped = self._thinking.tail()
        more = f"[… {skipped:,} characters before …]\n" if skipped else ""
        plain = f"[{head}]\n" + "\n".join(f"│ {line}" for line in f"{more}{tail}".split("\n"))
        html = thinking_details_html(thinking_html(f"{more}{tail}"), head)
        return plain, html.replace("<details ", "<details open ", 1)


def widget_frontend() -> bool:
    """Whether this process is a kernel whose front end can show widgets (a terminal or an
    in-process shell cannot)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def terminal_shell() -> bool:
    """Whether this is a terminal IPython someone types into: its display prints every
    update as new output, and Ctrl-C reaches it as SIGINT. An embedded shell whose display
    is captured (a test's, a tool's) is not one, even when it is a terminal shell's class."""
    import sys

    terminal = sys.modules.get("IPython.terminal.interactiveshell")
    if terminal is None:  # never imported: no terminal shell is running
        return False
    from IPython import get_ipython
    from IPython.core.displaypub import DisplayPublisher

    shell = get_ipython()
    if not isinstance(shell, terminal.TerminalInteractiveShell):
        return False
    if type(getattr(shell, "display_pub", None)) is not DisplayPublisher:  # captured
        return False
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):  # no stdin, or a closed one
        return False


_factory: Callable[[TurnInfo], TurnView] | None = None


def set_view_factory(factory: Callable[[TurnInfo], TurnView] | None) -> None:
    """Use ``factory(info)`` to build each turn's view (``None`` restores `HandleView`)."""
    global _factory
    _factory = factory


def make_view(info: TurnInfo, *, quiet: bool = False) -> TurnView:
    """The view for one turn; a failing factory falls back to `HandleView` with a warning."""
    if quiet:
        return NullView(info)
    factory = _factory
    if factory is None and (info.live == "widget" or (info.live == "auto" and widget_frontend())):
        from .widget_view import WidgetView

        factory = WidgetView
    if factory is None and terminal_shell():
        from .terminal_view import TerminalView

        factory = TerminalView
    if factory is not None:
        try:
            return SafeView(factory(info))
        except Exception:
            logger.warning("the view factory failed; using the default view", exc_info=True)
    return SafeView(HandleView(info))


class SafeView(TurnView):
    """Wraps a view so that none of its errors reach the turn."""

    def __init__(self, inner: TurnView):
        super().__init__(inner.info)
        self.inner = inner

    def _call(self, name: str, *args: Any, **kw: Any) -> None:
        try:
            getattr(self.inner, name)(*args, **kw)
        except Exception:
            logger.warning("the turn's view failed in `%s`", name, exc_info=True)

    def start(self) -> None:
        self._call("start")

    def text(self, fragment: str) -> None:
        self._call("text", fragment)

    def thinking(self, fragment: str) -> None:
        self._call("thinking", fragment)

    def message(self, message: Any) -> None:
        if getattr(message, "kind", "") == "assistant_response":
            self.info.answer = message  # its thinking and citations go with the shown answer
        self._call("message", message)

    def finish(self, result: Any) -> None:
        self._call("finish", result)

    def fail(self, error: BaseException, *, interrupted: bool = False) -> None:
        self._call("fail", error, interrupted=interrupted)

    @property
    def code_running(self) -> Callable[[bool], None] | None:
        """The inner view's watcher of the model's code runs (``None``: it has no Stop that
        needs to know); its errors are the run's watcher's to swallow."""
        return getattr(self.inner, "code_running", None)

    @property
    def ask(self) -> Any:
        """The inner view's asker for ``approve="ask"`` (``None``: it cannot ask). Not wrapped:
        its errors deny the call (approval fails closed) and a cancellation must propagate."""
        return getattr(self.inner, "ask", None)
