"""BatchProgress and Comparison: a batch run's counts, failures, Stop and Retry from the front
end, batched updates, static renderings; models' answers side by side, sanitized."""

from __future__ import annotations

import time

import anyio

from lion_nb import Session, iModel
from lion_nb.widgets import BatchProgress, Comparison


def session_with(play) -> Session:
    session = Session()
    session.default_branch.chat_model = iModel(provider="offline", model="function", function=play)
    return session


def flaky(fail: set[str]):
    def play(messages, **_kw):
        prompt = messages[-1]["content"]
        if prompt in fail:
            raise RuntimeError(f"no {prompt}")
        return f"ok {prompt}"

    return play


def test_counts_failures_and_retry_from_the_front_end():
    failing = {"b"}
    session = session_with(flaky(failing))
    run = session.map(["a", "b", "c"], "{item}")
    view = BatchProgress(run)
    assert (view.total, view.done, view.stoppable) == (3, 0, True)
    anyio.run(run.wait)
    view._flush()  # what the trailing throttle flush does
    assert (view.done, view.failed, view.in_flight, view.state) == (2, 1, 0, "finished")
    assert view.tokens > 0 and view.cost == "$0.0000"  # the offline models cost nothing
    assert view.failures == [{"index": 1, "label": "b", "error": view.failures[0]["error"]}]
    assert "no b" in view.failures[0]["error"]
    assert view.retryable and not view.stoppable and view.eta == ""

    failing.clear()

    async def retry_from_the_front_end():
        view._on_front_end(view, {"type": "retry"}, [])
        await run

    anyio.run(retry_from_the_front_end)
    view._flush()
    assert (view.done, view.failed, view.retryable) == (3, 0, False)
    assert run.results == ["ok a", "ok b", "ok c"]


def test_stop_from_the_front_end():
    started: list[str] = []

    async def slow(messages, **_kw):
        started.append(messages[-1]["content"])
        await anyio.sleep(30)
        return "late"

    session = session_with(slow)

    async def main():
        run = session.map([str(i) for i in range(6)], "{item}", concurrency=2)
        view = BatchProgress(run)
        while len(started) < 2:
            await anyio.sleep(0.01)
        view._on_front_end(view, {"type": "stop"}, [])
        with anyio.fail_after(5):
            await run
        view._flush()
        return view

    view = anyio.run(main)
    assert (view.state, view.stopped, view.done, view.stoppable) == ("stopped", 2, 0, False)
    assert view.retryable  # the stopped and never-started items can run again
    assert len(started) == 2


def test_updates_are_batched():
    session = session_with(flaky(set()))

    async def main():
        run = session.map([str(i) for i in range(300)], "{item}", concurrency=10)
        changes = []
        run.on_progress(lambda _r: changes.append(1))
        view = BatchProgress(run, max_rate=20)
        start = time.monotonic()
        await run
        elapsed = time.monotonic() - start
        return view._throttle.flushes, len(changes), elapsed

    flushes, changes, elapsed = anyio.run(main)
    assert changes >= 600  # every item starts and ends
    assert flushes <= 2 + elapsed * 20 + 1  # at most 20 a second, whatever the changes


def test_static_renderings():
    session = session_with(flaky({"y"}))
    run = session.map(["x", "y"], "{item}", name="letters")
    anyio.run(run.wait)
    view = BatchProgress(run)
    text = view.static_text()
    assert text.startswith("BatchProgress('letters'): 1/2 done · 1 failed")
    assert "✗ [1] y: ExecutionError" in text
    assert "<strong>letters</strong>" in view.static_html() and "no y" in view.static_html()
    bundle = view._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert data["text/plain"] == text
    live = BatchProgress(run, live=True)  # the view a running cell shows
    assert live.static_text() == "" and live.static_html() == ""
    assert len(run._observers) == 2
    view.close()  # stops following the run
    assert len(run._observers) == 1


def test_comparison_side_by_side_sanitized():
    session = Session()
    good = iModel(provider="offline", model="scripted", responses=["**bold** <script>x()</script>"])
    bad = iModel(provider="offline", model="function", function=flaky({"Q"}))
    run = session.compare("Q", [good, bad])
    anyio.run(run.wait)
    table = Comparison(run)
    html = table._repr_html_()
    assert "<th" in html and "offline/scripted" in html and "offline/function" in html
    assert "<strong>bold</strong>" in html and "<script>" not in html
    assert "ExecutionError" in html and " s</div>" in html  # latency shown
    text = repr(table)
    assert "── offline/scripted (" in text and "tokens" in text
    columns = table.columns()
    assert [c["status"] for c in columns] == ["done", "failed"]
    assert columns[0]["latency"] is not None and columns[1]["error"]
