"""`ChatInput`: Chat's message box, a multi-line text area with the keys of a chat app.

A stock ``ipywidgets.Text`` is one line and a ``Textarea`` has no Enter-to-send, so the box
is a small anywidget (front end ``_static/chat_input.js``): Enter sends (a ``submit`` custom
message, after the typed value is synced), Shift+Enter starts a new line, and Esc anywhere
in the `Chat` sends ``stop``. ``disabled`` makes the box read-only rather than disabled, so
the keyboard focus stays in it during a run. It keeps the `Text` surface Chat relies on:
``value``, ``placeholder``, ``disabled``, ``focus()`` and ``blur()``.
"""

from __future__ import annotations

import anywidget
import traitlets

from ._base import STATIC, stylesheet

__all__ = ["ChatInput"]


class ChatInput(anywidget.AnyWidget):
    """The message box of a `Chat`; ``label`` is its accessible name."""

    _esm = STATIC / "chat_input.js"
    _css = traitlets.Unicode().tag(sync=True)

    value = traitlets.Unicode("").tag(sync=True)
    placeholder = traitlets.Unicode("").tag(sync=True)
    label = traitlets.Unicode("message").tag(sync=True)
    disabled = traitlets.Bool(False).tag(sync=True)

    def __init__(self, **kwargs: object):
        super().__init__(**kwargs)
        self._css = stylesheet()
