"""`Tool` and `ActionManager`: schemas from signatures, validated calls, contained failures.

This module uses postponed annotations on purpose: tools must resolve string annotations.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import threading
from typing import Annotated, Any, Literal, Optional

import anyio
import pytest
from pydantic import BaseModel, Field

from lion_nb.errors import ItemExistsError, ItemNotFoundError
from lion_nb.protocols.actions import ActionManager, Tool
from lion_nb.protocols.messages import ActionRequest, ActionResponse


def call(tool: Tool, arguments: Any = None) -> Any:
    return anyio.run(tool.call, arguments)


def invoke(manager: ActionManager, function: str, **arguments: Any) -> ActionResponse:
    return anyio.run(manager.invoke, ActionRequest(function=function, arguments=arguments))


def params(tool: Tool) -> dict[str, Any]:
    return tool.schema["function"]["parameters"]


# -- tools used below ----------------------------------------------------------------------------
def multiply(a: int, b: float = 2.0) -> float:
    """Multiply two numbers.

    The product is exact for integers.

    Args:
        a (int): The first
            factor.
        b: The second factor.

    Returns:
        The product.
    """
    return a * b


def numpy_style(query: str, limit: int = 3) -> list[str]:
    """Search the archive
    for a phrase.

    Parameters
    ----------
    query : str
        What to look for,
        verbatim.
    limit : int
        How many results.

    Returns
    -------
    list of str
    """
    return [query] * limit


def sphinx_style(path: str, recursive: bool = False) -> str:
    """List a directory.

    :param path: Where to look.
    :param bool recursive: Whether to descend.
    """
    return path


class Address(BaseModel):
    city: str
    zip: str


class WeatherQuery(BaseModel):
    """Ask for the weather somewhere.

    Attributes:
        city: The city name.
    """

    city: str
    unit: Literal["C", "F"] = "C"
    days: int = Field(1, ge=1, le=7, description="Forecast length.")


class Forecast(BaseModel):
    city: str
    temps: list[float]


async def forecast(city: str, days: int = 1) -> Forecast:
    """Forecast the weather."""
    await anyio.sleep(0)
    return Forecast(city=city, temps=[20.5] * days)


def fails(reason: str) -> None:
    """Always fails."""
    raise RuntimeError(f"cannot: {reason}")


# -- Tool: description and schema ----------------------------------------------------------------
def test_name_description_and_google_parameter_docs():
    tool = Tool(multiply)
    assert tool.name == tool.function == "multiply"
    assert tool.description == "Multiply two numbers."
    assert tool.schema == {
        "type": "function",
        "function": {
            "name": "multiply",
            "description": "Multiply two numbers.",
            "parameters": {
                "type": "object",
                "properties": {
                    "a": {"type": "integer", "description": "The first factor."},
                    "b": {"type": "number", "default": 2.0, "description": "The second factor."},
                },
                "required": ["a"],
                "additionalProperties": False,
            },
        },
    }
    assert tool.tool_schema is tool.schema


def test_numpy_and_sphinx_docstrings_describe_parameters():
    numpy_tool = Tool(numpy_style)
    assert numpy_tool.description == "Search the archive for a phrase."
    props = params(numpy_tool)["properties"]
    assert props["query"]["description"] == "What to look for, verbatim."
    assert props["limit"]["description"] == "How many results."
    sphinx = params(Tool(sphinx_style))["properties"]
    assert sphinx["path"]["description"] == "Where to look."
    assert sphinx["recursive"]["description"] == "Whether to descend."
    assert Tool(sphinx_style).description == "List a directory."


def test_annotated_and_field_constraints_reach_the_schema():
    def pick(
        n: Annotated[int, Field(ge=1, le=5, description="How many.")],
        mode: Literal["fast", "slow"] = "fast",
        size: int = Field(3, ge=0, description="Size in bytes."),
        when: Optional[dt.date] = None,
        title: str = "",
    ) -> None:
        """Pick."""

    props = params(Tool(pick))["properties"]
    assert props["n"] == {"type": "integer", "minimum": 1, "maximum": 5, "description": "How many."}
    assert props["mode"]["enum"] == ["fast", "slow"] and props["mode"]["default"] == "fast"
    assert props["size"]["default"] == 3 and props["size"]["description"] == "Size in bytes."
    assert {"format": "date", "type": "string"} in props["when"]["anyOf"]
    assert "title" in props  # a parameter named `title` is kept; generated titles are not
    assert "title" not in json.dumps(params(Tool(pick))).replace('"title":', "", 1)


def test_nested_models_are_described_with_definitions():
    def ship(to: Address, items: list[str]) -> str:
        """Ship items."""
        return to.city

    schema = params(Tool(ship))
    assert schema["properties"]["to"] == {"$ref": "#/$defs/Address"}
    assert schema["$defs"]["Address"]["required"] == ["city", "zip"]


def test_explicit_name_and_description_win():
    tool = Tool(multiply, name="times", description="Times.")
    assert tool.schema["function"]["name"] == "times"
    assert tool.schema["function"]["description"] == "Times."


def test_a_lambda_needs_a_name():
    with pytest.raises(ValueError, match="pass `name=`"):
        Tool(lambda x: x)
    assert call(Tool(lambda x: x * 2, name="double"), {"x": 4}) == 8


def test_a_pydantic_model_is_a_tool_returning_its_validated_instance():
    tool = Tool(WeatherQuery)
    assert tool.name == "WeatherQuery"
    assert tool.description == "Ask for the weather somewhere."
    props = params(tool)["properties"]
    assert props["city"]["description"] == "The city name."
    assert props["days"]["description"] == "Forecast length."
    assert "title" not in params(tool)
    result = call(tool, {"city": "Oslo", "days": "3"})
    assert result == WeatherQuery(city="Oslo", days=3)


def test_callable_objects_partials_methods_and_nested_tools():
    class Counter:
        """Count up."""

        def __call__(self, step: int) -> int:
            return step + 1

    class Store:
        def get(self, key: str) -> str:
            """Get a value."""
            return f"value of {key}"

    counter = Tool(Counter())
    assert (counter.name, counter.description) == ("Counter", "Count up.")
    assert call(counter, {"step": "2"}) == 3
    partial = Tool(functools.partial(multiply, b=10))
    assert partial.name == "multiply" and call(partial, {"a": 2}) == 20
    method = Tool(Store().get)
    assert list(params(method)["properties"]) == ["key"]
    assert call(method, {"key": "k"}) == "value of k"
    assert Tool(Tool(multiply)).schema == Tool(multiply).schema


@pytest.mark.parametrize("thing", [42, "multiply", None, [multiply]])
def test_a_non_callable_is_refused_with_the_fix(thing):
    with pytest.raises(TypeError) as info:
        Tool(thing)
    message = str(info.value)
    assert repr(thing)[:20] in message
    assert "pass a function or a pydantic model" in message


class Opaque:
    pass


def test_a_parameter_without_a_json_schema_is_refused():
    def use(thing: Opaque) -> None:
        """Use it."""

    with pytest.raises(TypeError, match="Tool `use`"):
        Tool(use)


def test_unresolvable_annotations_fall_back_to_any():
    def loose(x: NotDefinedAnywhere, n: int, when: dt.date) -> str:  # noqa: F821
        """Loose."""
        return repr((x, n, when))

    tool = Tool(loose)
    props = params(tool)["properties"]
    assert props["x"] == {} and props["n"] == {"type": "integer"}
    assert props["when"] == {"type": "string", "format": "date"}
    assert call(tool, {"x": [1], "n": "2", "when": "2024-01-02"}) == repr(
        ([1], 2, dt.date(2024, 1, 2))
    )


# -- Tool: calling -------------------------------------------------------------------------------
def test_arguments_are_validated_and_coerced():
    seen: dict[str, Any] = {}

    def book(when: dt.date, guests: int, to: Address) -> str:
        """Book."""
        seen.update(when=when, guests=guests, to=to)
        return "ok"

    assert call(Tool(book), {"when": "2024-05-01", "guests": "4", "to": {"city": "A", "zip": "1"}})
    assert seen == {"when": dt.date(2024, 5, 1), "guests": 4, "to": Address(city="A", zip="1")}


def test_arguments_may_be_a_json_string_or_nothing():
    assert call(Tool(multiply), '{"a": 3}') == 6.0

    def ping() -> str:
        """Ping."""
        return "pong"

    assert call(Tool(ping)) == "pong"
    assert call(Tool(ping), "") == "pong"


@pytest.mark.parametrize(
    ("arguments", "needles"),
    [
        ({"a": "x"}, ["`a`", "valid integer", "'x'", "expected integer"]),
        ({}, ["`a` is required", "expected integer"]),
        ({"a": 1, "c": 2}, ["`c` is not a parameter", "it takes: a, b"]),
        ([1, 2], ["must be a JSON object", "list"]),
        ("{not json", ["not valid JSON"]),
    ],
)
def test_invalid_arguments_raise_value_error_naming_the_problem(arguments, needles):
    with pytest.raises(ValueError) as info:
        call(Tool(multiply), arguments)
    message = str(info.value)
    assert "`multiply`" in message
    for needle in needles:
        assert needle in message


def test_nested_argument_errors_name_the_path():
    def ship(to: Address) -> None:
        """Ship."""

    with pytest.raises(ValueError, match=r"`to\.zip` is required"):
        call(Tool(ship), {"to": {"city": "A"}})


def test_async_functions_are_awaited():
    result = call(Tool(forecast), {"city": "Rome", "days": 2})
    assert result == Forecast(city="Rome", temps=[20.5, 20.5])


def test_sync_functions_run_in_a_thread_unless_asked_to_run_inline():
    def where() -> int:
        """Which thread."""
        return threading.get_ident()

    here = threading.get_ident()
    assert call(Tool(where)) != here  # a cancellation can abandon it
    assert call(Tool(where, run_in_thread=False)) == here


def test_positional_only_keyword_only_and_extra_keywords():
    def mixed(a: int, /, b: int, *args: int, c: int = 0, **extra: Any) -> dict[str, Any]:
        """Mixed."""
        return {"a": a, "b": b, "c": c, "extra": extra}

    tool = Tool(mixed)
    assert set(params(tool)["properties"]) == {"a", "b", "c"}
    assert params(tool)["additionalProperties"] is True  # **extra takes any other keyword
    result = call(tool, {"a": "1", "b": 2, "c": 3, "colour": "red"})
    assert result == {"a": 1, "b": 2, "c": 3, "extra": {"colour": "red"}}


# -- ActionManager -------------------------------------------------------------------------------
def test_register_contains_len_iterate_and_remove():
    manager = ActionManager([multiply, Tool(forecast)])
    manager.register_tool(WeatherQuery)
    assert len(manager) == 3
    assert list(manager.registry) == ["multiply", "forecast", "WeatherQuery"]
    assert "multiply" in manager and multiply in manager and WeatherQuery in manager
    assert Tool(forecast) in manager and "nope" not in manager and 42 not in manager
    assert [t.name for t in manager] == ["multiply", "forecast", "WeatherQuery"]
    removed = manager.remove_tool(multiply)
    assert removed.name == "multiply" and "multiply" not in manager
    manager.remove_tool("forecast")
    assert list(manager.registry) == ["WeatherQuery"]
    with pytest.raises(ItemNotFoundError, match="`forecast` is not registered"):
        manager.remove_tool("forecast")


def test_duplicates_are_refused_unless_updating():
    manager = ActionManager()
    first = manager.register_tool(multiply)
    with pytest.raises(ItemExistsError) as info:
        manager.register_tool(multiply)
    assert "`multiply` is already registered" in str(info.value)
    assert "update=True" in str(info.value)
    assert manager.registry["multiply"] is first
    replacement = manager.register_tool(Tool(multiply, description="New."), update=True)
    assert manager.registry["multiply"] is replacement


def test_register_tools_is_all_or_nothing():
    manager = ActionManager([multiply])
    with pytest.raises(ItemExistsError):
        manager.register_tools([forecast, multiply])
    assert list(manager.registry) == ["multiply"]
    with pytest.raises(ItemExistsError, match="`fails`"):
        manager.register_tools([fails, fails])
    assert manager.register_tools(fails)[0].name == "fails"  # a single tool is fine too


def test_register_refuses_non_tools_with_the_fix():
    with pytest.raises(TypeError, match="pass a function or a pydantic model"):
        ActionManager().register_tool(3.5)


def test_get_tool_schema_selects_by_name_tool_or_list():
    manager = ActionManager([multiply, forecast, WeatherQuery])
    everything = manager.get_tool_schema()
    assert [s["function"]["name"] for s in everything] == ["multiply", "forecast", "WeatherQuery"]
    assert manager.get_tool_schema(True) == manager.schema_list == everything
    assert manager.get_tool_schema("forecast") == [Tool(forecast).schema]
    chosen = manager.get_tool_schema(["WeatherQuery", Tool(multiply), forecast, "multiply"])
    assert [s["function"]["name"] for s in chosen] == ["WeatherQuery", "multiply", "forecast"]
    assert manager.get_tool_schema(False) == [] and manager.get_tool_schema(None) == []


def test_get_tool_schema_names_an_unknown_tool_and_the_registered_ones():
    manager = ActionManager([multiply, forecast])
    with pytest.raises(ItemNotFoundError) as info:
        manager.get_tool_schema(["multiply", "search"])
    message = str(info.value)
    assert "`search`" in message and "`multiply`" in message and "`forecast`" in message


def test_invoke_returns_a_linked_response():
    manager = ActionManager([multiply])
    request = ActionRequest(function="multiply", arguments={"a": "3", "b": 1.5})
    response = anyio.run(manager.invoke, request)
    assert isinstance(response, ActionResponse)
    assert (response.function, response.output, response.is_error) == ("multiply", 4.5, False)
    assert response.arguments == {"a": "3", "b": 1.5}
    assert response.call_id == request.call_id
    assert response.action_request_id == str(request.id)
    assert request.action_response_id == str(response.id) and request.is_responded
    assert response.chat_msg() == {
        "role": "tool",
        "tool_call_id": request.call_id,
        "content": "4.5",
    }


def test_invoke_dumps_pydantic_results_to_plain_data():
    manager = ActionManager([forecast, WeatherQuery])

    def many(n: int) -> list[Forecast]:
        """Many."""
        return [Forecast(city="X", temps=[1.0])] * n

    manager.register_tool(many)
    assert invoke(manager, "forecast", city="Oslo").output == {"city": "Oslo", "temps": [20.5]}
    assert invoke(manager, "WeatherQuery", city="Oslo").output == {
        "city": "Oslo",
        "unit": "C",
        "days": 1,
    }
    assert invoke(manager, "many", n=2).output == [{"city": "X", "temps": [1.0]}] * 2


def test_invoke_accepts_a_plain_dict_request():
    manager = ActionManager([multiply])
    response = anyio.run(manager.invoke, {"function": "multiply", "arguments": {"a": 2}})
    assert response.output == 4.0


@pytest.mark.parametrize(
    ("function", "arguments", "prefix", "needles"),
    [
        ("search", {}, "ItemNotFoundError: ", ["`search` is not registered", "`multiply`"]),
        ("multiply", {"a": "x"}, "ValueError: ", ["`a`", "valid integer"]),
        ("multiply", {}, "ValueError: ", ["`a` is required"]),
        ("fails", {"reason": "disk full"}, "RuntimeError: ", ["cannot: disk full"]),
        ("broken_async", {}, "ZeroDivisionError: ", ["division by zero"]),
    ],
)
def test_every_failure_is_contained_in_the_response(function, arguments, prefix, needles):
    async def broken_async() -> float:
        """Broken."""
        await anyio.sleep(0)
        return 1 / 0

    manager = ActionManager([multiply, fails, broken_async])
    request = ActionRequest(function=function, arguments=arguments)
    response = anyio.run(manager.invoke, request)
    assert response.is_error is True
    error = response.output["error"]
    assert error.startswith(prefix)
    for needle in needles:
        assert needle in error
    assert response.call_id == request.call_id
    assert request.action_response_id == str(response.id)


def test_cancellation_is_not_contained():
    async def slow() -> str:
        """Slow."""
        await anyio.sleep(5)
        return "done"

    manager = ActionManager([slow])
    results: list[Any] = []

    async def main() -> None:
        with anyio.move_on_after(0.05) as scope:
            results.append(await manager.invoke(ActionRequest(function="slow")))
        assert scope.cancelled_caught

    anyio.run(main)
    assert results == []
