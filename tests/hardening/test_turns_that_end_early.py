"""Turns that end early (ADR-0106), in the core: a stream cut short by the real loopback
server, a cancelled turn on a slow streaming model, and an answer cut off by ``max_tokens``.

The rule: once answer text has arrived, the instruction and that text are recorded (with
``MessageAdded``), the answer marked ``metadata["incomplete"]`` with a reason; before any
text, nothing is recorded. A cut stream raises `StreamInterruptedError`; a cancellation
propagates.
"""

from __future__ import annotations

import anyio
import pytest
from pydantic import BaseModel

from lion_nb import Session, iModel
from lion_nb.errors import ExecutionError, ParseError, StreamInterruptedError
from lion_nb.models.endpoints.base import streaming_to
from lion_nb.protocols.messages import AssistantResponse, Instruction
from lion_nb.protocols.signals import MessageAdded, RunFailed, Signal
from tests.fakes.http_server import openai_deltas

KEY = "sk-test-early-0123456789"
PARTS = ["The capital ", "of France ", "is"]


def watched(model: iModel):
    session = Session()
    branch = session.new_branch(chat_model=model)
    signals: list[Signal] = []
    session.observe(Signal, signals.append)
    return session, branch, signals


def http_model(fake, **kw) -> iModel:
    return iModel(provider="openai", model="m", base_url=fake.openai_url, api_key=KEY, **kw)


def streamed_turn(session, branch, **kw) -> list[str]:
    seen: list[str] = []

    async def main():
        try:
            with streaming_to(seen.append):
                await branch.communicate("Capital of France?", **kw)
        finally:
            await session.aclose()

    with pytest.raises(StreamInterruptedError) as info:
        anyio.run(main)
    seen.append(str(info.value))
    return seen


def assert_kept(branch, signals, text: str, reason: str) -> None:
    assert [type(m) for m in branch.messages] == [Instruction, AssistantResponse]
    answer = branch.messages[-1]
    assert answer.response == text
    assert answer.metadata["incomplete"] is True
    assert reason in answer.metadata["incomplete_reason"]
    added = [s.message.id for s in signals if isinstance(s, MessageAdded)]
    assert added == [m.id for m in branch.messages]
    assert [type(s) for s in signals if isinstance(s, RunFailed)] == [RunFailed]


# -- item 1: a stream cut short is not a finished answer -----------------------------------------
def test_done_without_a_finish_reason_keeps_the_text_marked_and_raises(http_fake):
    http_fake.push_sse(openai_deltas(PARTS))  # `[DONE]` after some text, no finish_reason
    session, branch, signals = watched(http_model(http_fake))
    *fragments, error = streamed_turn(session, branch)
    assert "".join(fragments) == "".join(PARTS)
    assert "without a finish reason" in error
    assert_kept(branch, signals, "".join(PARTS), "without a finish reason")


def test_a_dropped_connection_keeps_the_text_marked_and_raises(http_fake):
    http_fake.push_sse(openai_deltas(PARTS), cut_after=2)  # the socket closes mid-answer
    session, branch, signals = watched(http_model(http_fake))
    *_, error = streamed_turn(session, branch)
    assert "broke off" in error
    assert_kept(branch, signals, "The capital of France ", "broke off")


def test_a_stream_with_a_finish_reason_is_a_finished_answer(http_fake):
    http_fake.push_sse(openai_deltas(PARTS, finish_reason="stop"))
    _session, branch, _ = watched(http_model(http_fake))

    async def main():
        with streaming_to(lambda _t: None):
            return await branch.communicate("Capital of France?")

    assert anyio.run(main) == "".join(PARTS)
    assert "incomplete" not in branch.messages[-1].metadata


def test_a_stream_cut_before_any_text_records_nothing(http_fake):
    http_fake.push_sse(openai_deltas(PARTS), cut_after=0)
    _session, branch, signals = watched(http_model(http_fake))

    async def main():
        with streaming_to(lambda _t: None):
            await branch.communicate("Capital of France?")

    with pytest.raises(ExecutionError) as info:
        anyio.run(main)
    assert isinstance(info.value.__cause__, StreamInterruptedError)
    assert len(branch.messages) == 0
    assert not [s for s in signals if isinstance(s, MessageAdded)]


