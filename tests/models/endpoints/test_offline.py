"""The embedded offline models, through the public iModel path."""

from __future__ import annotations

import datetime as dt
import enum
import inspect
import json
import time
import uuid
from typing import Annotated, Any, Literal, Optional, Union

import anyio
import pytest
from pydantic import BaseModel, Field

from lion_nb.errors import (
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
    ScriptExhaustedError,
    ServerError,
)
from lion_nb.models.endpoints import ChatRequest, ModelResponse, ToolCall, streaming_to
from lion_nb.models.endpoints._fake_json import example_for
from lion_nb.models.imodel import iModel
from lion_nb.protocols.actions import Tool
from lion_nb.protocols.messages import Instruction


def ask(model: iModel, text: str = "What is the capital of France?", **kw: Any):
    request = ChatRequest(messages=[{"role": "user", "content": text}], **kw)
    return anyio.run(model.invoke, request)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


# -- auto: plain text ------------------------------------------------------------------------------
def test_auto_answers_deterministically_quoting_the_question():
    model = iModel("offline/auto")
    first, second = ask(model), ask(model)
    assert first.status == "completed", first.error
    text = first.response.text
    assert text == second.response.text
    assert text.startswith("Offline model:")
    assert "“What is the capital of France?”" in text
    assert "LION_CHAT_PROVIDER" in text
    assert first.response.model == "offline/auto"
    assert first.response.finish_reason == "stop"
    assert first.response.tool_calls == []


def test_auto_reports_usage_and_an_openai_shaped_raw_response():
    response = ask(iModel(provider="offline", model="auto")).response
    usage = response.usage
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    raw = response.raw
    assert raw["object"] == "chat.completion"
    assert raw["choices"][0]["message"] == {"role": "assistant", "content": response.text}
    assert raw["choices"][0]["finish_reason"] == "stop"
    assert raw["usage"]["prompt_tokens"] == usage["input_tokens"]
    assert response.request_id == raw["id"]


def test_auto_truncates_a_long_question_and_quotes_the_last_user_message():
    long = "word " * 100
    request = ChatRequest(
        messages=[
            {"role": "system", "content": "Be brief."},
            user("an earlier question"),
            {"role": "assistant", "content": "an earlier answer"},
            user(long),
        ]
    )
    text = anyio.run(iModel("offline/auto").invoke, request).response.text
    assert "earlier" not in text
    quoted = text.split("“")[1].split("”")[0]
    assert quoted.endswith("…") and len(quoted) <= 80


def test_auto_reads_multimodal_content_parts():
    message = Instruction(instruction="Describe this", images=["data:image/png;base64,AA"])
    request = ChatRequest(messages=[message.chat_msg()])
    assert "“Describe this”" in anyio.run(iModel("offline/auto").invoke, request).response.text


def test_default_model_without_settings_is_offline_auto(monkeypatch):
    monkeypatch.delenv("LION_CHAT_PROVIDER", raising=False)
    monkeypatch.delenv("LION_CHAT_MODEL", raising=False)
    model = iModel()
    assert (model.provider, model.model) == ("offline", "auto")
    assert ask(model).status == "completed"


def test_unknown_offline_model_lists_the_models():
    with pytest.raises(ConfigurationError) as info:
        iModel(provider="offline", model="gpt-9")
    message = str(info.value)
    assert "`gpt-9`" in message
    for name in ("auto", "scripted", "function"):
        assert name in message


def test_settings_for_another_model_are_refused_with_the_fix():
    with pytest.raises(ConfigurationError, match="offline/scripted"):
        iModel("offline/auto", responses=["hi"])
    with pytest.raises(ConfigurationError, match="offline/function"):
        iModel("offline/scripted", function=lambda messages: "hi")
    with pytest.raises(ConfigurationError, match="delay"):
        iModel("offline/auto", delay=-1)


# -- auto: structured output ---------------------------------------------------------------------
class Mood(str, enum.Enum):
    happy = "happy"
    sad = "sad"


