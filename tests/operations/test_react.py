"""ReAct / ReActStream: bounded extension rounds, tools, nested lifecycle.

ADR-0021 D1 clause -> test
- the public ReAct wrapper defaults max_extensions to 3 -> test_facade_react_defaults_to_3_extensions
- ReActStream called directly defaults to 0 -> test_direct_and_facade_stream_default_to_no_extension
- None, zero and negative mean no extension work -> test_none_zero_and_negative_mean_no_extension
- above 100 warns and clamps to 100 -> test_above_100_warns_and_clamps_to_100
ADR-0021 D4 clause -> test
- ReAct sets the task-scoped variable while its nested turns run; one start/terminal
    -> test_facade_react_is_exactly_one_observed_run,
       test_inner_cli_runs_emit_no_lifecycle_of_their_own
- the variable is not left set for the stream's consumer -> test_stream_consumer_is_not_nested
ADR-0022 D6 (this project)
- tool-call-only round gets one follow-up, carrying the round's tool calls
    -> test_react_end_to_end_with_the_auto_model
- rounds stop when no extension is needed -> test_rounds_stop_when_no_extension_is_needed
"""

from __future__ import annotations

import json

import anyio
import pytest
from pydantic import BaseModel

from lion_nb import Branch, RunEnd, RunFailed, RunStart, Signal, iModel
from lion_nb.operations.communicate_op import communicate
from lion_nb.operations.react import ReAct, ReActAnalysis, ReActStream, extension_bound
from lion_nb.runtime.lifecycle import in_nested_turn


class Answer(BaseModel):
    text: str


def lookup(term: str) -> str:
    """Look a term up."""
    return f"definition of {term}"


def _looping_model(extension=True, log=None):
    """A model that always asks for another round (or never), answering JSON formats."""

    def reply(messages, response_format=None):
        name = (response_format or {}).get("name")
        if log is not None:
            log.append(name)
        if name == "ReActAnalysis":
            value = extension(len(log or ())) if callable(extension) else extension
            return json.dumps({"analysis": "thinking", "extension_needed": value})
        if response_format:
            return json.dumps({"text": "final"})
        return "final text"

    return iModel(provider="offline", model="function", function=reply)


def _collect(stream):
    async def go():
        return [item async for item in stream]

    return anyio.run(go)


def _analyses(items):
    return [i for i in items if isinstance(i, ReActAnalysis)]


# -- bounds ----------------------------------------------------------------------------------------
def test_facade_react_defaults_to_3_extensions():
    b = Branch(chat_model=_looping_model())

    async def go():
        return await b.ReAct({"instruction": "q"}, response_format=Answer, return_analysis=True)

    final, analyses = anyio.run(go)
    assert final == Answer(text="final")
    assert len(analyses) == 4  # the first round plus 3 extensions


def test_direct_and_facade_stream_default_to_no_extension():
    b = Branch(chat_model=_looping_model())
    items = _collect(ReActStream(b, {"instruction": "q"}))
    assert len(_analyses(items)) == 1 and items[-1] == "final text"
    items = _collect(b.ReActStream({"instruction": "q"}))
    assert len(_analyses(items)) == 1


@pytest.mark.parametrize("bound", [None, 0, -1, -50])
def test_none_zero_and_negative_mean_no_extension(bound):
    b = Branch(chat_model=_looping_model())
    items = _collect(ReActStream(b, {"instruction": "q"}, max_extensions=bound))
    assert len(_analyses(items)) == 1
    assert extension_bound(bound) == 0


def test_above_100_warns_and_clamps_to_100():
    b = Branch(chat_model=_looping_model())
    with pytest.warns(UserWarning, match="max_extensions=150"):
        items = _collect(ReActStream(b, {"instruction": "q"}, max_extensions=150))
    assert len(_analyses(items)) == 101
    with pytest.warns(UserWarning):
        assert extension_bound(101) == 100
    assert extension_bound(100) == 100


def test_rounds_stop_when_no_extension_is_needed():
    log = []
    b = Branch(chat_model=_looping_model(extension=lambda n: n < 2, log=log))
    final = anyio.run(lambda: ReAct(b, {"instruction": "q"}, max_extensions=10))
    assert log == ["ReActAnalysis", "ReActAnalysis", None]  # two rounds, then the answer
    assert final == "final text"


