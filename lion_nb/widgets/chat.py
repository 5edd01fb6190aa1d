"""`Chat`: a `BranchView` with an input box, Send, Stop, Re-run, Undo, Clear and an
operation picker -- a chat interface on a branch.

Decisions:

- A run is a task on the running event loop (the kernel's), so the kernel stays free while a
  model answers; streamed text reaches the view through `streaming_to`, and the header status
  ticks every ``tick`` seconds (elapsed time, tokens so far). The ticking timer also keeps the
  loop awake, so interrupting a cell that awaits a silent ``send`` is acted on promptly.
- One run at a time, and the input is disabled while it runs (not queued): a queued message
  would be sent against an answer its writer has not read, two runs on one branch would
  interleave their messages, and Stop / Undo / Re-run would no longer say which turn they
  mean. ``send`` during a run raises `RuntimeError`.
- Each operation keeps its own semantics: ``communicate``, ``operate`` and ``ReAct`` record
  the turn; ``chat`` and ``interpret`` record nothing, so their answer is shown under the view
  (``note``) rather than in it. Stop cancels the task: the branch keeps what the turn
  received -- the instruction and the text streamed so far, marked incomplete (ADR-0106), and
  the status says so -- and a text that left no trace on the branch (stopped before any
  answer text) goes back into the input box, as it does after a failure.
- A turn is the last instruction and everything after it. A turn this chat sent is known as a
  whole (ReAct records several instructions in one turn), so Undo and Re-run remove all of
  it. Removal goes through `MessageManager.remove_message` / `clear_messages`, which also drop
  the cached request rendering; the view is then refreshed (removals send no signal).
- Re-run sends the turn's text again with the operation selected now, and its files with it;
  Undo puts the text back in the box and the files back among the attachments. A Re-run with
  files under an operation that takes none is refused before the turn is removed.
- "Attach a file" (in the `ChatInput`) attaches a file to the next message, as ``files=``;
  the operations that take none (``ReAct``, ``interpret``, registered ones) refuse a message
  with files rather than drop them. A message that leaves nothing on the branch gets its
  files back, as it gets its text back.
- The message box is a multi-line `ChatInput`: Enter sends, Shift+Enter starts a new line.
  Its value is synced as typed, and the ``submit`` message carries the whole text, which
  a lagging sync of the last keys cannot cut short. Esc
  anywhere in the chat stops a running answer, as Stop does.
- The keyboard focus stays where the reader was: in the box after Enter or Send (the box is
  read-only, not disabled, during a run), and back in the box after Stop (Stop is disabled
  once nothing runs). The end of a turn is announced once to screen readers
  (`BranchView.announce`). Buttons carry words only (an icon font's glyph would be read as
  part of their name) and the operation picker is labelled.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as widgets

from ..operations.verbs import VERBS, verb_names
from ._base import StaticFallback, call_safely
from .branch_view import BranchView
from .chat_input import ChatInput

__all__ = ["DEFAULT_OPERATIONS", "Chat"]

DEFAULT_OPERATIONS = ("communicate", "chat", "operate", "ReAct", "interpret")
_BUILTIN = verb_names()
_UNRECORDED = tuple(v.name for v in VERBS.values() if not v.records)
_WITH_FILES = verb_names(media=True)  # the operations that take files=
_ERROR_LIMIT = 300  # characters of an error shown in the status line
_ANNOUNCED = 300  # characters of an answer read out when its turn ends


@dataclass(frozen=True)
class _Turn:
    """A turn this chat sent: its first message's id, its text and its files."""

    first: str
    text: str
    files: tuple = ()  # `Content`, as sent
    chips: tuple = ()  # their chips, to attach them again


@dataclass(eq=False)
class _Run:
    """One run: what was sent, how, since when, and whether its end was reported."""

    text: str
    op: str
    files: list = field(default_factory=list)  # attached files (`Content`), sent as files=
    chips: list = field(default_factory=list)  # their chips, to attach them again
    before: set = field(default_factory=set)
    started: float = field(default_factory=time.monotonic)
    finished: bool = False