class Priority(enum.IntEnum):
    low = 1
    high = 2


class Address(BaseModel):
    street: str
    postcode: Annotated[str, Field(pattern=r"^\d{5}(-\d{4})?$")]
    country: Literal["FR", "DE"] = "FR"


class Person(BaseModel):
    name: str = Field(min_length=2, max_length=40)
    age: int = Field(ge=0, le=150)
    mood: Mood
    priority: Priority
    born: dt.date
    seen_at: dt.datetime
    addresses: list[Address] = Field(min_length=1)
    nickname: Optional[str] = None
    manager: Optional[Person] = None
    reports: list[Person] = []


class Cat(BaseModel):
    kind: Literal["cat"] = "cat"
    lives: int = Field(ge=1, le=9)


class Dog(BaseModel):
    kind: Literal["dog"] = "dog"
    weight: float = Field(gt=0, lt=80)


class Report(BaseModel):
    """A report with a bit of everything."""

    id: uuid.UUID
    title: str
    score: float = Field(gt=0, le=1)
    ratio: Annotated[int, Field(multiple_of=5, gt=7)]
    tags: set[str] = Field(min_length=2)
    pair: tuple[int, str]
    counts: dict[str, int]
    pet: Union[Cat, Dog] = Field(discriminator="kind")
    owner: Person
    either: Union[int, str, None]
    window: dt.timedelta
    flag: bool


@pytest.mark.parametrize("target", [Address, Person, Cat, Report])
def test_auto_json_validates_against_pydantic_models(target: type[BaseModel]):
    schema = target.model_json_schema()
    fmt = {"name": target.__name__, "schema": schema}
    call = ask(iModel("offline/auto"), "Fill this in.", response_format=fmt)
    assert call.status == "completed", call.error
    instance = target.model_validate_json(call.response.text)
    assert isinstance(instance, target)
    assert call.response.finish_reason == "stop"


def test_auto_json_is_deterministic_and_uses_defaults():
    fmt = {"name": "Address", "schema": Address.model_json_schema()}
    first = ask(iModel("offline/auto"), response_format=fmt).response.text
    assert first == ask(iModel("offline/auto"), response_format=fmt).response.text
    assert json.loads(first)["country"] == "FR"


RAW_SCHEMAS = [
    {"type": "integer", "minimum": 5, "exclusiveMaximum": 6},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    {"type": "number", "multipleOf": 0.25, "minimum": 0.3},
    {"type": "integer", "multipleOf": 5, "minimum": -12, "maximum": -6},
    {"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": True, "minItems": 3},
    {"type": "array", "items": {"type": "integer"}, "uniqueItems": True, "minItems": 4},
    {"type": "array", "prefixItems": [{"const": "x"}, {"type": "integer"}], "items": False},
    {"type": "array", "contains": {"const": 7}, "items": {"type": "integer"}},
    {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "integer", "minimum": 3}}, "required": ["b"]},
        ]
    },
    {"oneOf": [{"type": "null"}, {"type": "object", "properties": {"x": {"const": 1}}}]},
    {"type": ["null", "string"], "minLength": 3},
    {"type": "object", "minProperties": 2, "additionalProperties": {"type": "number"}},
    {"type": "string", "pattern": "^(foo|bar)[0-9]{2,}\\.txt$"},
    {"type": "string", "pattern": "^[^abc]+$"},
    {"type": "string", "pattern": "(?P<x>ab)-(?P=x)"},
    {"type": "string", "format": "email"},
    {"type": "string", "format": "date-time"},
    {"type": "string", "format": "time"},
    {"type": "string", "format": "uri"},
    {"type": "string", "format": "ipv4"},
    {"type": "string", "format": "uuid"},
    {
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
        "$ref": "#/$defs/Node",
    },
    {"type": "integer", "minimum": 1, "exclusiveMinimum": True},  # draft-04 form
    {"enum": [None, 3]},
    {"anyOf": [{"type": "string"}, {"type": "integer"}], "default": 5},
    {},
]