def test_extension_allowed_false_means_one_round():
    b = Branch(chat_model=_looping_model())
    items = _collect(
        ReActStream(b, {"instruction": "q"}, max_extensions=5, extension_allowed=False)
    )
    assert len(_analyses(items)) == 1


# -- end to end ------------------------------------------------------------------------------------
def test_react_end_to_end_with_the_auto_model():
    b = Branch()

    async def go():
        return await b.ReAct(
            {
                "instruction": "Define entropy: use lookup for entropy.",
                "context": {"field": "physics"},
            },
            tools=[lookup],
            response_format=Answer,
            return_analysis=True,
        )

    final, analyses = anyio.run(go)
    assert isinstance(final, Answer)
    (analysis,) = analyses
    assert analysis.action_responses[0].output.startswith("definition of")
    responses = [m for m in b.messages if m.kind == "action_response"]
    assert len(responses) == 1  # the tool ran once
    first = b.messages[0]
    assert first.kind == "instruction" and first.context == {"field": "physics"}


def test_instruct_may_be_a_model_and_must_have_an_instruction():
    class Ask(BaseModel):
        instruction: str
        guidance: str | None = None

    b = Branch(chat_model=_looping_model(extension=False))
    assert anyio.run(lambda: ReAct(b, Ask(instruction="q", guidance="be brief"))) == "final text"
    assert "be brief" in b.messages[0].rendered
    with pytest.raises(TypeError, match="`instruction`"):
        anyio.run(lambda: ReAct(b, {"guidance": "no instruction"}))


def test_interpret_rewrites_the_instruction_first():
    def reply(messages, response_format=None):
        if messages[0]["content"].startswith("You rewrite"):
            return "A clear, rewritten task."
        if response_format:
            return json.dumps({"analysis": "ok", "extension_needed": False})
        return "done"

    b = Branch(chat_model=iModel(provider="offline", model="function", function=reply))
    anyio.run(lambda: ReAct(b, {"instruction": "uh, do the thing"}, interpret=True))
    assert b.messages[0].instruction == "A clear, rewritten task."


# -- lifecycle -------------------------------------------------------------------------------------
def test_facade_react_is_exactly_one_observed_run():
    b = Branch()
    seen = []
    b.observe(Signal, seen.append)

    async def nested_middle(
        branch,
        instruction,
        chat_param,
        parse_param=None,
        clear_messages=False,
        skip_validation=False,
    ):
        # a facade call inside the loop must not announce a run of its own
        await branch.communicate("side note")
        return await communicate(
            branch, instruction, chat_param, parse_param, clear_messages, skip_validation
        )

    async def go():
        return await b.ReAct(
            {"instruction": "q"}, tools=[lookup], response_format=Answer, middle=nested_middle
        )

    assert isinstance(anyio.run(go), Answer)
    runs = [s for s in seen if isinstance(s, (RunStart, RunEnd, RunFailed))]
    assert [type(s).__name__ for s in runs] == ["RunStart", "RunEnd"]
    assert runs[0].operation == "ReAct"


def test_inner_cli_runs_emit_no_lifecycle_of_their_own():
    turns = [
        [
            {"type": "text", "content": '{"analysis": "a", "extension_needed": false}'},
            {"type": "result"},
        ],
        [{"type": "text", "content": "the answer"}, {"type": "result"}],
    ]
    cli = iModel(provider="offline_cli", model="scripted", turns=turns)
    b = Branch(chat_model=cli)
    seen = []
    b.observe(RunStart, seen.append)
    items = _collect(ReActStream(b, {"instruction": "q"}))
    assert items[-1] == "the answer" and len(cli.endpoint.calls) == 2
    assert seen == []
    # control: the same CLI stream outside ReAct announces its run
    cli2 = iModel(provider="offline_cli", model="scripted", turns=[turns[1]])
    b2 = Branch(chat_model=cli2)
    b2.observe(RunStart, seen.append)
    _collect(b2.run("q"))
    assert len(seen) == 1


def test_stream_consumer_is_not_nested():
    b = Branch(chat_model=_looping_model())
    flags = []

    async def go():
        async for _ in ReActStream(b, {"instruction": "q"}, max_extensions=2):
            flags.append(in_nested_turn())

    anyio.run(go)
    assert flags == [False, False, False, False]
