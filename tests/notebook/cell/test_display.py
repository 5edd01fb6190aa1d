"""The display seam: batched updates, a pluggable view, and views that cannot break a turn."""

from __future__ import annotations

import anyio
from IPython.utils.capture import capture_output

from lion_nb import current_session
from lion_nb.notebook.cell.handle_view import (
    HandleView,
    TurnInfo,
    TurnView,
    make_view,
    set_view_factory,
)
from tests.notebook.nbshell import run
from tests.waiting import until


def test_streamed_fragments_are_batched_to_the_rate_limit(ip):
    info = TurnInfo(branch="main", operation="communicate", model="offline/auto", max_rate=20)

    async def stream(view, out):
        for i in range(400):  # 400 fragments over ~0.4 s
            view.text(f"w{i} ")
            await anyio.sleep(0.001)
        await until(  # the trailing timer flushes the tail, with no further fragment
            lambda: any("w399" in o.data["text/plain"] for o in out.outputs if o.update),
            what="the tail's update",
        )
        view.finish("done")

    with capture_output() as out:
        view = HandleView(info)
        view.start()
        anyio.run(stream, view, out)
    assert 2 <= view.updates <= 20, view.updates  # ~20/s, not 400
    updates = [o for o in out.outputs if o.update]
    assert "w399" in updates[-2].data["text/plain"]  # the tail was flushed before finishing
    assert updates[-1].data["text/plain"] == ""  # the live view ends empty ...
    assert out.outputs[0].data == {"text/plain": ""}  # ... as it started
    final = [o for o in out.outputs if not o.update][-1]
    assert final.data["text/plain"] == "done"  # the answer is its own output


class RecordingView(TurnView):
    events: list = []

    def start(self):
        RecordingView.events.append(("start", self.info.branch, self.info.operation))

    def text(self, fragment):
        RecordingView.events.append(("text", fragment))

    def message(self, message):
        RecordingView.events.append(("message", message.kind))

    def finish(self, result):
        RecordingView.events.append(("finish", result))


def test_a_view_factory_replaces_the_default_view(ip):
    RecordingView.events = []
    set_view_factory(RecordingView)
    try:
        run(
            ip,
            "from lion_nb import iModel\nm = iModel(provider='offline', model='scripted', responses=['a b c'])",
        )
        ran = run(ip, "%%lion -m m\nhi")
    finally:
        set_view_factory(None)
    events = RecordingView.events
    assert events[0] == ("start", "main", "communicate")
    assert ("message", "instruction") in events and ("message", "assistant_response") in events
    assert "".join(e[1] for e in events if e[0] == "text") == "a b c"
    assert events[-1] == ("finish", ran.value)


class BrokenView(TurnView):
    def start(self):
        raise RuntimeError("display broke")

    def text(self, fragment):
        raise RuntimeError("display broke")

    def finish(self, result):
        raise RuntimeError("display broke")


def test_a_failing_view_never_breaks_the_turn(ip):
    set_view_factory(BrokenView)
    try:
        ran = run(ip, "%%lion\nstill answered")
    finally:
        set_view_factory(None)
    assert ran.error is None, ran
    assert len(current_session().default_branch.messages) == 2


def test_a_failing_factory_falls_back_to_the_default_view():
    def factory(info):
        raise RuntimeError("no widgets here")

    set_view_factory(factory)
    try:
        view = make_view(TurnInfo(branch="b", operation="chat", model="m"))
    finally:
        set_view_factory(None)
    assert isinstance(view.inner, HandleView)
    assert (
        type(make_view(TurnInfo(branch="b", operation="chat", model="m"), quiet=True)).__name__
        == "NullView"
    )
