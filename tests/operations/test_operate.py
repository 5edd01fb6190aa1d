"""operate: the coordinator around one Middle call (ADR-0021 D5, docs/adr/0022).

ADR-0021 D5 clause -> test
- operate calls the selected Middle exactly once
    -> test_injected_middle_is_called_exactly_once,
       test_api_model_uses_communicate_once, test_cli_model_uses_run_and_collect_once
- the adapter owns recording; operate appends no duplicate instruction or response
    -> test_operate_appends_nothing_around_the_middle, test_injected_middle_is_called_exactly_once
- communicate and run_and_collect are the canonical adapters; any async callable may be injected
    -> test_api_model_uses_communicate_once, test_cli_model_uses_run_and_collect_once,
       test_injected_middle_is_called_exactly_once
- clear_messages is a pre-exchange instruction to the adapter -> test_clear_messages_is_forwarded_to_the_adapter
- skip_validation is forwarded; outer effect (ADR-0022 D5): raw result, no actions, no writeback
    -> test_skip_validation_is_forwarded_and_returns_the_raw_result_without_actions
- the protocol converts no exceptions to values -> test_a_middle_exception_propagates
ADR-0021 D4 operate runs under the observed wrapper, one start + one terminal
    -> test_facade_operate_is_one_observed_run
ADR-0016 D3 writeback after operate actually executed actions with a non-None response
    -> test_writeback_runs_only_when_actions_ran
ADR-0022 (this project)
- D2 schema: caller model subclass with action fields; tools offered natively to API models
    -> test_actions_extend_the_schema_and_offer_tools_natively
- D2 tools registered once; a different tool under a taken name is refused
    -> test_tools_are_registered_once_and_clashes_refused
- D3 structured output -> test_structured_output_with_the_auto_model
- D3 tool-call-only answer -> test_tool_use_with_the_auto_model_then_the_answer
- D3 handle_validation -> test_handle_validation_decides_an_unparseable_answer
- D4 JSON action_requests run, model keeps its type -> test_json_action_requests_run_and_the_model_keeps_its_type
- D4 invoke_actions=False runs nothing -> test_invoke_actions_false_runs_nothing
"""

from __future__ import annotations

import json

import anyio
import pytest
from pydantic import BaseModel

from lion_nb import ActionResponse, Branch, RunEnd, RunStart, Signal, iModel
from lion_nb.errors import ItemExistsError, ParseError
from lion_nb.operations.communicate_op import communicate
from lion_nb.operations.operate_op import operate, prepare_operate_kw


class Weather(BaseModel):
    city: str
    temp: float


def get_weather(city: str) -> dict:
    """The current weather in a city."""
    return {"city": city, "temp": 21.5}


def _scripted(*responses):
    return iModel(provider="offline", model="scripted", responses=list(responses))


def _operate(branch, **kw):
    async def go():
        return await branch.operate(**kw)

    return anyio.run(go)


class CountingMiddle:
    """A Middle that records its arguments and delegates to communicate."""

    def __init__(self):
        self.calls = []

    async def __call__(
        self,
        branch,
        instruction,
        chat_param,
        parse_param=None,
        clear_messages=False,
        skip_validation=False,
    ):
        self.calls.append(
            {
                "chat_param": chat_param,
                "parse_param": parse_param,
                "clear": clear_messages,
                "skip": skip_validation,
            }
        )
        return await communicate(
            branch, instruction, chat_param, parse_param, clear_messages, skip_validation
        )


# -- the Middle seam -------------------------------------------------------------------------------
def test_injected_middle_is_called_exactly_once():
    middle = CountingMiddle()
    b = Branch()
    out = _operate(
        b,
        instruction="Use get_weather for Oslo.",
        response_format=Weather,
        tools=[get_weather],
        middle=middle,
    )
    assert len(middle.calls) == 1
    assert out["action_responses"][0]["output"]["temp"] == 21.5
    assert [m.kind for m in b.messages] == [
        "instruction",
        "assistant_response",
        "action_request",
        "action_response",
    ]


