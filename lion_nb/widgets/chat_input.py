"""`ChatInput`: Chat's message box, a multi-line text area with the keys of a chat app, and
its attach button.

A stock ``ipywidgets.Text`` is one line and a ``Textarea`` has no Enter-to-send, so the box
is a small anywidget (front end ``_static/chat_input.js``): Enter sends (a ``submit`` custom
message carrying the text typed), Shift+Enter starts a new line, and Esc anywhere
in the `Chat` sends ``stop``. ``disabled`` makes the box read-only rather than disabled, so
the keyboard focus stays in it during a run. It keeps the `Text` surface Chat relies on:
``value``, ``placeholder``, ``disabled``, ``focus()`` and ``blur()``.

"Attach a file" is a button in words that opens the browser's file picker (a native file
input, hidden, so the button is the one control to reach by keyboard). The picked file's
bytes come to the kernel with an ``attach`` message and are read as `%%lion --file` reads a
file (`lion_nb.context.files.load_bytes`: a PDF as a document, an image as an image, text
as text); each waits as a chip, with its own "remove" button, and goes with the next
message as ``files=``. A file that cannot be sent is refused with the reason, through
``on_error``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from ._base import call_safely, esm

__all__ = ["ChatInput"]


class ChatInput(anywidget.AnyWidget):
    """The message box of a `Chat`; ``label`` is its accessible name."""

    _esm = esm("chat_input.js")

    value = traitlets.Unicode("").tag(sync=True)
    placeholder = traitlets.Unicode("").tag(sync=True)
    label = traitlets.Unicode("message").tag(sync=True)
    disabled = traitlets.Bool(False).tag(sync=True)
    #: the files waiting for the next message, as chips: ``{"name", "label"}``
    attached = traitlets.List(traitlets.Dict()).tag(sync=True)

    def __init__(self, on_error: Callable[[str], Any] | None = None, **kwargs: object):
        super().__init__(**kwargs)
        self._files: list[Any] = []  # `Content`, one per attached file
        self._on_error = on_error
        self.on_msg(self._on_attach_message)

    # -- attachments ---------------------------------------------------------------------------
    @property
    def files(self) -> list[Any]:
        """The attached files (what the next message sends as ``files=``)."""
        return list(self._files)

    def attach(self, source: str | os.PathLike[str] | bytes, name: str | None = None) -> None:
        """Attach a file (a path, or bytes with their ``name``) to the next message."""
        from ..context.files import load_bytes, load_file

        if isinstance(source, (bytes, bytearray, memoryview)):
            content = load_bytes(name or "file", bytes(source))
            label_name = name or "file"
        else:
            content = load_file(source)
            label_name = name or Path(source).name
        self._files.append(content)
        self.attached = [*self.attached, _chip(label_name, content)]

    def detach(self, index: int) -> None:
        """Remove the attached file at ``index``."""
        if 0 <= index < len(self._files):
            del self._files[index]
            self.attached = [c for i, c in enumerate(self.attached) if i != index]

    def take_files(self) -> list[Any]:
        """The attached files, now sent: the chips go."""
        files, self._files = self._files, []
        self.attached = []
        return files

    def put_back(self, files: list[Any], chips: Sequence[dict[str, Any]] = ()) -> None:
        """Attach ``files`` again (a message that left nothing on the branch, an undone
        turn); files sent from Python, which have no chips yet, get theirs here."""
        chips = [*chips, *(_chip_of(item) for item in files[len(chips) :])]
        self._files = [*files, *self._files]
        self.attached = [*chips, *self.attached]

    def _on_attach_message(self, _widget: Any, content: Any, buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        event = content.get("event")
        if event == "attach" and buffers:
            name = Path(str(content.get("name") or "file")).name  # a name, never a path
            try:
                self.attach(bytes(buffers[0]), name=name)
            except (ValueError, TypeError) as exc:
                if self._on_error is not None:
                    call_safely(self._on_error, f"`{name}` not attached: {exc}")
        elif event == "detach":
            try:
                self.detach(int(content.get("index", -1)))
            except (TypeError, ValueError):
                pass


def _chip_of(item: Any) -> dict[str, Any]:
    """The chip of a file given to ``files=`` from Python (a path, bytes, a `Content`)."""
    from ..context.content import Content
    from ..context.files import as_file_parts

    name = Path(item).name if isinstance(item, (str, os.PathLike)) else "file"
    try:
        content = item if isinstance(item, Content) else as_file_parts([item])
    except (OSError, TypeError, ValueError):  # gone or changed since it was sent
        return {"name": name, "label": "file"}
    if content.files:
        name = content.files[0].get("file", {}).get("filename") or name
    return _chip(name, content)


def _chip(name: str, content: Any) -> dict[str, Any]:
    """The chip of an attached file: its name, and what it was read as."""
    if content.files:
        from ._entries import file_chip

        label = file_chip(content.files[0])["label"]
    elif content.images:
        from ..models.media import describe_image

        label = describe_image(content.images[0])
    else:
        label = content.summary or "text"
    return {"name": name, "label": label}