class Chat(StaticFallback, widgets.VBox):
    """``branch`` as a chat: type, press Enter, and the selected operation answers.

    ``send`` is the chat's own (``await chat.send(text)``), not `Widget.send`: nothing sends
    custom messages to a Box's front end, and ``focus``/``blur`` go to the input box.
    """

    tick = 0.5  # seconds between status updates while a run is in progress

    def __init__(
        self,
        branch: Any,
        *,
        operation: str = "communicate",
        operations: list[str] | tuple[str, ...] | None = None,
        placeholder: str = "Message (Enter sends, Shift+Enter adds a line)",
        **view_kw: Any,
    ):
        names = list(operations) if operations is not None else list(DEFAULT_OPERATIONS)
        if not names:
            raise ValueError("`operations` lists at least one operation.")
        for name in names:
            _check_operation(branch, name)
        if operation not in names:
            raise ValueError(f"`operation={operation!r}` is not one of `operations`: {names}.")
        self.view = BranchView(branch, **view_kw)
        self.input = ChatInput(
            on_error=self._attach_failed,
            placeholder=placeholder,
            label=f"message to {branch.name or 'the branch'}",
            layout=widgets.Layout(flex="1 1 auto", width="auto"),
        )
        self.input.on_msg(self._on_input_message)
        self.picker = widgets.Dropdown(
            options=names,
            value=operation,
            description="operation",
            style={"description_width": "initial"},
            tooltip="operation",
            layout=widgets.Layout(width="auto", display="" if len(names) > 1 else "none"),
        )
        self.send_button = _button("Send", "send the message (Enter)")
        self.stop_button = _button("Stop", "stop the running answer (Esc)")
        self.rerun_button = _button("Re-run", "remove the last turn and send it again")
        self.undo_button = _button("Undo", "remove the last turn, text back in the box")
        self.clear_button = _button("Clear", "remove every message but the system one")
        self.send_button.on_click(lambda _b: call_safely(self._clicked, self._submit))
        self.stop_button.on_click(lambda _b: call_safely(self._clicked, self.stop))
        self.rerun_button.on_click(lambda _b: call_safely(self._clicked_rerun))
        self.undo_button.on_click(lambda _b: call_safely(self.undo))
        self.clear_button.on_click(lambda _b: call_safely(self.clear))
        self.note = widgets.HTML(layout=widgets.Layout(display="none"))
        self.controls = widgets.HBox(
            [
                self.picker,
                self.input,
                self.send_button,
                self.stop_button,
                self.rerun_button,
                self.undo_button,
                self.clear_button,
            ],
            layout=widgets.Layout(align_items="center", width="100%"),
        )
        self.controls.add_class("lnb-chat-controls")
        super().__init__([self.view, self.note, self.controls])
        self.add_class("lnb-chat")
        self._task: asyncio.Task | None = None
        self._turn_of: dict[str, _Turn] = {}  # message id -> the turn it belongs to
        self._set_running(False)

    # -- state -----------------------------------------------------------------------------------
    @property
    def branch(self) -> Any:
        return self.view.branch

    @property
    def operation(self) -> str:
        """The operation a message is sent with (the picker's value)."""
        return self.picker.value

    @operation.setter
    def operation(self, name: str) -> None:
        if name not in self.picker.options:
            raise ValueError(f"`{name}` is not one of {list(self.picker.options)}.")
        self.picker.value = name

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def task(self) -> asyncio.Task | None:
        """The task of the current (or last) run; await it to wait for the run."""
        return self._task

    # -- sending ---------------------------------------------------------------------------------
    async def send(
        self, text: str, *, operation: str | None = None, files: list | None = None
    ) -> Any:
        """Send ``text`` as typing it would, and return the operation's result (``None`` when
        stopped). ``files`` go with it (paths, bytes, anything the verbs' ``files=`` takes).
        A failure is shown in the status and raised here."""
        return await _outcome(self._start(text, operation, files=files))

    def attach(self, source: Any, name: str | None = None) -> None:
        """Attach a file to the next message, as "Attach a file" does (a path, or bytes and
        their ``name``)."""
        self.input.attach(source, name=name)

    def _attach_failed(self, reason: str) -> None:
        self.view.status = f"error · {reason}"

    def _start(
        self,
        text: str,
        operation: str | None = None,
        *,
        files: list | None = None,
        chips: list | None = None,
    ) -> asyncio.Task:
        text = (text or "").strip()
        if not text:
            raise ValueError("Nothing to send: the message is empty.")
        if self.running:
            raise RuntimeError(
                "A run is in progress on this chat: wait for it (`await chat.task`) or stop "
                "it (`chat.stop()`)."
            )
        op = operation or self.operation
        _check_operation(self.branch, op)
        if files and op not in _WITH_FILES:
            raise ValueError(
                f"`{op}` takes no files: send them with {', '.join(_WITH_FILES)}, or remove "
                "them (each attachment has a remove button)."
            )
        loop = asyncio.get_running_loop()  # RuntimeError outside a running loop
        self._set_running(True)
        run = _Run(text, op, list(files or ()), list(chips or ()))
        run.before = set(self.branch.messages.keys())
        task = loop.create_task(self._run(run))
        task.add_done_callback(lambda t: self._done(t, run))
        self._task = task
        return task

    def _submit(self) -> None:
        """Enter or Send: send the box's text, unless a run is in progress."""
        text = self.input.value.strip()
        if not text or self.running:
            return
        try:
            self._start(text, files=self.input.files, chips=list(self.input.attached))
        except (RuntimeError, ValueError) as exc:  # no running event loop; files refused
            self.view.status = f"error · {exc}"
            return
        self.input.value = ""
        self.input.take_files()

    def _on_input_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        event = content.get("event") if isinstance(content, dict) else None
        if event == "submit":
            typed = content.get("value")
            if isinstance(typed, str):  # the whole text, even if its last keys' sync lags
                self.input.value = typed
            call_safely(self._submit)
        elif event == "stop":  # Esc
            call_safely(self.stop)

    def _clicked(self, action: Any) -> None:
        """Send or Stop was clicked: do it, and give the focus back to the box (the clicked
        button is disabled by what it did, which would drop the focus to the page)."""
        action()
        self.input.focus()

    async def _run(self, run: _Run) -> Any:
        view = self.view
        ticker = asyncio.ensure_future(self._tick(run))
        self.note.value, self.note.layout.display = "", "none"
        view.status = f"running {run.op}…"
        try:
            from ..models.endpoints import streaming_to
            from ..models.endpoints.base import thinking_to

            with streaming_to(view.stream), thinking_to(_thinking_sink(view)):
                result = await _call(self.branch, run.op, run.text, run.files)
        except asyncio.CancelledError:
            self._finish(run, "stopped")
            raise
        except Exception as exc:
            self._finish(run, "error", error=exc)
            raise
        finally:
            ticker.cancel()
        self._finish(run, "done")
        if run.op in _UNRECORDED and result is not None:
            self._show_note(run.op, result)
        return result

    async def _tick(self, run: _Run) -> None:
        while True:
            await asyncio.sleep(self.tick)
            tokens = _estimate(self.view.streamed_text)
            shown = f" · ~{tokens} tokens" if tokens else ""
            elapsed = time.monotonic() - run.started
            self.view.status = f"running {run.op} · {elapsed:.1f} s{shown}"

    def _finish(self, run: _Run, outcome: str, error: BaseException | None = None) -> None:
        """Record the turn's messages, end the stream, say what happened, free the input."""
        run.finished = True
        view = self.view
        streamed = view.streamed_text
        new = [m for m in self.branch.messages if m.id not in run.before]
        if any(m.kind == "instruction" for m in new):
            turn = _Turn(str(new[0].id), run.text, tuple(run.files), tuple(run.chips))
            for message in new:
                self._turn_of[str(message.id)] = turn
        elif outcome != "done" and not self.input.value:
            self.input.value = run.text  # nothing of it on the branch: keep it for another try
            if run.files:
                self.input.put_back(run.files, run.chips)
        view.end_stream()
        if outcome == "error":
            parts = [outcome, run.op, describe_error(error)]
        else:
            parts = [outcome, run.op, f"{time.monotonic() - run.started:.1f} s"]
            tokens = _recorded_tokens(new)
            if tokens:
                parts.append(f"{tokens} tokens")
            elif streamed:
                parts.append(f"~{_estimate(streamed)} tokens")
        from ..operations.early_end import KEPT_NOTE, is_incomplete

        if any(is_incomplete(m) for m in new):
            parts.append(KEPT_NOTE)
        view.status = " · ".join(parts)
        view.announce(_announcement(view.status, new))
        self._set_running(False)

    def _done(self, task: asyncio.Task, run: _Run) -> None:
        """A run's task ended: mark its error as seen (the status shows it, ``send`` raises
        it), and clean up after a run cancelled before it could start."""
        if not task.cancelled():
            task.exception()
        if not run.finished:
            self._finish(run, "stopped")

    def _show_note(self, op: str, result: Any) -> None:
        from html import escape

        from ..models.clean import clean_text
        from ..rendering import markdown_html

        label = f"<div><em>{escape(op)} (not recorded on the branch)</em></div>"
        self.note.value = (
            f'<div class="lnb-view">{label}{markdown_html(clean_text(str(result)))}</div>'
        )
        self.note.layout.display = ""

    # -- controls --------------------------------------------------------------------------------
    def stop(self) -> bool:
        """Cancel the running answer (the kernel stays free). Whether one was running."""
        if not self.running:
            return False
        self._task.cancel()  # type: ignore[union-attr]
        return True

    def undo(self) -> str | None:
        """Remove the last turn and put its text back in the input box (and its files back
        among the attachments). Returns the text (``None`` when there is no turn)."""
        if self._refuse("undo"):
            return None
        turn = self._remove_last_turn()
        if turn is None:
            self.view.status = "nothing to undo"
            return None
        self.input.value = turn.text
        if turn.files:
            self.input.put_back(list(turn.files), list(turn.chips))
        self.view.status = "undone"
        return turn.text

    async def rerun(self) -> Any:
        """Remove the last turn and send its text and files again (with the selected
        operation); return the result as `send` does (``None`` when there is no turn)."""
        task = self._rerun()
        return None if task is None else await _outcome(task)

    def _rerun(self) -> asyncio.Task | None:
        if self._refuse("re-run"):
            return None
        asyncio.get_running_loop()  # fail before removing anything
        turn = self._last_turn()
        if turn is None:
            self.view.status = "nothing to re-run"
            return None
        if turn.files and self.operation not in _WITH_FILES:
            raise ValueError(
                f"`{self.operation}` takes no files and the last turn sent "
                f"{len(turn.files)}: pick one of {', '.join(_WITH_FILES)} to re-run it."
            )
        self._remove_last_turn()
        return self._start(turn.text, files=list(turn.files), chips=list(turn.chips))

    def _clicked_rerun(self) -> None:
        try:
            self._rerun()
        except (RuntimeError, ValueError) as exc:  # no running event loop; files refused
            self.view.status = f"error · {exc}"

    def clear(self) -> None:
        """Remove every message but the system message."""
        if self._refuse("clear"):
            return
        self.branch.msgs.clear_messages()
        self._turn_of.clear()
        self.note.value, self.note.layout.display = "", "none"
        self.view.refresh()
        self.view.status = "cleared"

    def _refuse(self, what: str) -> bool:
        if self.running:
            self.view.status = f"running: stop it before {what}"
            return True
        return False

    def _last_turn(self) -> _Turn | None:
        """The last turn: the one this chat sent, or the last instruction and what follows."""
        messages = self.branch.messages
        last = next((m for m in reversed(messages[:]) if m.kind == "instruction"), None)
        if last is None:
            return None
        known = self._turn_of.get(str(last.id))
        if known is not None and known.first in messages:
            return known
        return _Turn(str(last.id), _instruction_text(last))

    def _remove_last_turn(self) -> _Turn | None:
        """Remove the last turn (`_last_turn`): its first message and everything after it."""
        turn = self._last_turn()
        if turn is None:
            return None
        order = [str(m.id) for m in self.branch.messages]
        for message_id in reversed(order[order.index(turn.first) :]):
            self.branch.msgs.remove_message(message_id)
            self._turn_of.pop(message_id, None)
        self.view.refresh()
        return turn

    def _set_running(self, running: bool) -> None:
        for control in (
            self.input,
            self.send_button,
            self.rerun_button,
            self.undo_button,
            self.clear_button,
            self.picker,
        ):
            control.disabled = running
        self.stop_button.disabled = not running

    # -- display ---------------------------------------------------------------------------------
    def static_html(self) -> str:
        return self.view.static_html()

    def static_text(self) -> str:
        return self.view.static_text()

    def focus(self) -> None:
        """Put the cursor in the input box (``Widget.send`` is this class's `send`)."""
        self.input.focus()

    def blur(self) -> None:
        self.input.blur()

    def close(self) -> None:
        """Stop a running answer, then close the view and the controls."""
        if getattr(self, "_task", None) is not None:
            self.stop()
        for child in getattr(self, "children", ()):
            child.close()
        super().close()

    def __repr__(self) -> str:
        state = "running" if self.running else "idle"
        return f"Chat({self.branch.name!r}, operation={self.operation!r}, {state})"