@pytest.mark.parametrize("schema", RAW_SCHEMAS, ids=lambda s: json.dumps(s)[:40])
def test_generated_values_validate_against_json_schemas(schema: dict[str, Any]):
    import jsonschema

    validator = jsonschema.Draft202012Validator
    if schema.get("exclusiveMinimum") is True:
        validator = jsonschema.Draft4Validator
    value = example_for(schema)
    validator(schema, format_checker=validator.FORMAT_CHECKER).validate(value)


def test_recursive_models_end_with_the_null_branch():
    value = example_for(Person.model_json_schema())
    assert value["manager"] is None and value["reports"] == []


def test_auto_answers_request_fields_rendered_in_the_prompt():
    message = Instruction(
        instruction="Rate the film.",
        request_fields={"summary": "str", "score": "int", "ok": "bool", "tags": "list[str]"},
    )
    call = anyio.run(iModel("offline/auto").invoke, ChatRequest(messages=[message.chat_msg()]))
    data = json.loads(call.response.text)
    assert set(data) == {"summary", "score", "ok", "tags"}
    assert isinstance(data["summary"], str) and isinstance(data["score"], int)
    assert isinstance(data["ok"], bool) and isinstance(data["tags"], list)


def test_auto_answers_a_schema_rendered_in_the_prompt():
    message = Instruction(instruction="Who?", response_format=Person.model_json_schema())
    call = anyio.run(iModel("offline/auto").invoke, ChatRequest(messages=[message.chat_msg()]))
    Person.model_validate_json(call.response.text)


# -- auto: tools ---------------------------------------------------------------------------------
def multiply(a: int, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def lookup(city: str, units: Literal["metric", "imperial"] = "metric", when: dt.date | None = None):
    """Look up the weather."""
    return {"city": city, "temp": 21}


TOOLS = [Tool(multiply), Tool(lookup)]


def run_tools_round(messages: list[dict[str, Any]], **kw: Any) -> ModelResponse:
    request = ChatRequest(messages=messages, tools=[t.schema for t in TOOLS], **kw)
    call = anyio.run(iModel("offline/auto").invoke, request)
    assert call.status == "completed", call.error
    return call.response


def tool_messages(calls: list[ToolCall]) -> list[dict[str, Any]]:
    """What a conversation records after running ``calls``: the request, then each result."""
    results = {"multiply": "6.0", "lookup": json.dumps({"city": "Paris", "temp": 21})}
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in calls
        ],
    }
    return [assistant] + [
        {"role": "tool", "tool_call_id": c.id, "content": results[c.name]} for c in calls
    ]


NAMED = "Use multiply on 2 and 3, then lookup 'Paris'."


def test_auto_calls_each_named_tool_once_with_valid_arguments():
    response = run_tools_round([user(NAMED)])
    assert response.text == ""
    assert response.finish_reason == "tool_calls"
    assert [c.name for c in response.tool_calls] == ["multiply", "lookup"]
    assert len({c.id for c in response.tool_calls}) == 2
    raw_calls = response.raw["choices"][0]["message"]["tool_calls"]
    assert [json.loads(c["function"]["arguments"]) for c in raw_calls] == [
        c.arguments for c in response.tool_calls
    ]
    for call, tool in zip(response.tool_calls, TOOLS, strict=True):
        anyio.run(tool.call, call.arguments)  # raises if the arguments do not validate


def test_auto_answers_with_the_tool_results_once_every_named_tool_ran():
    first = run_tools_round([user(NAMED)])
    messages = [user(NAMED), *tool_messages(first.tool_calls)]
    final = run_tools_round(messages)
    assert final.tool_calls == [] and final.finish_reason == "stop"
    assert "multiply → 6.0" in final.text
    assert "lookup → " in final.text and "Paris" in final.text
    assert f"“{NAMED}”" in final.text


def test_auto_final_answer_is_json_when_a_format_is_asked():
    fmt = {"name": "Address", "schema": Address.model_json_schema()}
    first = run_tools_round([user(NAMED)], response_format=fmt)
    assert len(first.tool_calls) == 2
    final = run_tools_round([user(NAMED), *tool_messages(first.tool_calls)], response_format=fmt)
    Address.model_validate_json(final.text)


