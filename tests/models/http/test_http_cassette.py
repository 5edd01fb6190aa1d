"""Record against the loopback server, stop it, replay: the HTTP providers' round trips.

Each case runs one conversation through `Branch` with a cassette in mode ``once`` against a
real loopback server (`tests.fakes.http_server`), stops the server, and runs the same
conversation again on a fresh branch with the cassette in mode ``none``. The replay must
leave the branch exactly as the recording did (`snapshot`: ids and timestamps aside), send
the same text deltas to the listener in the same order, and emit the same signals -- and it
must not touch the network (the server is gone and saw no further request).

Cases: OpenAI-compatible and Anthropic; streamed and not; plain text, a tool call through
`operate`, and structured output through `communicate(response_format=...)`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from lion_nb import Branch, Session, Signal, iModel
from lion_nb.errors import ExecutionError
from lion_nb.models.cassettes import cassette
from lion_nb.models.endpoints.base import streaming_to
from tests.fakes.http_server import FakeProvider, Script, openai_completion
from tests.models.cassette_support import snapshot


class Forecast(BaseModel):
    city: str
    celsius: int


def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"18 °C and clear in {city}"


FORECAST = {"city": "Oslo", "celsius": 4}


# -- wire replies --------------------------------------------------------------------------------
def openai_stream(parts: list[str]) -> list[str]:
    def event(delta: dict, finish: str | None = None) -> str:
        chunk = {
            "id": "chatcmpl-8",
            "object": "chat.completion.chunk",
            "created": 1760000000,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return "data: " + json.dumps(chunk)

    usage = {"id": "chatcmpl-8", "object": "chat.completion.chunk", "choices": []}
    usage["usage"] = {"prompt_tokens": 9, "completion_tokens": len(parts), "total_tokens": 20}
    return [
        *(event({"content": p}) for p in parts),
        event({}, "stop"),
        "data: " + json.dumps(usage),
        "data: [DONE]",
    ]


def anthropic_answer(value: dict) -> dict:
    block = {"type": "tool_use", "id": "toolu_1", "name": "Forecast", "input": value}
    return {
        "id": "msg_9",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [block],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 30, "output_tokens": 12},
    }


def anthropic_answer_stream(value: dict) -> list[str]:
    text = json.dumps(value)
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_10",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [],
                    "usage": {"input_tokens": 30, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_2", "name": "Forecast"},
            },
        ),
        *(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": text[i : i + 7]},
                },
            )
            for i in range(0, len(text), 7)
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 12},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return [f"event: {name}\ndata: {json.dumps(data)}" for name, data in events]


# -- the round trip ------------------------------------------------------------------------------
def make_model(provider: str, url: str) -> iModel:
    if provider == "openai":
        return iModel(provider="openai", model="gpt-4o-mini", base_url=url + "/v1")
    return iModel(provider="anthropic", model="claude-sonnet-4-5", base_url=url)


class Run:
    """One conversation on a fresh branch: its snapshot, deltas, signals and value."""

    def __init__(self, provider: str, url: str, act: Callable, stream: bool):
        session = Session()
        self.branch = session.new_branch(
            name="main", system="Be brief.", chat_model=make_model(provider, url)
        )
        self.deltas: list[str] = []
        self.signals: list[str] = []
        session.observe(Signal, lambda s: self.signals.append(s.kind))

        async def main() -> Any:
            with streaming_to(self.deltas.append if stream else None):
                return await act(self.branch)

        self.value = anyio.run(main)


def round_trip(tmp_path: Path, provider: str, scripts: list[Script], act: Callable, stream: bool):
    """Record ``act`` in mode ``once``, stop the server, replay in mode ``none``."""
    path = tmp_path / "calls.jsonl"
    with FakeProvider() as server:
        for script in scripts:
            server.push(script)
        url = server.url
        with cassette(path, mode="once") as tape:
            recorded = Run(provider, url, act, stream)
        served = len(server.requests)
    assert served == len(scripts) and tape.recorded == served and not server.pending
    with cassette(path, mode="none") as tape:
        replayed = Run(provider, url, act, stream)
    assert tape.replayed == served and tape.recorded == 0
    assert snapshot(replayed.branch) == snapshot(recorded.branch)
    assert replayed.deltas == recorded.deltas
    assert replayed.signals == recorded.signals
    assert replayed.value == recorded.value
    return recorded, replayed, path


def ask(text: str, **kw: Any) -> Callable:
    return lambda branch: branch.communicate(text, **kw)


def operate(text: str, **kw: Any) -> Callable:
    return lambda branch: branch.operate(instruction=text, **kw)


def fixture_events(name: str) -> list[str]:
    from tests.fakes.http_server import sse_events

    return sse_events(name)


def fixture_json(name: str) -> dict:
    from tests.fakes.http_server import FIXTURES

    return json.loads((FIXTURES / name).read_text())


ANTHROPIC_TEXT = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "Bonjour."}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 9, "output_tokens": 2},
}

CASES = {
    # (provider, streamed): replies, act
    "openai-text": ("openai", False, [Script(body=openai_completion("Hi!"))], ask("Hi")),
    "openai-text-stream": (
        "openai",
        True,
        [Script(events=openai_stream(["Hel", "lo", " there", "!"]))],
        ask("Hi"),
    ),
    "openai-tool": (
        "openai",
        False,
        [Script(body=fixture_json("openai_nonstream_tool.json"))],
        operate("Weather in Paris?", tools=[get_weather]),
    ),
    "openai-tool-stream": (
        "openai",
        True,
        [Script(events=fixture_events("openai_stream_tool.sse"))],
        operate("Weather in Paris?", tools=[get_weather]),
    ),
    "openai-structured": (
        "openai",
        False,
        [Script(body=openai_completion(json.dumps(FORECAST)))],
        ask("Oslo?", response_format=Forecast),
    ),
    "openai-structured-stream": (
        "openai",
        True,
        [Script(events=openai_stream(['{"city": ', '"Oslo", ', '"celsius": 4}']))],
        ask("Oslo?", response_format=Forecast),
    ),
    "anthropic-text": ("anthropic", False, [Script(body=ANTHROPIC_TEXT)], ask("Hi")),
    "anthropic-tool-stream": (
        "anthropic",
        True,
        [Script(events=fixture_events("anthropic_stream_tool.sse"))],
        operate("Weather in Paris?", tools=[get_weather]),
    ),
    "anthropic-structured": (
        "anthropic",
        False,
        [Script(body=anthropic_answer(FORECAST))],
        ask("Oslo?", response_format=Forecast),
    ),
    "anthropic-structured-stream": (
        "anthropic",
        True,
        [Script(events=anthropic_answer_stream(FORECAST))],
        ask("Oslo?", response_format=Forecast),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_round_trip_replays_the_branch_exactly(case: str, tmp_path: Path):
    provider, stream, scripts, act = CASES[case]
    recorded, _, path = round_trip(tmp_path, provider, scripts, act, stream)
    kinds = [m.kind for m in recorded.branch.messages]
    assert kinds[:3] == ["system", "instruction", "assistant_response"]
    exchange = json.loads(path.read_text().splitlines()[0])
    assert exchange["kind"] == "chat" and exchange["request"]["provider"] == provider
    if stream:
        assert exchange["stream"] is True and exchange["deltas"] == recorded.deltas
        if case != "anthropic-structured-stream":  # its answer arrives as a tool's input
            assert "".join(recorded.deltas) == exchange["response"]["text"]
    else:
        assert recorded.deltas == [] and exchange["deltas"] == []
    if "tool" in case:
        assert kinds[-2:] == ["action_request", "action_response"]
        assert recorded.branch.messages[-1].output == "18 °C and clear in Paris"
    if "structured" in case:
        assert recorded.value == Forecast(**FORECAST)
        assert exchange["request"]["response_format"]["name"] == "Forecast"


def test_a_multi_turn_conversation_replays_turn_by_turn(tmp_path: Path):
    """Later requests carry the earlier answers: each turn matches its own recording."""
    scripts = [Script(body=openai_completion(t)) for t in ("One.", "Two.", "Three.")]

    async def act(branch: Branch) -> list[str]:
        return [await branch.communicate(q) for q in ("first", "second", "third")]

    _, replayed, path = round_trip(tmp_path, "openai", scripts, act, stream=False)
    assert replayed.value == ["One.", "Two.", "Three."]
    requests = [json.loads(line)["request"] for line in path.read_text().splitlines()]
    assert [len(r["messages"]) for r in requests] == [2, 4, 6]


def test_a_non_streamed_recording_replayed_to_a_listener_is_one_delta(tmp_path: Path):
    path = tmp_path / "calls.jsonl"
    with FakeProvider() as server, cassette(path):
        server.push_json(openai_completion("Whole answer."))
        Run("openai", server.url, ask("Hi"), stream=False)
        url = server.url
    with cassette(path, mode="none"):
        replay = Run("openai", url, ask("Hi"), stream=True)
    assert replay.deltas == ["Whole answer."] and replay.value == "Whole answer."


def test_a_failed_call_is_not_recorded_and_is_made_again(tmp_path: Path):
    path = tmp_path / "calls.jsonl"
    with FakeProvider() as server:
        server.push_error(400, {"error": {"message": "bad", "type": "invalid_request_error"}})
        server.push_json(openai_completion("fine"))
        with cassette(path, mode="new") as tape:
            with pytest.raises(ExecutionError):
                Run("openai", server.url, ask("Hi"), stream=False)
            assert not path.exists() and tape.recorded == 0
            assert Run("openai", server.url, ask("Hi"), stream=False).value == "fine"
        assert len(server.requests) == 2 and tape.recorded == 1
    assert len(path.read_text().splitlines()) == 1