# -- helpers ---------------------------------------------------------------------------------------
def _button(description: str, tooltip: str) -> Any:
    return widgets.Button(
        description=description,
        tooltip=tooltip,
        layout=widgets.Layout(width="auto"),
    )


def _check_operation(branch: Any, name: str) -> None:
    if name in _BUILTIN:
        return
    from ..operations.node import resolve_operation

    if resolve_operation(branch, name) is None:
        raise ValueError(
            f"`{name}` is not an operation of this branch: use one of {', '.join(_BUILTIN)} "
            "or register it with `session.register_operation(name, func)`."
        )


async def _call(branch: Any, op: str, text: str, files: list | None = None) -> Any:
    """Run ``op`` on ``branch`` with ``text`` as the instruction (and ``files``, for the
    operations that take them)."""
    from ..operations.verbs import VERBS, call_verb

    verb = VERBS.get(op)
    extra: dict[str, Any] = {"files": files} if files and verb and verb.takes_media else {}
    if op == "operate":
        extra["actions"] = bool(branch.tools)
    return await call_verb(branch, op, text, **extra)


async def _outcome(task: asyncio.Task) -> Any:
    """The result of a run's task (``None`` when it was stopped, its error raised). Being
    cancelled while waiting (an interrupted cell) stops the run too."""
    try:
        await asyncio.wait([task])
    except asyncio.CancelledError:
        task.cancel()
        raise
    return None if task.cancelled() else task.result()


