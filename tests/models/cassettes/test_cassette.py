"""Cassette modes, matching, the three switches and the file format, against the loopback
server (`tests.fakes.http_server`: a real HTTP server, so "no live call" is checked by the
requests it saw).

Issue acceptance -> tests:
- `none` with a changed prompt names the differing field
  -> test_none_with_a_changed_prompt_names_the_differing_field
- modes once / new / none / all -> test_once_*, test_new_*, test_none_*, test_all_*
- order-aware matching -> test_identical_requests_replay_in_recorded_order_then_the_last_repeats
- one mechanism: iModel option, context manager, process-wide (``%lion cassette``), env
  -> test_the_model_option_wins_and_copies_share_it, test_the_innermost_block_wins,
  test_the_process_wide_cassette_covers_models_made_later, test_env_*
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

from lion_nb import Branch, iModel
from lion_nb.models.cassettes import (
    ENV_MODE,
    Cassette,
    CassetteError,
    cassette,
    current_cassette,
    use_cassette,
)
from lion_nb.models.endpoints.base import ChatRequest, CLIEndpoint, CLIRequest
from lion_nb.models.stream import StreamChunk
from tests.fakes.http_server import FakeProvider, openai_completion
from tests.models.cassette_support import snapshot


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


@pytest.fixture(autouse=True)
def _no_forced_mode(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(ENV_MODE, raising=False)
    yield
    use_cassette(None)


def model(server: FakeProvider, **kw: Any) -> iModel:
    return iModel(provider="openai", model="gpt-4o-mini", base_url=server.openai_url, **kw)


def ask(m: iModel, *questions: str) -> list[str]:
    async def main() -> list[str]:
        branch = Branch(system="Be brief.", chat_model=m)
        return [await branch.communicate(q) for q in questions]

    return anyio.run(main)


def answers(server: FakeProvider, *texts: str) -> None:
    for text in texts:
        server.push_json(openai_completion(text, prompt_tokens=5, completion_tokens=1))


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- modes -----------------------------------------------------------------------------------------
def test_once_records_when_missing_then_replays_without_the_provider(server, tmp_path):
    path = tmp_path / "c.jsonl"
    answers(server, "Paris.")
    with cassette(path) as tape:
        assert ask(model(server), "Capital of France?") == ["Paris."]
    assert tape.recorded == 1 and len(server.requests) == 1
    with cassette(path) as tape:
        assert ask(model(server), "Capital of France?") == ["Paris."]
    assert tape.replayed == 1 and len(server.requests) == 1


def test_none_with_a_changed_prompt_names_the_differing_field(server, tmp_path):
    path = tmp_path / "c.jsonl"
    answers(server, "Paris.", "4")
    with cassette(path):
        ask(model(server), "Capital of France?", "2 + 2?")
    with cassette(path, mode="none"), pytest.raises(CassetteError) as info:
        ask(model(server), "Capital of France?", "3 + 3?")
    message = str(info.value)
    assert "messages[3].content" in message
    assert 'recorded "2 + 2?", now "3 + 3?"' in message
    assert "(line 2)" in message and "mode `none`" in message and "--mode new" in message
    assert len(server.requests) == 2


def test_none_names_a_changed_model_and_option(server, tmp_path):
    path = tmp_path / "c.jsonl"
    answers(server, "Paris.")
    with cassette(path):
        ask(model(server, temperature=0.2), "Capital of France?")
    changed = iModel(provider="openai", model="gpt-4o", base_url=server.openai_url, temperature=0.7)
    with cassette(path, mode="none"), pytest.raises(CassetteError) as info:
        ask(changed, "Capital of France?")
    assert "model: recorded" in str(info.value)
    assert "options.temperature: recorded 0.2, now 0.7" in str(info.value)


def test_settings_that_do_not_change_the_answer_are_not_matched(server, tmp_path):
    path = tmp_path / "c.jsonl"
    answers(server, "Paris.")
    with cassette(path):
        ask(model(server, timeout=30, max_retries=0), "Capital of France?")
    elsewhere = iModel(
        provider="openai", model="gpt-4o-mini", base_url="http://127.0.0.1:9/v1", timeout=5
    )
    with cassette(path, mode="none"):
        assert ask(elsewhere, "Capital of France?") == ["Paris."]


def test_none_without_the_file_says_so(server, tmp_path):
    with cassette(tmp_path / "missing.jsonl", mode="none"), pytest.raises(CassetteError) as info:
        ask(model(server), "Hi")
    assert "does not exist" in str(info.value) and not server.requests


def test_a_miss_says_what_a_live_call_to_this_model_needs(server, tmp_path, monkeypatch):
    """A keyless local server needs to be running, not a key; a hosted API needs its key."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    missing = tmp_path / "missing.jsonl"
    local = iModel(provider="llamacpp", model="m", base_url=server.openai_url)
    with cassette(missing, mode="none"), pytest.raises(CassetteError) as info:
        ask(local, "Hi")
    message = str(info.value)
    assert "key" not in message
    assert f"make sure the server at `{server.openai_url}` is running" in message
    hosted = iModel(provider="openai", model="gpt-4o-mini")
    with cassette(missing, mode="none"), pytest.raises(CassetteError) as info:
        ask(hosted, "Hi")
    assert "set the provider's key (`OPENAI_API_KEY`)" in str(info.value)
    keyed = model(server, api_key="sk-test-cassette-0123456789")
    with cassette(missing, mode="none"), pytest.raises(CassetteError) as info:
        ask(keyed, "Hi")
    assert "key" not in str(info.value) and "To record it, use mode `new`" in str(info.value)
    assert not server.requests