def test_api_model_uses_communicate_once():
    model = _scripted('{"city": "Oslo", "temp": 3}')
    b = Branch(chat_model=model)
    assert _operate(b, instruction="q", response_format=Weather) == Weather(city="Oslo", temp=3)
    assert len(model.endpoint.calls) == 1


def test_cli_model_uses_run_and_collect_once():
    cli = iModel(
        provider="offline_cli",
        model="scripted",
        turns=[[{"type": "text", "content": '{"city": "Rome", "temp": 30}'}, {"type": "result"}]],
    )
    b = Branch(chat_model=cli)
    got = _operate(b, instruction="q", response_format=Weather)
    assert got == Weather(city="Rome", temp=30)
    assert len(cli.endpoint.calls) == 1
    assert [m.kind for m in b.messages] == ["instruction", "assistant_response"]


def test_operate_appends_nothing_around_the_middle():
    b = Branch(chat_model=_scripted("plain answer"))
    assert _operate(b, instruction="q") == "plain answer"
    assert [m.kind for m in b.messages] == ["instruction", "assistant_response"]


def test_clear_messages_is_forwarded_to_the_adapter():
    middle = CountingMiddle()
    b = Branch(system="s", chat_model=_scripted("one", "two"))
    _operate(b, instruction="a")
    _operate(b, instruction="b", clear_messages=True, middle=middle)
    assert middle.calls[0]["clear"] is True
    assert [m.kind for m in b.messages] == ["system", "instruction", "assistant_response"]


def test_skip_validation_is_forwarded_and_returns_the_raw_result_without_actions():
    middle = CountingMiddle()
    written = []

    class Provider:
        async def provide(self, branch, instruction):
            return None

        async def writeback(self, branch, responses):
            written.append(responses)

    b = Branch(
        system="s",
        chat_model=_scripted(
            {
                "content": "raw text",
                "tool_calls": [{"name": "get_weather", "arguments": {"city": "X"}}],
            }
        ),
    )
    b.providers.register(Provider())
    out = _operate(
        b,
        instruction="q",
        response_format=Weather,
        tools=[get_weather],
        skip_validation=True,
        middle=middle,
    )
    assert out == "raw text"
    assert middle.calls[0]["skip"] is True
    assert not any(isinstance(m, ActionResponse) for m in b.messages)
    assert written == []


def test_a_middle_exception_propagates():
    async def failing(
        branch,
        instruction,
        chat_param,
        parse_param=None,
        clear_messages=False,
        skip_validation=False,
    ):
        raise LookupError("adapter broke")

    with pytest.raises(LookupError, match="adapter broke"):
        _operate(Branch(), instruction="q", middle=failing)


def test_facade_operate_is_one_observed_run():
    b = Branch()
    seen = []
    b.observe(Signal, seen.append)
    _operate(b, instruction="q", response_format=Weather)
    runs = [s for s in seen if isinstance(s, (RunStart, RunEnd))]
    assert [type(s).__name__ for s in runs] == ["RunStart", "RunEnd"]
    assert runs[0].operation == "operate" and isinstance(runs[1].result, Weather)


# -- schema and tools ------------------------------------------------------------------------------
def test_actions_extend_the_schema_and_offer_tools_natively():
    middle = CountingMiddle()
    b = Branch()
    _operate(
        b,
        instruction="q",
        response_format=Weather,
        actions=True,
        tools=[get_weather],
        middle=middle,
    )
    param = middle.calls[0]["chat_param"]
    assert issubclass(param.response_format, Weather)
    schema = param.response_format.model_json_schema()
    assert (
        "action_requests" in schema["properties"] and "action_responses" not in schema["properties"]
    )
    assert middle.calls[0]["parse_param"].response_format is param.response_format
    assert [t["function"]["name"] for t in param.tool_schemas] == ["get_weather"]