def test_auto_calls_only_the_tools_not_yet_called_this_turn():
    first = run_tools_round([user(NAMED)])
    only_multiply = [c for c in first.tool_calls if c.name == "multiply"]
    response = run_tools_round([user(NAMED), *tool_messages(only_multiply)])
    assert [c.name for c in response.tool_calls] == ["lookup"]


def test_a_new_user_message_starts_a_new_turn_of_tool_calls():
    first = run_tools_round([user(NAMED)])
    history = [user(NAMED), *tool_messages(first.tool_calls)]
    history += [
        {"role": "assistant", "content": "done"},
        user("Again: multiply 4 by 5, lookup 'Oslo'."),
    ]
    again = run_tools_round(history)
    assert [c.name for c in again.tool_calls] == ["multiply", "lookup"]
    assert {c.id for c in again.tool_calls}.isdisjoint({c.id for c in first.tool_calls})


def test_tool_choice_none_and_named_tool_choice_are_respected():
    assert run_tools_round([user("go")], options={"tool_choice": "none"}).tool_calls == []
    named = {"type": "function", "function": {"name": "lookup"}}
    response = run_tools_round([user("Weather in 'Oslo'?")], options={"tool_choice": named})
    assert [c.name for c in response.tool_calls] == ["lookup"]
    assert response.tool_calls[0].arguments == {"city": "Oslo"}