def test_identical_requests_replay_in_recorded_order_then_the_last_repeats(server, tmp_path):
    path = tmp_path / "c.jsonl"
    answers(server, "first", "second")
    m = model(server)
    request = [{"role": "user", "content": "Roll a die."}]

    async def roll(times: int) -> list[str]:
        calls = [await m.invoke(ChatRequest(messages=list(request))) for _ in range(times)]
        return [call.response.text for call in calls]

    with cassette(path):
        assert anyio.run(roll, 2) == ["first", "second"]
    assert len(lines(path)) == 2
    with cassette(path, mode="none"):
        assert anyio.run(roll, 3) == ["first", "second", "second"]
    assert len(server.requests) == 2


def test_new_replays_matches_and_appends_new_requests(server, tmp_path):
    path = tmp_path / "c.jsonl"
    answers(server, "Paris.", "Rome.")
    with cassette(path):
        ask(model(server), "Capital of France?")
    with cassette(path, mode="new") as tape:
        assert ask(model(server), "Capital of France?") == ["Paris."]
        assert ask(model(server), "Capital of Italy?") == ["Rome."]
    assert (tape.replayed, tape.recorded, len(server.requests)) == (1, 1, 2)
    assert [x["response"]["text"] for x in lines(path)] == ["Paris.", "Rome."]


def test_new_records_a_request_repeated_beyond_its_recordings(server, tmp_path):
    path = tmp_path / "c.jsonl"
    answers(server, "one", "two")
    with cassette(path):
        ask(model(server), "Say a number.")
    with cassette(path, mode="new"):
        assert ask(model(server), "Say a number.") == ["one"]
        assert ask(model(server), "Say a number.") == ["two"]
    assert [x["response"]["text"] for x in lines(path)] == ["one", "two"]


def test_all_calls_the_provider_and_rewrites_the_file(server, tmp_path):
    path = tmp_path / "c.jsonl"
    answers(server, "old", "new")
    with cassette(path):
        ask(model(server), "Hi")
    with cassette(path, mode="all") as tape:
        assert ask(model(server), "Hi") == ["new"]
    assert tape.recorded == 1 and len(server.requests) == 2
    assert [x["response"]["text"] for x in lines(path)] == ["new"]