def test_cli_models_get_no_native_tool_schemas():
    captured = []

    async def middle(
        branch,
        instruction,
        chat_param,
        parse_param=None,
        clear_messages=False,
        skip_validation=False,
    ):
        captured.append(chat_param)
        return '{"city": "A", "temp": 1}'

    b = Branch(chat_model=iModel(provider="offline_cli", model="auto"))
    out = _operate(b, instruction="q", response_format=Weather, tools=[get_weather], middle=middle)
    assert captured[0].tool_schemas is None
    assert isinstance(out, Weather) and out.action_responses == []


def test_tools_are_registered_once_and_clashes_refused():
    b = Branch(chat_model=_scripted("a", "b"))
    _operate(b, instruction="q", tools=[get_weather])
    _operate(b, instruction="q", tools=[get_weather])
    assert list(b.tools) == ["get_weather"]

    def other():
        """Another tool under the same name."""

    other.__name__ = "get_weather"
    with pytest.raises(ItemExistsError, match="`get_weather`"):
        _operate(b, instruction="q", tools=[other])


# -- validation and results ------------------------------------------------------------------------
def test_structured_output_with_the_auto_model():
    b = Branch()
    out = _operate(b, instruction="weather?", response_format=Weather)
    assert isinstance(out, Weather)
    assert json.loads(b.messages[-1].response) == out.model_dump()


def test_tool_use_with_the_auto_model_then_the_answer():
    b = Branch()
    first = _operate(
        b,
        instruction="Weather in Oslo? Use get_weather for Oslo.",
        response_format=Weather,
        tools=[get_weather],
    )
    assert first["response"] is None
    assert first["action_requests"][0]["function"] == "get_weather"
    assert first["action_responses"][0]["output"]["temp"] == 21.5
    second = _operate(b, instruction="answer now", response_format=Weather)
    assert isinstance(second, Weather)
    kinds = [m.kind for m in b.messages]
    assert kinds == [
        "instruction",
        "assistant_response",
        "action_request",
        "action_response",
        "instruction",
        "assistant_response",
    ]


def test_handle_validation_decides_an_unparseable_answer():
    def branch():
        return Branch(chat_model=_scripted("not json"), parse_model=_scripted())

    assert (
        _operate(branch(), instruction="q", response_format=Weather, num_parse_retries=0)
        == "not json"
    )
    assert (
        _operate(
            branch(),
            instruction="q",
            response_format=Weather,
            num_parse_retries=0,
            handle_validation="return_none",
        )
        is None
    )
    with pytest.raises(ParseError, match="`Weather`"):
        _operate(
            branch(),
            instruction="q",
            response_format=Weather,
            num_parse_retries=0,
            handle_validation="raise",
        )


def test_json_action_requests_run_and_the_model_keeps_its_type():
    answer = {
        "city": "Oslo",
        "temp": 3,
        "action_requests": [{"function": "get_weather", "arguments": {"city": "Oslo"}}],
    }
    b = Branch(chat_model=_scripted(json.dumps(answer)))
    out = _operate(
        b,
        instruction="q",
        response_format=Weather,
        tools=[get_weather],
        action_strategy="sequential",
    )
    assert isinstance(out, Weather) and out.city == "Oslo"
    assert out.action_responses[0].output == {"city": "Oslo", "temp": 21.5}
    assert [m.kind for m in b.messages][-2:] == ["action_request", "action_response"]


def test_native_and_unknown_tool_calls_are_contained():
    b = Branch(chat_model=_scripted({"tool_calls": [{"name": "teleport", "arguments": {}}]}))
    out = _operate(b, instruction="q", tools=[get_weather])
    (response,) = out["action_responses"]
    assert response["is_error"] and "`get_weather`" in response["output"]["error"]