def describe_error(error: BaseException | None) -> str:
    """One line for the status: the provider's own error when there is one, its type and
    message, with every known secret masked."""
    from ..errors import ProviderError
    from ..models.secrets import redact

    exc = error
    while exc is not None and len(getattr(exc, "exceptions", ())) == 1:  # one-error groups
        exc = exc.exceptions[0]  # type: ignore[union-attr]
    chain, seen = exc, set()
    while chain is not None and id(chain) not in seen:
        seen.add(id(chain))
        if isinstance(chain, ProviderError):
            exc = chain
            break
        chain = chain.__cause__ or chain.__context__
    if exc is None:
        return "unknown error"
    message = " ".join(str(exc).split())
    text = redact(f"{type(exc).__name__}: {message}" if message else type(exc).__name__)
    return text if len(text) <= _ERROR_LIMIT else text[: _ERROR_LIMIT - 1] + "…"


def _instruction_text(message: Any) -> str:
    if message.plain_content:
        return message.plain_content
    if isinstance(message.instruction, str):
        return message.instruction
    return message.rendered or ""


def _estimate(text: str) -> int:
    from ..tokens import estimate_tokens

    return estimate_tokens(text) if text else 0


def _recorded_tokens(messages: list[Any]) -> int:
    from ._entries import message_meta

    return sum(message_meta(m).get("tokens") or 0 for m in messages)


def _thinking_sink(view: BranchView) -> Any:
    return lambda chunk: view.stream_thinking(chunk.content or "")


def _announcement(status: str, new: list[Any]) -> str:
    """What a screen reader hears when a turn ends: the status, then the start of the answer."""
    answer = next((m for m in reversed(new) if m.kind == "assistant_response"), None)
    text = " ".join(((answer.rendered or "") if answer is not None else "").split())
    if len(text) > _ANNOUNCED:
        text = text[: _ANNOUNCED - 1] + "…"
    return f"{status}. {text}" if text else status