NOTES = [
    {
        "name": "add_note",
        "description": "Add a note to the notebook of notes.",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
    {"name": "list_notes", "description": "Every note, one a line.", "parameters": {}},
    {"name": "clear_notes", "description": "Every note goes.", "parameters": {}},
    {"name": "tidy", "description": "Remove every file in the folder.", "parameters": {}},
]


def notes_round(text: str, **kw: Any) -> ModelResponse:
    call = anyio.run(
        iModel("offline/auto").invoke, ChatRequest(messages=[user(text)], tools=NOTES, **kw)
    )
    assert call.status == "completed", call.error
    return call.response


def test_auto_calls_no_tool_the_instruction_does_not_name():
    response = notes_round("Add a note that says hi.")
    assert response.tool_calls == [] and response.finish_reason == "stop"
    assert "`add_note`" in response.text and "names it" in response.text


def test_auto_never_calls_a_destructive_tool_even_when_named():
    for text in ("Call clear_notes now.", "Use tidy.", "call clear_notes and list_notes"):
        response = notes_round(text)
        assert "clear_notes" not in [c.name for c in response.tool_calls]
        assert "tidy" not in [c.name for c in response.tool_calls]
        assert "never calls it" in response.text or response.tool_calls
    both = notes_round("call clear_notes and list_notes")
    assert [c.name for c in both.tool_calls] == ["list_notes"]
    forced = {"type": "function", "function": {"name": "clear_notes"}}
    assert notes_round("Go.", options={"tool_choice": forced}).tool_calls == []


def test_auto_takes_a_required_string_from_a_quote_or_the_text_after_the_name():
    quoted = notes_round("Please call add_note with 'buy milk'.")
    assert [(c.name, c.arguments) for c in quoted.tool_calls] == [
        ("add_note", {"text": "buy milk"})
    ]
    after = notes_round("use add_note: buy oat milk")
    assert after.tool_calls[0].arguments == {"text": "buy oat milk"}
    clause = notes_round("Use add_note for call Ada, then list_notes.")
    assert clause.tool_calls[0].arguments == {"text": "call Ada"}
    explicit = notes_round('call add_note text="call me" and list_notes')
    assert [(c.name, c.arguments) for c in explicit.tool_calls] == [
        ("add_note", {"text": "call me"}),
        ("list_notes", {}),
    ]


def test_auto_does_not_call_a_tool_whose_required_argument_is_missing():
    response = notes_round("Use add_note.")
    assert response.tool_calls == []
    assert "`add_note` needs `text`" in response.text
    weather = run_tools_round([user("Use lookup.")])
    assert weather.tool_calls == [] and "`lookup` needs `city`" in weather.text


# -- streaming and delay ---------------------------------------------------------------------------
def test_text_streams_in_word_fragments_to_the_sink():
    fragments: list[str] = []

    async def main() -> ModelResponse:
        with streaming_to(fragments.append):
            call = await iModel("offline/auto").invoke(ChatRequest(messages=[user("Hello there")]))
        return call.response

    response = anyio.run(main)
    assert len(fragments) > 5
    assert "".join(fragments) == response.text
    assert all(f.strip() and len(f.split()) == 1 for f in fragments)


def test_stream_flag_without_a_sink_still_answers():
    assert ask(iModel("offline/auto"), stream=True).status == "completed"


def test_delay_slows_each_fragment_even_without_streaming():
    model = iModel("offline/scripted", responses=["one two three four"], delay=0.03)
    start = time.perf_counter()
    assert ask(model).response.text == "one two three four"
    assert time.perf_counter() - start >= 0.11


def test_a_slow_run_can_be_cancelled():
    model = iModel("offline/auto", delay=1.0)

    async def main() -> float:
        start = time.perf_counter()
        with anyio.move_on_after(0.05):
            await model.invoke(ChatRequest(messages=[user("take your time")]))
            raise AssertionError("the call should have been cancelled")
        return time.perf_counter() - start

    assert anyio.run(main) < 0.5


# -- scripted --------------------------------------------------------------------------------------
def test_scripted_plays_responses_in_order_and_records_requests():
    model = iModel(
        provider="offline",
        model="scripted",
        responses=[
            "first",
            {
                "content": "let me check",
                "tool_calls": [{"name": "lookup", "arguments": {"city": "Oslo"}}],
            },
            {"tool_calls": [{"name": "multiply", "arguments": '{"a": 2, "b": 3}', "id": "c1"}]},
        ],
    )
    one = ask(model, "q1").response
    two = ask(model, "q2").response
    three = ask(model, "q3").response
    assert one.text == "first" and one.finish_reason == "stop"
    assert two.text == "let me check" and two.finish_reason == "tool_calls"
    assert (two.tool_calls[0].name, two.tool_calls[0].arguments) == ("lookup", {"city": "Oslo"})
    assert two.tool_calls[0].id
    assert three.tool_calls == [ToolCall(id="c1", name="multiply", arguments={"a": 2, "b": 3})]
    calls = model.endpoint.calls
    assert [c.messages[-1]["content"] for c in calls] == ["q1", "q2", "q3"]
    assert all(isinstance(c, ChatRequest) for c in calls)
    assert model.endpoint.remaining == 0


def test_scripted_running_out_fails_the_call_with_a_clear_error():
    model = iModel("offline/scripted", responses=["a", "b", "c"])
    for _ in range(3):
        assert ask(model).status == "completed"
    call = ask(model)
    assert call.status == "failed"
    assert isinstance(call.error, ScriptExhaustedError)
    assert "`offline/scripted` has played all 3 responses" in str(call.error)
    assert "`responses=`" in str(call.error)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (500, ServerError),
        (503, ServerError),
        (529, OverloadedError),
        (429, RateLimitError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (400, BadRequestError),
        (None, ProviderError),
    ],
)
def test_scripted_errors_raise_the_matching_provider_error(status, kind):
    item: dict[str, Any] = {"error": "boom"}
    if status is not None:
        item["status"] = status
    call = ask(iModel("offline/scripted", responses=[item, "after"]))
    assert call.status == "failed"
    assert type(call.error) is kind
    assert call.error.status == status and call.error.provider_message == "boom"


def test_scripted_error_then_success_supports_retries():
    model = iModel("offline/scripted", responses=[{"error": "busy", "status": 429}, "ok"])
    assert ask(model).status == "failed"
    assert ask(model).response.text == "ok"


