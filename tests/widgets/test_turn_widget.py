"""TurnWidget and the notebook's widget view: a live turn with tool calls, tokens and Stop."""

from __future__ import annotations

import asyncio

from lion_nb import ActionRequest, ActionResponse, AssistantResponse
from lion_nb.widgets import TurnWidget
from tests.waiting import until


def _tool_call():
    request = ActionRequest(function="weather", arguments={"city": "Oslo"})
    response = ActionResponse(
        function="weather",
        arguments={"city": "Oslo"},
        output={"temp": 3},
        action_request_id=str(request.id),
    )
    return request, response


def test_tool_calls_show_as_they_start_and_end():
    turn = TurnWidget("main · operate · offline/auto")
    turn.start()
    request, response = _tool_call()
    turn.message(request)
    (step,) = turn.steps
    assert step["function"] == "weather" and step["pending"] is True
    turn.message(response)
    (step,) = turn.steps
    assert step["pending"] is False and '"temp": 3' in step["result"]


def test_streamed_text_is_batched_then_cleared_when_the_answer_is_shown():
    turn = TurnWidget("t")
    turn.start()

    async def stream():
        before = turn._throttle.flushes
        for i in range(1000):
            turn.text(f"w{i} ")
        await until(lambda: "w999" in turn.text_html, what="the trailing flush")
        return turn._throttle.flushes - before

    assert asyncio.run(stream()) <= 3
    assert "w999" in turn.text_html and turn.running
    turn.message(AssistantResponse(response="w0 …", metadata={"usage": {"total_tokens": 42}}))
    turn.finish("answer")
    assert turn.status == "done" and not turn.running and not turn.stoppable
    assert turn.tokens == 42 and turn.elapsed >= 0
    assert turn.text_html == ""  # the answer is its own output


def test_a_model_that_does_not_stream_still_shows_its_answer_while_running():
    turn = TurnWidget("t")
    turn.start()
    turn.message(AssistantResponse(response="**whole** answer"))
    assert "<strong>whole</strong>" in turn.text_html


def test_stop_calls_the_runner_once_and_only_while_running():
    calls = []
    turn = TurnWidget("t", stop=lambda: calls.append(1) or True)
    assert turn.stop() is False  # not started
    turn.start()
    turn._on_front_end(turn, {"type": "stop"}, [])  # the Stop button
    assert calls == [1] and turn.status == "stopping" and turn.stoppable is False
    turn.fail(asyncio.CancelledError(), interrupted=True)
    assert turn.status == "stopped" and turn.stop() is False and calls == [1]


def test_a_failure_is_shown_with_secrets_redacted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-turnwidget-0123456789abcdef")
    turn = TurnWidget("t")
    turn.start()
    turn.fail(RuntimeError("bad key sk-test-turnwidget-0123456789abcdef"))
    assert turn.status.startswith("failed: RuntimeError")
    assert "sk-test-turnwidget" not in turn.status


def test_the_static_rendering_is_empty_since_the_answer_is_its_own_output():
    data, _ = TurnWidget("t")._repr_mimebundle_()
    assert data["text/plain"] == "" and "text/html" not in data
    assert "application/vnd.jupyter.widget-view+json" in data