def test_invoke_actions_false_runs_nothing():
    b = Branch()
    out = _operate(
        b,
        instruction="Use get_weather for Oslo.",
        response_format=Weather,
        tools=[get_weather],
        invoke_actions=False,
    )
    assert out["action_requests"][0]["function"] == "get_weather" and out["action_responses"] == []
    assert not any(m.kind == "action_response" for m in b.messages)


def test_writeback_runs_only_when_actions_ran():
    written = []

    class Notes:
        async def provide(self, branch, instruction):
            return None

        async def writeback(self, branch, responses):
            written.append([r.output for r in responses])

    def fresh(*responses):
        b = Branch(system="s", chat_model=_scripted(*responses))
        b.providers.register(Notes())
        return b

    calls = {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}
    _operate(fresh("no tools"), instruction="q")  # actions off
    _operate(fresh("no calls"), instruction="q", tools=[get_weather])  # on, nothing requested
    _operate(fresh(calls), instruction="q", tools=[get_weather], invoke_actions=False)
    assert written == []
    _operate(fresh(calls), instruction="q", tools=[get_weather])
    assert written == [[{"city": "Oslo", "temp": 21.5}]]


def test_prepare_operate_kw_builds_params_and_clamps_retries():
    b = Branch()
    with pytest.warns(UserWarning, match="num_parse_retries=8"):
        kw = prepare_operate_kw(
            b, instruction="q", tools=[get_weather], num_parse_retries=8, temperature=0.2
        )
    assert kw["actions"] is True and kw["parse_param"].max_retries == 5
    assert kw["chat_param"].imodel is b.chat_model and kw["chat_param"].imodel_kw == {
        "temperature": 0.2
    }
    out = anyio.run(
        lambda: operate(b, **prepare_operate_kw(b, instruction="q", response_format=Weather))
    )
    assert isinstance(out, Weather)


def test_frozen_models_carry_action_results_and_model_strings_are_accepted():
    from pydantic import ConfigDict

    class Frozen(BaseModel):
        model_config = ConfigDict(frozen=True)
        city: str

    answer = {
        "city": "Oslo",
        "action_requests": [{"function": "get_weather", "arguments": {"city": "Oslo"}}],
    }
    b = Branch(chat_model=_scripted(json.dumps(answer)))
    out = _operate(b, instruction="q", response_format=Frozen, tools=[get_weather])
    assert isinstance(out, Frozen) and out.action_responses[0].output["temp"] == 21.5
    kw = prepare_operate_kw(b, instruction="q", chat_model="offline/auto")
    assert kw["chat_param"].imodel.provider == "offline" and kw["chat_param"].imodel.model == "auto"


def test_structured_output_through_operate_with_a_cli_model():
    from pydantic import BaseModel

    from lion_nb import Branch, iModel

    class Point(BaseModel):
        x: int
        y: int

    turn = [
        {"type": "text", "content": 'Here it is: ```json\n{"x": 1, "y": 2}\n```'},
        {"type": "result"},
    ]
    branch = Branch(chat_model=iModel(provider="offline_cli", model="scripted", turns=[turn]))
    result = anyio.run(
        lambda: branch.operate(instruction="A point, please.", response_format=Point)
    )
    assert result == Point(x=1, y=2)


def test_unparseable_cli_answer_says_to_pass_an_api_parse_model():
    from pydantic import BaseModel

    from lion_nb import Branch, iModel
    from lion_nb.errors import ParseError

    class Point(BaseModel):
        x: int

    turn = [{"type": "text", "content": "no json here"}, {"type": "result"}]
    branch = Branch(chat_model=iModel(provider="offline_cli", model="scripted", turns=[turn]))
    with pytest.raises(ParseError, match=r"is a CLI agent.*`parse_model=`"):
        anyio.run(
            lambda: branch.operate(
                instruction="x", response_format=Point, handle_validation="raise"
            )
        )
    assert len(branch.chat_model.endpoint.calls) == 1  # no second (API) request to the agent