@pytest.mark.parametrize(
    ("responses", "needle"),
    [
        ("just a string", "is a list"),
        ([42], "`responses[0]` is int"),
        (["ok", {"text": "hi"}], "`responses[1]` has unknown key(s) 'text'"),
        ([{"tool_calls": [{"arguments": {}}]}], "needs a `name`"),
    ],
)
def test_scripted_responses_are_checked_when_the_model_is_built(responses, needle):
    with pytest.raises(ConfigurationError) as info:
        iModel("offline/scripted", responses=responses)
    assert needle in str(info.value)


def test_scripted_serializes_its_script_and_a_copy_replays_it():
    model = iModel("offline/scripted", responses=["a", {"content": "b"}], delay=0.001)
    data = model.to_dict()
    assert json.loads(json.dumps(data)) == {
        "provider": "offline",
        "model": "scripted",
        "endpoint": {"responses": ["a", {"content": "b"}], "delay": 0.001},
    }
    ask(model)
    clone = model.copy()
    assert ask(clone).response.text == "a"
    assert len(clone.endpoint.calls) == 1 and len(model.endpoint.calls) == 1
    assert iModel.from_dict(data).endpoint.responses == ["a", {"content": "b"}]


def test_auto_has_nothing_to_save():
    assert iModel("offline/auto").to_dict() == {"provider": "offline", "model": "auto"}


# -- function --------------------------------------------------------------------------------------
def test_function_model_receives_messages_and_the_request():
    seen: dict[str, Any] = {}

    def play(messages, **request):
        seen.update(request, messages=messages)
        return f"echo: {messages[-1]['content']}"

    model = iModel(provider="offline", model="function", function=play, temperature=0.2)
    fmt = {"name": "X", "schema": {"type": "object"}}
    call = ask(model, "hi", tools=[TOOLS[0].schema], response_format=fmt)
    assert call.response.text == "echo: hi"
    assert call.response.model == "offline/function"
    assert seen["messages"] == [user("hi")]
    assert seen["tools"] == [TOOLS[0].schema] and seen["response_format"] == fmt
    assert seen["options"]["temperature"] == 0.2
    assert len(model.endpoint.calls) == 1


def test_function_model_may_be_async_and_return_tool_calls():
    async def play(messages):
        await anyio.sleep(0)
        return {"tool_calls": [{"name": "multiply", "arguments": {"a": 1, "b": 2}}]}

    response = ask(iModel("offline/function", function=play)).response
    assert response.finish_reason == "tool_calls"
    assert response.tool_calls[0].arguments == {"a": 1, "b": 2}


def test_function_model_may_return_a_model_response_or_an_error():
    def play(messages, **request):
        if len(messages) > 1:
            return {"error": "slow down", "status": 429}
        return ModelResponse(text="custom")

    model = iModel("offline/function", function=play)
    response = ask(model).response
    assert (response.text, response.finish_reason) == ("custom", "stop")
    assert response.usage["output_tokens"] > 0
    two = ChatRequest(messages=[user("a"), user("b")])
    assert isinstance(anyio.run(model.invoke, two).error, RateLimitError)


def test_function_returning_something_else_fails_with_the_fix():
    call = ask(iModel("offline/function", function=lambda messages: 42))
    assert isinstance(call.error, TypeError)
    assert "returned int" in str(call.error) and "ModelResponse" in str(call.error)


def test_function_is_kept_by_copy_but_never_saved():
    def play(messages):
        return "played"

    model = iModel("offline/function", function=play)
    assert ask(model.copy()).response.text == "played"
    data = model.to_dict()
    assert data == {"provider": "offline", "model": "function"}
    rebuilt = iModel.from_dict(data)
    call = ask(rebuilt)
    assert isinstance(call.error, ConfigurationError)
    assert "`function=`" in str(call.error)


