"""A 200 answer of the wrong shape is a typed provider error, with status and request id.

Against the real loopback server: ``{"choices": "abc"}``, usage counts that are not numbers,
a stream chunk whose content is not text, an Anthropic error body of the wrong type. Each
used to surface as a bare ``AttributeError`` / ``TypeError`` inside `ExecutionError`. And a
stream that ends with ``[DONE]`` before any answer or ``finish_reason`` (what llama.cpp sends
a request it preempted) used to be recorded as a completed, empty answer.
"""

from __future__ import annotations

import anyio
import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import ExecutionError, ProviderError, StreamInterruptedError
from lion_nb.models.endpoints.base import ChatRequest

KEY = "sk-test-shape-0123456789"
RID = {"x-request-id": "req_shape_1"}


def model(fake, provider: str) -> iModel:
    url = fake.openai_url if provider == "openai" else fake.anthropic_url
    return iModel(provider=provider, model="m", base_url=url, api_key=KEY, max_retries=0)


def invoke(m: iModel, stream: bool = False):
    async def main():
        try:
            return await m.invoke(
                ChatRequest(messages=[{"role": "user", "content": "hi"}], stream=stream)
            )
        finally:
            await m.aclose()

    return anyio.run(main)


def choice(message) -> dict:
    return {"id": "c", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


OPENAI_BODIES = {
    "choices is text": {"choices": "abc"},
    "a choice is text": {"choices": ["abc"]},
    "message is text": {"choices": [{"message": "x"}]},
    "usage count is text": {**choice({"content": "hi"}), "usage": {"prompt_tokens": "many"}},
    "usage is a list": {**choice({"content": "hi"}), "usage": [1, 2]},
    "tool_calls is text": choice({"content": None, "tool_calls": "call it"}),
    "content is an object": choice({"content": {"text": "hi"}}),
}
ANTHROPIC_BODIES = {
    "a content block is text": {"content": ["hello"], "stop_reason": "end_turn"},
    "text is a number": {"content": [{"type": "text", "text": 5}]},
    "usage count is text": {
        "content": [{"type": "text", "text": "x"}],
        "usage": {"input_tokens": "x"},
    },
}


@pytest.mark.parametrize(
    ("provider", "body"),
    [("openai", b) for b in OPENAI_BODIES.values()]
    + [("anthropic", b) for b in ANTHROPIC_BODIES.values()],
    ids=[f"openai: {k}" for k in OPENAI_BODIES] + [f"anthropic: {k}" for k in ANTHROPIC_BODIES],
)
def test_a_200_of_the_wrong_shape_is_a_provider_error(http_fake, provider, body):
    http_fake.push_json(body, headers=RID)
    call = invoke(model(http_fake, provider))
    assert call.status == "failed"
    assert type(call.error) is ProviderError, repr(call.error)
    assert call.error.status == 200
    assert call.error.request_id == "req_shape_1"
    assert "shape" in str(call.error)


def chunk(delta: dict, finish: str | None = None) -> str:
    import json

    return "data: " + json.dumps(
        {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    )


OPENAI_STREAMS = {
    "content is a number": [chunk({"content": 5}), chunk({}, "stop"), "data: [DONE]"],
    "choices is text": ['data: {"choices": "abc"}', "data: [DONE]"],
    "delta is text": ['data: {"choices": [{"index": 0, "delta": "x"}]}', "data: [DONE]"],
    "tool_calls is text": [chunk({"tool_calls": "x"}), "data: [DONE]"],
}
ANTHROPIC_STREAMS = {
    "an event is a list": ["event: message_start\ndata: [1]"],
    "text is a number": [
        'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, '
        '"delta": {"type": "text_delta", "text": 5}}',
        'event: message_stop\ndata: {"type": "message_stop"}',
    ],
    "message is text": [
        'event: message_start\ndata: {"type": "message_start", "message": "x"}',
        'event: message_stop\ndata: {"type": "message_stop"}',
    ],
}


@pytest.mark.parametrize(
    ("provider", "events"),
    [("openai", e) for e in OPENAI_STREAMS.values()]
    + [("anthropic", e) for e in ANTHROPIC_STREAMS.values()],
    ids=[f"openai: {k}" for k in OPENAI_STREAMS] + [f"anthropic: {k}" for k in ANTHROPIC_STREAMS],
)
def test_a_stream_event_of_the_wrong_shape_is_a_provider_error(http_fake, provider, events):
    http_fake.push_sse(events, headers=RID)
    call = invoke(model(http_fake, provider), stream=True)
    assert isinstance(call.error, StreamInterruptedError), repr(call.error)
    assert call.error.status == 200
    assert call.error.request_id == "req_shape_1"


@pytest.mark.parametrize(
    "error",
    ['"Overloaded"', '["overloaded_error"]', '{"type": ["x"], "message": 5}', "5"],
)
@pytest.mark.parametrize("started", [False, True])
def test_an_anthropic_error_event_of_the_wrong_type_is_a_provider_error(http_fake, error, started):
    events = [
        'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, '
        '"content_block": {"type": "text", "text": ""}}'
    ] if started else []  # fmt: skip
    events.append(f'event: error\ndata: {{"type": "error", "error": {error}}}')
    http_fake.push_sse(events, headers=RID)
    call = invoke(model(http_fake, "anthropic"), stream=True)
    assert isinstance(call.error, ProviderError), repr(call.error)
    assert call.error.request_id == "req_shape_1"


def test_a_wrong_shape_reaches_the_branch_as_the_typed_cause(http_fake):
    http_fake.push_json({"choices": "abc"}, headers=RID)
    branch = Branch(chat_model=model(http_fake, "openai"))
    with pytest.raises(ExecutionError) as caught:
        anyio.run(branch.communicate, "hi")
    cause = caught.value.__cause__
    assert type(cause) is ProviderError and cause.status == 200
    assert cause.request_id == "req_shape_1"
    assert len(branch.messages) == 0  # nothing recorded
    assert branch.logs[-1].content["status"] == "failed"


# -- a stream that ends before any answer ----------------------------------------------------
def test_done_without_an_answer_or_finish_reason_is_incomplete(http_fake):
    http_fake.push_sse(
        [
            'data: {"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}',
            "data: [DONE]",
        ],
        headers=RID,
    )
    branch = Branch(chat_model=model(http_fake, "openai"))

    async def main():
        return await branch.communicate("hi", stream=True)

    with pytest.raises(ExecutionError) as caught:
        anyio.run(main)
    cause = caught.value.__cause__
    assert isinstance(cause, StreamInterruptedError)
    assert cause.request_id == "req_shape_1"
    assert "no `finish_reason`" in str(cause) and "preempted" in str(cause)
    assert len(branch.messages) == 0  # never recorded as a completed, empty answer
    assert branch.logs[-1].content["status"] == "failed"


def test_done_after_an_empty_answer_with_a_finish_reason_is_an_answer(http_fake):
    http_fake.push_sse([chunk({"content": ""}, "stop"), "data: [DONE]"])
    call = invoke(model(http_fake, "openai"), stream=True)
    assert call.status == "completed" and call.response.text == ""
    assert call.response.finish_reason == "stop"
