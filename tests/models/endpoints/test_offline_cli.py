"""The offline CLI agent, through `iModel.stream_cli`."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import pytest

from lion_nb.errors import ConfigurationError, ScriptExhaustedError
from lion_nb.models.endpoints import CLIRequest
from lion_nb.models.imodel import iModel
from lion_nb.models.stream import StreamChunk


def run(model: iModel, prompt: str = "List the files", **kw: Any) -> list[StreamChunk]:
    async def main() -> list[StreamChunk]:
        return [chunk async for chunk in model.stream_cli(CLIRequest(prompt=prompt, **kw))]

    return anyio.run(main)


TURNS = [
    [
        {"type": "thinking", "content": "Looking around."},
        {"type": "tool_use", "tool_id": "t1", "tool_name": "Bash", "tool_input": {"cmd": "ls"}},
        {"type": "tool_result", "tool_id": "t1", "tool_output": "a.py\nb.py"},
        StreamChunk(type="text", content="Two files."),
        {"type": "result", "metadata": {"usage": {"input_tokens": 5, "output_tokens": 3}}},
    ],
    [{"type": "text", "content": "Second turn."}, {"type": "result"}],
]


def scripted(**kw: Any) -> iModel:
    return iModel(provider="offline_cli", model="scripted", turns=TURNS, **kw)


def test_auto_plays_a_complete_turn_quoting_the_prompt():
    model = iModel("offline_cli/auto")
    assert model.is_cli
    chunks = run(model, "Summarize   the repo")
    assert [c.type for c in chunks] == ["system", "thinking", "text", "result"]
    session = chunks[0].metadata["session_id"]
    assert session.startswith("offline-") and model.provider_session_id == session
    assert "“Summarize the repo”" in chunks[2].content
    result = chunks[-1].metadata
    assert result["cost_usd"] == 0.0 and result["session_id"] == session
    assert result["usage"]["total_tokens"] > 0
    assert run(model, "Summarize   the repo")[2].content == chunks[2].content


def test_scripted_plays_turns_in_order_with_a_stable_session():
    model = scripted()
    first = run(model)
    assert [c.type for c in first] == [
        "system",
        "thinking",
        "tool_use",
        "tool_result",
        "text",
        "result",
    ]
    assert first[2].tool_input == {"cmd": "ls"} and first[3].tool_output == "a.py\nb.py"
    session = model.provider_session_id
    assert session and first[0].metadata == {"session_id": session}
    second = run(model, "next", resume=session)
    assert second[0].metadata["session_id"] == session
    assert second[1].content == "Second turn."
    assert [c.resume for c in model.endpoint.calls] == [None, session]
    assert [c.prompt for c in model.endpoint.calls] == ["List the files", "next"]


def test_a_scripted_system_chunk_sets_the_session_id():
    model = iModel(
        "offline_cli/scripted",
        turns=[[{"type": "system", "metadata": {"session_id": "abc-123"}}, {"type": "result"}]],
    )
    chunks = run(model)
    assert [c.type for c in chunks] == ["system", "result"]
    assert model.provider_session_id == "abc-123"


def test_resuming_reports_the_resumed_session():
    model = iModel("offline_cli/auto")
    chunks = run(model, resume="offline-previous")
    assert chunks[0].metadata["session_id"] == "offline-previous"
    assert model.provider_session_id == "offline-previous"


def test_running_out_of_turns_raises_when_iterated():
    model = scripted()
    run(model)
    run(model)
    with pytest.raises(ScriptExhaustedError) as info:
        run(model)
    assert "`offline_cli/scripted` has played all 2 turns" in str(info.value)
    assert "`turns=`" in str(info.value)


def test_closing_the_stream_early_ends_the_turn_cleanly():
    model = scripted()

    async def main() -> tuple[list[StreamChunk], list[StreamChunk]]:
        stream = model.stream_cli(CLIRequest(prompt="p"))
        first = [await stream.__anext__(), await stream.__anext__()]
        await stream.aclose()
        with pytest.raises(StopAsyncIteration):
            await stream.__anext__()
        rest = [c async for c in model.stream_cli(CLIRequest(prompt="q"))]
        return first, rest

    first, rest = anyio.run(main)
    assert [c.type for c in first] == ["system", "thinking"]
    assert rest[1].content == "Second turn."
    assert model.endpoint.remaining == 0


def test_delay_paces_chunks_and_a_slow_turn_can_be_cancelled():
    model = iModel("offline_cli/auto", delay=0.03)
    start = time.perf_counter()
    assert len(run(model)) == 4
    assert time.perf_counter() - start >= 0.08

    slow = iModel("offline_cli/auto", delay=3600)  # ends only if cancelled

    async def main() -> list[str]:
        seen: list[str] = []
        with anyio.fail_after(60):  # a guard against a hang, not a timing check
            with anyio.CancelScope() as scope:
                async for chunk in slow.stream_cli(CLIRequest(prompt="p")):
                    seen.append(chunk.type)
                    scope.cancel()  # while the turn waits for its next chunk
        return seen

    assert anyio.run(main) == ["system"]


@pytest.mark.parametrize(
    ("turns", "needle"),
    [
        ("text", "list of turns"),
        (["text"], "`turns[0]` is str"),
        ([[{"type": "speech"}]], "`turns[0][0]` is not a StreamChunk: `type`"),
        ([[{"type": "text", "colour": "red"}]], "`turns[0][0]` is not a StreamChunk: `colour`"),
    ],
)
def test_turns_are_checked_when_the_model_is_built(turns, needle):
    with pytest.raises(ConfigurationError) as info:
        iModel("offline_cli/scripted", turns=turns)
    assert needle in str(info.value)


def test_unknown_model_and_misplaced_settings_are_refused():
    with pytest.raises(ConfigurationError, match="auto, scripted"):
        iModel("offline_cli/claude")
    with pytest.raises(ConfigurationError, match="offline_cli/scripted"):
        iModel("offline_cli/auto", turns=[[]])


def test_the_script_serializes_and_a_copy_replays_it():
    model = scripted(delay=0.001)
    data = model.to_dict()
    endpoint = json.loads(json.dumps(data))["endpoint"]
    assert endpoint["delay"] == 0.001
    assert endpoint["turns"][1] == [{"type": "text", "content": "Second turn."}, {"type": "result"}]
    run(model)
    clone = model.copy()
    assert run(clone)[1].content == "Looking around."
    assert clone.provider_session_id != model.provider_session_id
    shared = model.copy(share_session=True)
    assert shared.provider_session_id == model.provider_session_id
    rebuilt = iModel.from_dict(data)
    assert [c.type for c in run(rebuilt)][1:] == [c["type"] for c in endpoint["turns"][0]]


def test_played_chunks_are_copies_of_the_script():
    model = scripted()
    run(model)[2].tool_input["cmd"] = "rm -rf ."
    assert model.endpoint.turns[0][1].tool_input == {"cmd": "ls"}