def test_function_signature_is_read_once_and_again_for_a_new_function():
    class Play:
        """A callable that counts how often its signature is read."""

        reads = 0

        @property
        def __signature__(self) -> inspect.Signature:
            Play.reads += 1
            return inspect.signature(lambda messages, tools=None: None)

        def __call__(self, messages, tools=None):
            return f"tools: {tools}"

    model = iModel("offline/function", function=Play())
    for _ in range(5):
        assert ask(model).response.text == "tools: None"
    assert Play.reads == 1  # a turn does not pay for inspecting the function again

    model.endpoint.function = lambda messages, **request: f"keys: {sorted(request)}"
    assert ask(model).response.text == "keys: ['options', 'response_format', 'tools']"


def test_function_must_be_callable():
    with pytest.raises(ConfigurationError, match="must be callable"):
        iModel("offline/function", function="not a function")


def _weather(city: str) -> str:
    """Today's weather in a city."""
    return f"Sunny in {city}"


def test_auto_follow_up_answer_speaks_of_the_tool_results_just_before_it():
    from lion_nb import Branch

    async def turns() -> str:
        branch = Branch()
        await branch.operate(instruction="Use _weather for Lisbon.", tools=[_weather])
        return await branch.communicate("Now answer.")

    answer = anyio.run(turns)
    assert "the tools returned _weather → Sunny in" in answer
    assert "“Now answer.”" in answer


def test_auto_does_not_quote_old_tool_results_in_later_answers():
    """Tool results belong to the turn that follows the calls; later answers on the branch
    (another question, after the tool is gone, an explanation of an error) leave them out."""
    from lion_nb import Branch

    async def turns() -> list[str]:
        branch = Branch()
        await branch.operate(instruction="Use _weather for Lisbon.", tools=[_weather])
        answers = [await branch.communicate("Now answer.")]
        answers.append(await branch.communicate("Suggest a museum."))
        branch.acts.remove_tool("_weather")
        answers.append(await branch.communicate("Explain this error: NameError."))
        return answers

    follow_up, *later = anyio.run(turns)
    assert "Sunny in" in follow_up
    for answer in later:
        assert "tools returned" not in answer and "Sunny in" not in answer, answer
        assert answer.startswith("Offline model: you asked")


def test_react_final_answer_comes_after_the_analysis_not_the_calls():
    from lion_nb import Branch

    branch = Branch()
    answer = anyio.run(
        lambda: branch.ReAct({"instruction": "Use _weather for Lisbon."}, tools=[_weather])
    )
    kinds = [m.kind for m in branch.messages]
    assert kinds.count("action_response") == 1  # the tool ran in the first round
    assert answer.startswith("Offline model: you asked “Give the final answer")


@pytest.mark.parametrize(
    "question",
    [
        "Write a function that adds two numbers.",
        "Quote ``` and a NUL \x00 and a line\nbreak\u2028 in the question.",
        "",
    ],
)
def test_auto_answers_with_a_python_block_that_parses_when_asked_for_code(question):
    import ast

    from lion_nb.notebook.cell.output_formats import extract_code

    ask_code = Instruction(
        instruction=question or None,
        guidance="Answer with Python code only, in one ```python fenced block.",
    )
    response = ask(iModel("offline/auto"), ask_code.rendered).response
    assert response.text.startswith("```python\n") and response.text.endswith("\n```")
    code = extract_code(response.text)
    ast.parse(code)  # raises if the code does not parse
    assert "print(" in code and "Offline model" in code


def test_auto_answers_in_prose_when_code_is_not_asked_for():
    text = ask(iModel("offline/auto"), "Tell me about code review.").response.text
    assert text.startswith("Offline model:") and "```" not in text


def test_auto_takes_numbers_and_an_enum_value_from_the_instruction():
    response = run_tools_round([user("What is 6 times 7.5? Use multiply on 6 and 7.5.")])
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("multiply", {"a": 6, "b": 7.5})
    ]
    ends = run_tools_round([user("Use multiply on 4 and 5.")])
    assert ends.tool_calls[0].arguments == {"a": 4, "b": 5}
    explicit = run_tools_round([user("lookup city=Oslo units=imperial")])
    assert explicit.tool_calls[0].arguments == {"city": "Oslo", "units": "imperial"}
