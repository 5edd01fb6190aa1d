"""`BranchView`: a branch's conversation as a chat that follows the branch live.

One widget draws the whole list (not one widget per message: a 10,000-message branch would
open 10,000 comm channels). Its state is a window of entries -- the latest ``page_size``
messages, or an earlier page the reader asked for -- each rendered and sanitized in the
kernel (`_entries`). Building the view and its first render therefore cost the same at 100
and at 10,000 messages; the front end asks for earlier pages on demand.

The view follows the branch through `MessageAdded`: each signal pokes a `Throttle`, so the
front end gets at most ``max_rate`` updates a second however fast messages arrive. Text
being streamed (`stream`) goes through the same throttle. Removals (undo, clear, a re-run
that replaced a turn) are picked up by `refresh`.

Screen readers hear the end of a turn once, through `announce` (a polite status region),
not each streamed chunk: the streamed text is a live region kept ``aria-busy`` while it grows.
A model's thinking (`stream_thinking`) is a "Thinking" section above the streamed text, open
while it thinks and folded once the answer starts; a recorded answer shows its thinking
folded, with how long it took. Citations are markers and a list of sources (`_entries`).

A message's images are drawn from ``data:`` URLs only, each kept once in ``media`` however
many messages show it; its files are chips (name, kind, pages or size). Nothing is fetched.

Per-message actions the reader can click (``fork`` in the explorer, say) are offered with
`on_action`; the front end sends the message id and the handler gets the message.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

import anywidget
import traitlets

from ._base import StaticFallback, call_safely, esm, release
from ._entries import (
    EntryCache,
    attachments_text,
    plain_text,
    take_media,
    tool_label,
    tool_state,
)
from ._thinking import LiveThinking
from ._throttle import Throttle

__all__ = ["BranchView"]

_STATIC_ENTRIES = 50  # how many of the latest entries the static rendering shows


class BranchView(StaticFallback, anywidget.AnyWidget):
    """The conversation of ``branch`` as a chat, live."""

    _esm = esm("branch_view.js")

    title = traitlets.Unicode("").tag(sync=True)
    entries = traitlets.List(traitlets.Dict()).tag(sync=True)
    #: content hash -> ``data:`` URL of the images the window's entries show (each once)
    media = traitlets.Dict().tag(sync=True)
    total = traitlets.Int(0).tag(sync=True)
    start = traitlets.Int(0).tag(sync=True)
    page_size = traitlets.Int(50).tag(sync=True)
    following = traitlets.Bool(True).tag(sync=True)
    stream_html = traitlets.Unicode("").tag(sync=True)
    #: the streamed answer's thinking (`_thinking.LiveThinking.state`), open while it thinks
    thinking_state = traitlets.Dict().tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    actions = traitlets.List(traitlets.Unicode()).tag(sync=True)
    height = traitlets.Unicode("").tag(sync=True)
    announcement = traitlets.Unicode("").tag(sync=True)  # read out once by a screen reader

    def __init__(
        self,
        branch: Any,
        *,
        page_size: int = 50,
        max_rate: float = 20.0,
        height: str = "",
        **kwargs: Any,
    ):
        if page_size < 1:
            raise ValueError(f"`page_size` is a positive number of messages, not {page_size}.")
        super().__init__(page_size=page_size, height=height, **kwargs)
        self._cache = EntryCache(size=max(4 * page_size, 200))
        self._throttle = Throttle(self._flush, max_rate)
        self._handlers: dict[str, Callable[[Any], Any]] = {}
        self._stream: list[str] = []
        self._thinking = LiveThinking()
        self._subscription: Any = None
        self._branch: Any = None
        self.on_msg(self._on_front_end)
        self.branch = branch

    # -- the branch ------------------------------------------------------------------------------
    @property
    def branch(self) -> Any:
        return self._branch

    @branch.setter
    def branch(self, branch: Any) -> None:
        """Show another branch (the explorer switches its view this way)."""
        from ..protocols.signals import MessageAdded

        if self._subscription is not None:
            self._subscription.cancel()
        self._branch = branch
        self._stream.clear()
        self._thinking.clear()
        branch_id = str(branch.id)

        def on_message(signal: Any) -> None:
            if signal.branch_id == branch_id:
                self._throttle.poke()

        self._subscription = branch.observe(MessageAdded, on_message)
        self.following = True
        self.refresh()

    def refresh(self) -> None:
        """Render the window again from the branch as it is now (at once, not throttled)."""
        self._throttle.flush()

    # -- live text -------------------------------------------------------------------------------
    def stream(self, fragment: str) -> None:
        """Show ``fragment`` after the text streamed so far (a turn in progress)."""
        if fragment:
            self._thinking.stop()  # the answer started: its thinking folds away
        self._stream.append(fragment)
        self._throttle.poke()

    def stream_thinking(self, fragment: str) -> None:
        """Show ``fragment`` of the model's thinking in the live "Thinking" section."""
        self._thinking.add(fragment)
        self._throttle.poke()

    def end_stream(self) -> None:
        """The streamed text has become a message (or was abandoned): stop showing it (the
        message shows its own thinking)."""
        self._stream.clear()
        self._thinking.clear()
        self._throttle.flush()

    @property
    def streamed_text(self) -> str:
        return "".join(self._stream)

    def announce(self, text: str) -> None:
        """Have a screen reader say ``text`` once (the view's polite ``role=status`` region):
        the end of a turn, say, where announcing each streamed chunk would drown the reader."""
        self.announcement = text

    # -- actions ---------------------------------------------------------------------------------
    def on_action(self, name: str, callback: Callable[[Any], Any] | None) -> None:
        """Offer ``name`` on every message; ``callback(message)`` runs when it is clicked.
        ``None`` withdraws the action."""
        if callback is None:
            self._handlers.pop(name, None)
        else:
            self._handlers[name] = callback
        self.actions = sorted(self._handlers)

    def page(self, start: int | None) -> None:
        """Show the page of messages from ``start`` (``None``: follow the latest)."""
        if start is None:
            self.following = True
        else:
            self.following = False
            self.start = max(0, min(int(start), max(0, self.total - 1)))
        self._throttle.flush()

    def _on_front_end(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        if kind == "page":
            start = content.get("start")
            self.page(None if start is None else int(start))
        elif kind == "action":
            handler = self._handlers.get(str(content.get("name")))
            message = self._branch.messages.get(str(content.get("id")))
            if handler is not None and message is not None:
                call_safely(handler, message)

    # -- rendering -------------------------------------------------------------------------------
    def _window(self) -> tuple[int, list[Any]]:
        pile = self._branch.messages
        total = len(pile)
        if self.following:
            start = max(0, total - self.page_size)
        else:
            start = min(self.start, max(0, total - 1))
        return start, pile[start : start + self.page_size]

    def _entries(self, start: int, messages: list[Any]) -> list[tuple[dict[str, Any], Any, Any]]:
        """(entry, message, response) for the window; a tool's response joins its request."""
        pile = self._branch.messages
        shown = {m.id for m in messages}
        out = []
        for offset, message in enumerate(messages):
            response = None
            if message.kind == "action_request" and message.action_response_id:
                response = pile.get(message.action_response_id)
            elif message.kind == "action_response" and message.action_request_id:
                request = pile.get(message.action_request_id)
                if request is not None and request.id in shown:
                    continue  # drawn with its request
            entry = self._cache.entry(message, start + offset, response)
            out.append((entry, message, response))
        return out

    def _flush(self) -> None:
        start, messages = self._window()
        made = self._entries(start, messages)
        from ..models.clean import clean_text
        from ..rendering import markdown_html

        text = clean_text("".join(self._stream))  # not a message yet: made clean here
        with self.hold_sync():
            self.title = self._branch.name or str(self._branch.id)[:8]
            self.total = len(self._branch.messages)
            self.start = start
            entries = [entry for entry, _m, _r in made]
            media = take_media(entries)
            if media != self.media:
                self.media = media
            self.entries = entries
            self.stream_html = markdown_html(text) if text else ""  # highlighted once recorded
            thinking = self._thinking.state()
            if thinking != self.thinking_state:
                self.thinking_state = thinking

    # -- static renderings -----------------------------------------------------------------------
    def static_text(self) -> str:
        messages = self._branch.messages
        start = max(0, len(messages) - _STATIC_ENTRIES)
        lines = [f"BranchView({self.title!r}, {len(messages)} messages)"]
        if start:
            lines.append(f"… {start} earlier messages")
        for entry, message, response in self._entries(start, messages[start:]):
            lines.append(plain_text(entry, message, response))
        return "\n".join(lines)

    def static_html(self) -> str:
        messages = self._branch.messages
        start = max(0, len(messages) - _STATIC_ENTRIES)
        parts = [f"<div><strong>{escape(self.title)}</strong> · {len(messages)} messages</div>"]
        if start:
            parts.append(f"<div><em>… {start} earlier messages</em></div>")
        for entry, _m, _r in self._entries(start, messages[start:]):
            parts.append(static_entry_html(entry))
        return f'<div class="lnb-static">{"".join(parts)}</div>'

    def close(self) -> None:
        """Stop following the branch, then close the widget."""
        release(self)
        super().close()

    def __repr__(self) -> str:
        name = self._branch.name if self._branch is not None else None
        return f"BranchView({name!r}, messages={self.total})"


_STATIC_STATES = {"pending": "running", "ok": "ok", "error": "error", "denied": "denied"}


def static_entry_html(entry: dict[str, Any]) -> str:
    """One entry as static HTML (no script, no ids, no times)."""
    role = escape(entry["role"])
    if entry["kind"] == "action":
        state = _STATIC_STATES[tool_state(entry)]
        return (
            f"<details><summary>🔧 <code>{escape(tool_label(entry))}</code> · {state}</summary>"
            f"<div>arguments</div>{entry['arguments']}<div>result</div>{entry['result']}</details>"
        )
    extra = attachments_text(entry)
    extra = f"<p><em>{escape(extra)}</em></p>" if extra else ""
    thought = ""
    if entry.get("thinking"):  # folded away, with no duration: static renderings compare equal
        from ..rendering.answer_parts import thinking_details_html

        thought = thinking_details_html(entry["thinking"]["html"])
    return f"<div><p><strong>{role}</strong></p>{thought}{entry['html']}{extra}</div><hr>"