def test_one_all_run_through_two_cassettes_on_one_file_keeps_both(server, tmp_path, monkeypatch):
    """A notebook's ``%lion cassette`` and a ``with cassette(...)`` below it, re-recorded."""
    path = tmp_path / "c.jsonl"
    answers(server, "stale", "a", "b")
    with cassette(path):
        ask(model(server), "Old question")
    monkeypatch.setenv(ENV_MODE, "all")
    use_cassette(path, mode="none")
    ask(model(server), "First")
    with cassette(path):
        ask(model(server), "Second")
    assert [x["response"]["text"] for x in lines(path)] == ["a", "b"]


def test_a_mismatch_is_raised_by_invoke_not_recorded_on_the_call(server, tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text("")
    m = model(server)
    with cassette(path, mode="none"), pytest.raises(CassetteError):
        anyio.run(m.invoke, ChatRequest(messages=[{"role": "user", "content": "Hi"}]))


# -- the switches ------------------------------------------------------------------------------
def test_the_model_option_wins_and_copies_share_it(server, tmp_path):
    own, ambient = tmp_path / "own.jsonl", tmp_path / "ambient.jsonl"
    answers(server, "Paris.")
    m = model(server, cassette=own)
    assert isinstance(m.cassette, Cassette) and m.cassette.mode == "once"
    with cassette(ambient):
        ask(m, "Capital of France?")
    assert own.exists() and not ambient.exists()
    for twin in (m.copy(), copy.deepcopy(m)):
        assert twin.cassette is m.cassette
    assert "cassette" not in m.to_dict()  # a runtime switch, never saved


def test_the_innermost_block_wins(server, tmp_path):
    outer, inner = tmp_path / "outer.jsonl", tmp_path / "inner.jsonl"
    answers(server, "a", "b")
    with cassette(outer) as first:
        with cassette(inner) as second:
            assert current_cassette() is second
            ask(model(server), "Hi")
        assert current_cassette() is first
        ask(model(server), "Hi")
    assert current_cassette() is None
    assert lines(inner)[0]["response"]["text"] == "a" and lines(outer)[0]["response"]["text"] == "b"


def test_the_process_wide_cassette_covers_models_made_later(server, tmp_path):
    path = tmp_path / "notebook.jsonl"
    answers(server, "Paris.")
    tape = use_cassette(path)
    assert current_cassette() is tape
    ask(model(server), "Capital of France?")  # a model created after the switch
    use_cassette(path, mode="none")
    assert ask(model(server), "Capital of France?") == ["Paris."]
    assert use_cassette(None) is None and current_cassette() is None
    assert len(server.requests) == 1


def test_env_forces_none_on_every_cassette(server, tmp_path, monkeypatch):
    path = tmp_path / "c.jsonl"
    monkeypatch.setenv(ENV_MODE, "none")
    with cassette(path, mode="once") as tape, pytest.raises(CassetteError) as info:
        ask(model(server), "Hi")
    assert tape.effective_mode == "none" and f"forced by `{ENV_MODE}`" in str(info.value)
    assert not server.requests and not path.exists()


def test_env_all_re_records_a_cassette_opened_for_replay(server, tmp_path, monkeypatch):
    path = tmp_path / "c.jsonl"
    answers(server, "old", "new")
    with cassette(path):
        ask(model(server), "Hi")
    monkeypatch.setenv(ENV_MODE, "all")
    with cassette(path, mode="none"):
        assert ask(model(server), "Hi") == ["new"]
    assert [x["response"]["text"] for x in lines(path)] == ["new"]


def test_env_none_blocks_live_calls_without_a_cassette_but_not_offline(server, monkeypatch):
    monkeypatch.setenv(ENV_MODE, "none")
    with pytest.raises(CassetteError, match="forbids live model calls") as info:
        ask(model(server), "Hi")
    assert "openai/gpt-4o-mini" in str(info.value) and not server.requests
    assert ask(iModel(provider="offline", model="scripted", responses=["ok"]), "Hi") == ["ok"]
    claude = iModel(provider="claude_code", cli_path="/nonexistent/claude")
    with pytest.raises(CassetteError):  # at once: before any executable is looked for
        claude.stream_cli(CLIRequest(prompt="Hi"))


def test_env_with_an_unknown_mode_is_named(server, monkeypatch):
    monkeypatch.setenv(ENV_MODE, "replay")
    with pytest.raises(CassetteError, match=f"`{ENV_MODE}='replay'`.*once, new, none, all"):
        ask(model(server), "Hi")


def test_offline_models_pass_through_a_cassette(tmp_path):
    path = tmp_path / "c.jsonl"
    scripted = iModel(provider="offline", model="scripted", responses=["a", "b"])
    with cassette(path, mode="none"):
        assert ask(scripted, "x", "y") == ["a", "b"]
    assert not path.exists() and len(scripted.endpoint.calls) == 2


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(CassetteError, match="once, new, none, all"):
        Cassette(tmp_path / "c.jsonl", mode="record")
    with pytest.raises(CassetteError, match="is a folder"):
        Cassette(tmp_path)
    with pytest.raises(CassetteError, match="takes a path"):
        iModel(provider="offline", model="auto", cassette=42)


# -- the file ------------------------------------------------------------------------------------
def test_each_exchange_is_one_json_object_per_line_with_sorted_keys(server, tmp_path):
    path = tmp_path / "c.jsonl"
    answers(server, "Paris.", "Rome.")
    with cassette(path):
        ask(model(server, temperature=0), "Capital of France?", "And Italy?")
    text = path.read_text()
    assert text.endswith("\n") and len(text.splitlines()) == 2
    for line in text.splitlines():
        data = json.loads(line)
        assert line == json.dumps(data, sort_keys=True, ensure_ascii=False)
        assert set(data) == {"kind", "request", "response", "stream", "deltas"}
        assert set(data["request"]) == {"provider", "model", "messages", "options"}
        assert data["request"]["options"] == {"temperature": 0}


def test_a_malformed_line_is_named(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"kind": "chat", "request": {}, "response": {}}\nnot json\n')
    with pytest.raises(CassetteError, match="line 2, is not a recorded exchange"):
        Cassette(path)


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ({"kind": "chat", "request": {}}, "`response` is an object"),
        ({"kind": "chat", "request": {}, "response": {}, "deltas": [1]}, "`deltas`"),
        ({"kind": "run", "request": {}}, "`events` is a list"),
        (
            {"kind": "run", "request": {}, "events": [{"type": "text"}, {"type": "txt"}]},
            "events[1].type",
        ),
        (
            {"kind": "run", "request": {}, "events": [{"type": "text", "colour": 1}]},
            "events[0].colour",
        ),
        ({"kind": "batch", "request": {}, "results": []}, "`batch`"),
        ({"kind": "batch", "request": {}, "batch": {"id": "b", "state": "ended"}}, "`results`"),
        ({"kind": "tape", "request": {}}, "`kind` is one of chat, run, batch"),
        ({"kind": "chat", "request": {}, "response": {"text": 5}}, "`response.text`"),
        ({"kind": "chat", "request": {}, "response": {"tool_calls": "abc"}}, "`response.tool_c"),
        (
            {"kind": "chat", "request": {}, "response": {"tool_calls": [{"id": "c1"}]}},
            "`response.tool_calls[0].name`",
        ),
        (
            {
                "kind": "chat",
                "request": {},
                "response": {"tool_calls": [{"id": "c1", "name": "w"}]},
            },
            "`response.tool_calls[0].arguments`",
        ),
        (
            {
                "kind": "chat",
                "request": {},
                "response": {"tool_calls": [{"name": "w", "arguments": {}, "args": 1}]},
            },
            "no field `args`",
        ),
        ({"kind": "chat", "request": {}, "response": {"tool_calls": [3]}}, "tool_calls[0]`"),
        ({"kind": "chat", "request": {}, "response": {"usage": []}}, "`response.usage`"),
        (
            {"kind": "chat", "request": {}, "response": {"usage": {"input_tokens": "5"}}},
            "`response.usage.input_tokens`",
        ),
        ({"kind": "chat", "request": {}, "response": {"model": 4}}, "`response.model`"),
        ({"kind": "chat", "request": {}, "response": {}, "stream": "yes"}, "`stream`"),
        (
            {"kind": "batch", "request": {}, "batch": {"id": "b", "state": "ended", "total": "2"}},
            "`batch.total`",
        ),
    ],
)
def test_a_hand_edited_line_fails_on_opening_naming_the_field(tmp_path, line, named):
    """Every field a replay relies on is checked when the file is opened -- a CLI turn's
    chunks included -- so a bad edit is a `CassetteError` with its line, never a pydantic
    error halfway through a replay."""
    path = tmp_path / "c.jsonl"
    good = {"kind": "chat", "request": {"model": "m"}, "response": {"text": "ok"}}
    path.write_text(json.dumps(good) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(CassetteError) as info:
        Cassette(path)
    assert "line 2, is not a recorded exchange" in str(info.value)
    assert named in str(info.value) and "mode `all`" in str(info.value)


def test_a_line_nested_too_deeply_is_named_on_opening(tmp_path):
    path = tmp_path / "c.jsonl"
    good = {"kind": "chat", "request": {"model": "m"}, "response": {"text": "ok"}}
    path.write_text(json.dumps(good) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(CassetteError, match="line 2, is not a recorded exchange") as info:
        Cassette(path)
    assert "nested too deeply" in str(info.value)


def test_a_line_with_null_fields_passes_the_check_and_replays(server, tmp_path):
    """What the open-time check lets through is what replay can read: nulls and missing
    optional fields replay as an empty answer, a well-formed tool call as itself."""
    path = tmp_path / "c.jsonl"
    answers(server, "Paris.")
    with cassette(path):
        ask(model(server), "Capital of France?")
    [line] = lines(path)
    call = {"id": "c1", "name": "w", "arguments": {"x": 1}}
    line["response"] = {"text": None, "tool_calls": [call], "usage": None, "model": None}
    path.write_text(json.dumps(line) + "\n")
    m = model(server)

    async def main():
        return await m.invoke(ChatRequest(messages=line["request"]["messages"]))

    with cassette(path, mode="none"):
        result = anyio.run(main)
    assert result.error is None, result.error
    assert result.response.text == "" and result.response.tool_calls[0].name == "w"
    assert result.response.tool_calls[0].arguments == {"x": 1}
    assert len(server.requests) == 1


# -- CLI endings -------------------------------------------------------------------------------
class _Agent(CLIEndpoint):
    """A CLI endpoint whose turn ends with a benign end-of-stream error chunk."""

    provider = "test_agent"

    def __init__(self) -> None:
        super().__init__("v1")
        self.runs = 0

    async def stream(self, request: CLIRequest) -> AsyncGenerator[StreamChunk, None]:
        self.runs += 1
        yield StreamChunk(type="system", metadata={"session_id": "s-9"})
        yield StreamChunk(type="text", content="Done.")
        yield StreamChunk(type="error", content="stream closed", metadata={"benign_eos": True})
        yield StreamChunk(type="text", content="never read")


def test_a_cli_turn_ending_benignly_is_recorded_and_replayed(tmp_path):
    from contextlib import aclosing

    path = tmp_path / "agent.jsonl"

    def turn() -> tuple[Branch, _Agent]:
        agent = _Agent()
        branch = Branch(chat_model=iModel(endpoint=agent))

        async def main() -> None:
            async with aclosing(branch.run("Go.")) as stream:
                async for _ in stream:
                    pass

        anyio.run(main)
        return branch, agent

    with cassette(path):
        live, agent = turn()
    assert agent.runs == 1
    events = lines(path)[0]["events"]
    assert [e["type"] for e in events] == ["system", "text", "error"]
    with cassette(path, mode="none"):
        replayed, agent = turn()
    assert agent.runs == 0 and replayed.chat_model.provider_session_id == "s-9"
    assert [m.rendered for m in replayed.messages] == [m.rendered for m in live.messages]


class _Reporter(CLIEndpoint):
    """A CLI turn whose chunks carry nested data: a tool call, its result and the usage."""

    provider = "test_reporter"

    def __init__(self) -> None:
        super().__init__("v1")
        self.sent: list[StreamChunk] = []

    async def stream(self, request: CLIRequest) -> AsyncGenerator[StreamChunk, None]:
        usage = {"input_tokens": 5, "output_tokens": 2}
        self.sent = [
            StreamChunk(type="system", metadata={"session_id": "s-2"}),
            StreamChunk(type="tool_use", tool_id="t1", tool_name="ls", tool_input={"p": ["."]}),
            StreamChunk(type="tool_result", tool_id="t1", tool_output=[{"name": "a.py"}]),
            StreamChunk(type="text", content="One file.", is_delta=True),
            StreamChunk(type="result", metadata={"usage": usage, "cost_usd": 0.01}),
        ]
        for chunk in self.sent:
            yield chunk


def test_replays_share_frozen_chunks_equal_to_the_recorded_ones(tmp_path):
    """Replayed chunks are the ones validated on opening: equal to what the agent sent, and
    immutable. A chunk holding no data is handed out itself; one carrying data (session id,
    tool input and output, usage) as a copy -- so what a consumer does to one replay's
    chunks (an assignment raises; a write into a container) never reaches the next."""
    path = tmp_path / "agent.jsonl"
    agent = iModel(endpoint=_Reporter())

    async def turn() -> list[StreamChunk]:
        return [c async for c in agent.stream_cli(CLIRequest(prompt="Count files."))]

    with cassette(path):
        live = anyio.run(turn)
    with cassette(path, mode="none") as tape:
        first = anyio.run(turn)
        for chunk in first:  # a careless consumer
            with pytest.raises(ValidationError, match="frozen"):
                chunk.content = "changed"
            chunk.metadata["seen"] = True
            if chunk.tool_input:
                chunk.tool_input["p"].append("..")
            if chunk.tool_output:
                chunk.tool_output[0]["name"] = "b.py"
        first[-1].metadata["usage"]["input_tokens"] = 999
        second = anyio.run(turn)
        third = anyio.run(turn)
    assert tape.replayed == 3
    assert [type(c) for c in second] == [StreamChunk] * len(live)
    assert second == live and third == live
    assert [c.model_dump() for c in second] == [c.model_dump() for c in live]
    assert [c.model_fields_set for c in second] == [c.model_fields_set for c in live]
    assert second[-1].metadata["usage"] == {"input_tokens": 5, "output_tokens": 2}
    assert agent.provider_session_id == "s-2"
    shared = [a is b for a, b in zip(second, third, strict=True)]
    assert shared == [False, False, False, True, False]  # only the text chunk holds no data


def test_a_turn_replayed_into_two_branches_is_unchanged_by_edits_to_the_first(tmp_path):
    """`run` deep-copies what its messages keep of a chunk, so editing a branch's messages
    (tool arguments and output, the answer's usage) changes neither the chunks it came
    from nor the next replay of the turn."""
    path = tmp_path / "agent.jsonl"

    def run_turn() -> tuple[Branch, _Reporter]:
        agent = _Reporter()
        branch = Branch(chat_model=iModel(endpoint=agent))

        async def main() -> None:
            async for _ in branch.run("Count files."):
                pass

        anyio.run(main)
        return branch, agent

    def edit(branch: Branch) -> None:
        request, response, answer = list(branch.messages)[-3:]
        request.arguments["p"].append("..")
        response.output[0]["name"] = "b.py"
        response.arguments["p"].append("..")
        answer.metadata["usage"]["input_tokens"] = 999
        answer.metadata["seen"] = True

    with cassette(path):
        live, agent = run_turn()
    recorded, sent = snapshot(live), [c.model_dump() for c in agent.sent]
    edit(live)
    assert snapshot(live) != recorded
    assert [c.model_dump() for c in agent.sent] == sent
    with cassette(path, mode="none") as tape:
        first, _ = run_turn()
        assert snapshot(first) == recorded
        edit(first)
        second, _ = run_turn()
    assert tape.replayed == 2
    assert snapshot(second) == recorded
