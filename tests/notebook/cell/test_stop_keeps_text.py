"""Every way a streamed ``%%lion`` turn is stopped keeps what was received (ADR-0106), in a
real in-process IPython shell: the foreground Stop (what the kernel's interrupt does: it
cancels the cell's task), the live widget view's Stop button, and ``%lion cancel --all`` for a
background run. The branch holds the instruction and the text shown so far, marked
incomplete; the view says so.

The model streams 300 words, 20 ms apart; each test stops it once some words have arrived,
so a turn that was not stopped would finish with all 300 (and fail the length check).
"""

from __future__ import annotations

import asyncio

import pytest

from lion_nb import current_session
from lion_nb.notebook.cell.handle_view import TurnView, set_view_factory
from lion_nb.notebook.cell.widget_view import WidgetView
from tests.notebook.nbshell import run

WORDS = 300
SETUP = f"""
import asyncio
from lion_nb import iModel

long_answer = " ".join(f"word{{i}}" for i in range({WORDS}))
slow = iModel(provider="offline", model="scripted", delay=0.02, responses=[long_answer] * 4)
"""


class PressView(TurnView):
    """Presses the turn's Stop once ``after`` fragments were shown (``None``: never)."""

    after: int | None = 5
    views: list[PressView] = []

    def __init__(self, info):
        super().__init__(info)
        self.shown: list[str] = []
        self.events: list[tuple] = []
        PressView.views.append(self)

    def start(self):
        self.events.append(("start",))

    def text(self, fragment):
        self.shown.append(fragment)
        if PressView.after is not None and len(self.shown) == PressView.after:
            self.press()

    def press(self):
        self.info.stop()

    def message(self, message):
        self.events.append(("message", message.kind))

    def finish(self, result):
        self.events.append(("finish",))

    def fail(self, error, *, interrupted=False):
        self.events.append(("fail", interrupted))


class PressWidgetView(WidgetView):
    """The live widget view, its Stop button pressed once five fragments were shown."""

    views: list[PressWidgetView] = []

    def __init__(self, info):
        super().__init__(info)
        self.shown: list[str] = []
        PressWidgetView.views.append(self)

    def text(self, fragment):
        super().text(fragment)
        self.shown.append(fragment)
        if len(self.shown) == 5:
            self.widget.stop()  # what the Stop button's click does


@pytest.fixture
def nb(ip):
    assert run(ip, SETUP).error is None
    PressView.views, PressView.after = [], 5
    PressWidgetView.views = []
    set_view_factory(PressView)
    yield ip
    set_view_factory(None)


def kept(name: str, shown: list[str]):
    """The branch's messages, checked to be the instruction and the shown text, marked."""
    messages = list(current_session().get_branch(name).messages)
    assert [m.kind for m in messages] == ["instruction", "assistant_response"]
    answer = messages[-1]
    text = "".join(shown)
    assert answer.response.startswith(text) and text.startswith("word0 word1")
    assert f"word{WORDS - 1}" not in answer.response  # really cut short
    assert answer.metadata["incomplete"] is True
    assert answer.metadata["incomplete_reason"] == "interrupted"
    return messages


def test_the_foreground_stop_keeps_the_instruction_and_the_shown_text(nb):
    ran = run(nb, "%%lion -b fg -m slow\nWrite it all.")
    assert ran.error is None and ran.value is None, ran  # a Stop ends the cell quietly
    (view,) = PressView.views
    messages = kept("fg", view.shown)
    assert messages[0].instruction == "Write it all."
    # the view saw both messages (MessageAdded) before it was told the turn was interrupted
    assert view.events[-3:] == [
        ("message", "instruction"),
        ("message", "assistant_response"),
        ("fail", True),
    ]
    assert run(nb, "%%lion -q -b fg -m slow\nAgain.").error is None  # the branch goes on


def test_a_stopped_turn_is_in_the_ledger_and_in_lion_cost_marked_estimated(nb):
    ran = run(nb, "%%lion -b cut -m slow\nWrite it all.")
    assert ran.error is None and ran.value is None, ran  # a Stop ends the cell quietly
    branch = current_session().get_branch("cut")
    assert branch.cost().calls == 1 and branch.cost().output_tokens >= 5
    assert branch.messages[-1].metadata["usage"]["estimated"] is True
    table = run(nb, "%lion cost").value
    (row,) = [r for r in table.rows if r["branch"] == "cut"]
    assert row["calls"] == "1 (1 estimated)"


def test_the_live_widget_views_stop_keeps_the_text_and_says_so(nb):
    set_view_factory(PressWidgetView)
    ran = run(nb, "%%lion -b live -m slow\nWrite it all.")
    assert ran.error is None, ran
    (view,) = PressWidgetView.views
    kept("live", view.shown)
    assert view.widget.status == "stopped · incomplete answer kept on the branch"


def test_cancel_all_keeps_what_a_background_run_received(nb):
    PressView.after = None  # this turn is stopped by `%lion cancel --all`
    ran = run(nb, "%%lion --bg -b bg -m slow\nWrite it all.")
    handle = ran.value
    (view,) = PressView.views
    nb.user_ns["bg_view"] = view
    waited = run(nb, "while len(bg_view.shown) < 5:\n    await asyncio.sleep(0.01)")
    assert waited.error is None
    assert run(nb, "%lion cancel --all").error is None
    done = run(nb, f"await Out[{nb.execution_count - 3}]")
    assert isinstance(done.error, asyncio.CancelledError)
    assert handle.status == "cancelled"
    kept("bg", view.shown)
    assert view.events[-1] == ("fail", True)


def test_the_text_view_says_an_incomplete_answer_was_kept(ip):
    from IPython.utils.capture import capture_output

    from lion_nb.notebook.cell.handle_view import HandleView, TurnInfo
    from lion_nb.protocols.messages import AssistantResponse

    info = TurnInfo(branch="main", operation="communicate", model="m", live="text")
    partial = AssistantResponse(
        response="word0 word1", metadata={"incomplete": True, "incomplete_reason": "interrupted"}
    )
    with capture_output() as out:
        view = HandleView(info)
        view.start()
        view.text("word0 word1")
        view.message(partial)
        view.fail(asyncio.CancelledError(), interrupted=True)
    final = out.outputs[-1].data if out.outputs else {}
    assert "interrupted · incomplete answer kept on the branch" in str(final)