# -- a cancelled turn keeps what arrived ---------------------------------------------------------
def slow_model() -> iModel:
    words = " ".join(f"word{i}" for i in range(200))
    return iModel(provider="offline", model="scripted", responses=[words], delay=0.02)


def cancelled_turn(branch, verb: str, after: int) -> list[str]:
    """Run ``verb`` streaming; cancel it once ``after`` fragments have arrived."""
    seen: list[str] = []

    async def main():
        arrived = anyio.Event()

        def sink(fragment: str) -> None:
            seen.append(fragment)
            if len(seen) >= after:
                arrived.set()

        async def turn():
            with streaming_to(sink):
                if verb == "operate":
                    await branch.operate(instruction="Write it all.")
                else:
                    await branch.communicate("Write it all.")

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn)
            if after:
                await arrived.wait()
            else:
                await anyio.sleep(0)
            tg.cancel_scope.cancel()

    anyio.run(main)
    return seen


@pytest.mark.parametrize("verb", ["communicate", "operate"])
def test_a_cancelled_turn_keeps_the_instruction_and_the_text_that_arrived(verb):
    _session, branch, signals = watched(slow_model())
    seen = cancelled_turn(branch, verb, after=5)
    text = "".join(seen)
    assert text.startswith("word0 word1") and "word199" not in text  # really cut short
    assert_kept(branch, signals, text, "interrupted")


def test_a_turn_cancelled_before_any_text_records_nothing():
    _session, branch, signals = watched(slow_model())
    assert cancelled_turn(branch, "communicate", after=0) == []
    assert len(branch.messages) == 0
    assert not [s for s in signals if isinstance(s, MessageAdded)]


def test_a_cli_run_that_fails_marks_the_text_it_keeps():
    model = iModel(
        provider="offline_cli",
        model="scripted",
        turns=[[{"type": "text", "content": "half of it"}, {"type": "error", "content": "boom"}]],
    )
    _session, branch, _ = watched(model)

    async def main():
        async for _m in branch.run("go"):
            pass

    with pytest.raises(Exception, match="boom"):
        anyio.run(main)
    answer = branch.messages[-1]
    assert answer.response == "half of it"
    assert answer.metadata["incomplete"] is True and "boom" in answer.metadata["incomplete_reason"]


# -- item 4: an answer cut off by max_tokens is named --------------------------------------------
class Place(BaseModel):
    city: str
    country: str


def completion(content: str | None, finish: str, tool_calls: list | None = None) -> dict:
    message: dict = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {"id": "c", "choices": [{"index": 0, "message": message, "finish_reason": finish}]}


def test_a_structured_answer_cut_by_max_tokens_says_so_and_the_reparse_keeps_the_limit(
    http_fake,
):
    http_fake.push_json(completion('{"city": "Paris", "coun', "length"))
    for _ in range(3):  # the parse model's attempts, each cut as well
        http_fake.push_json(completion('{"city": "Paris"}', "stop"))
    _session, branch, _ = watched(http_model(http_fake))
    with pytest.raises(ParseError) as info:
        anyio.run(lambda: branch.communicate("Where?", response_format=Place, max_tokens=12))
    message = str(info.value)
    assert "cut off by `max_tokens=12`" in message and "larger `max_tokens=`" in message
    reparse = http_fake.requests[1].body
    assert reparse["max_tokens"] == 12  # the repair call is bounded like the call it repairs


def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"18 °C in {city}"


def test_tool_arguments_cut_by_max_tokens_say_so(http_fake):
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Pa'},
    }
    http_fake.push_json(completion(None, "length", [call]))
    _session, branch, _ = watched(http_model(http_fake, max_tokens=8))
    result = anyio.run(
        lambda: branch.operate(instruction="Weather?", tools=[get_weather], actions=True)
    )
    error = result["action_responses"][0]["output"]["error"]
    assert "not a complete JSON object" in error and "_raw_arguments" not in error
    assert "cut off by `max_tokens=8`" in error and "larger `max_tokens=`" in error
