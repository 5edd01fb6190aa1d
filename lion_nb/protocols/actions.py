"""Tools a model may call, and a branch's registry of them.

A `Tool` derives what a provider needs from the Python object itself: the name, the
description (the docstring's first paragraph) and the JSON schema of its parameters, built
by pydantic from the signature, with each parameter described by the docstring's
``Args:`` (Google), ``Parameters`` (NumPy) or ``:param:`` (Sphinx) entries. Calling a tool
validates and coerces the model's arguments first, so the function receives the types it
declares, and a bad argument fails with a message the model can act on.

`ActionManager` is the registry. Its ``invoke`` never raises for a tool's failure: an
unknown tool, bad arguments or an exception inside the tool becomes an `ActionResponse`
with ``is_error=True`` that goes back to the model like any other result. Cancellation is
not a failure and propagates.

Before a call runs it is approved (`lion_nb.protocols.approval`): under the tool's own
``approve=`` policy, else the manager's default (the branch's ``approve=``). A denied call
does not run; its response is an error whose output tells the model it was denied, with
``metadata["approval"]`` saying by whom. "Approve from now on" is kept here, per manager
(per branch), never on the tool, which clones share.

A result, or an error's text, is bounded before it joins the history: past
``result_budget`` tokens (`RESULT_BUDGET` by default; ``None``: unbounded) it keeps its head
and tail around the context budget's marker, ``[… N of M characters cut …]`` (data is cut as
its JSON text), and ``metadata["output_cut"]`` says how much. A 5 MB answer would otherwise
travel with every later request.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import re
import time
import types
import typing
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Annotated, Any

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from .._callables import is_async_callable
from ..errors import ItemExistsError, ItemNotFoundError
from ..shapes import JsonMapping, JsonObject
from ._docstrings import docstring_of, first_paragraph, param_docs
from .jsonsafe import text_of
from .messages import ActionRequest, ActionResponse

__all__ = ["RESULT_BUDGET", "ActionManager", "Tool", "ToolOutput"]

logger = logging.getLogger("lion_nb.actions")

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

#: tokens a tool's result may take in the history (about 32,000 characters)
RESULT_BUDGET = 8000


class ToolOutput:
    """A tool's result with what its response should record beside it: ``metadata`` joins
    the response's (a run's code, duration, names), ``images`` (``data:`` URLs) go to the
    model with the result's text (as descriptions for a model that sees none)."""

    __slots__ = ("images", "metadata", "output")

    def __init__(
        self,
        output: Any,  # Any: whatever the tool's function returned, made JSON-safe later
        metadata: JsonMapping | None = None,
        images: Iterable[object] = (),
    ):
        self.output = output
        self.metadata = dict(metadata or {})
        self.images = [str(url) for url in images]


class Tool:
    """A callable a model may use: ``Tool(search)`` or ``Tool(WeatherQuery)``.

    ``name`` and ``description`` default to the function's (or model's) name and the first
    paragraph of its docstring. Sync functions run in a worker thread, so a slow one does
    not block the event loop and a cancellation (Stop, the interrupt) ends the turn at once:
    the thread is abandoned (the function may finish there; its result is dropped).
    ``run_in_thread=False`` runs them inline, on the loop.
    """

    __test__ = False

    def __init__(
        self,
        # Any: a function's own parameters and result; `approve` is any policy `check_policy` takes
        func_callable: Callable[..., Any] | type[BaseModel],
        *,
        name: str | None = None,
        description: str | None = None,
        run_in_thread: bool = True,
        approve: Any = None,
    ):
        from .approval import check_policy

        #: this tool's approval policy (None: the branch's default); see `protocols.approval`
        self.approve = check_policy(approve)
        if isinstance(func_callable, Tool):
            func_callable = func_callable.func_callable
        self._is_model = isinstance(func_callable, type) and issubclass(func_callable, BaseModel)
        if not self._is_model and not callable(func_callable):
            shown = repr(func_callable)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise TypeError(
                f"`{shown}` ({type(func_callable).__name__}) cannot be a tool: pass a function "
                "or a pydantic model class."
            )
        self.func_callable = func_callable
        self.run_in_thread = run_in_thread
        target = _unwrap(func_callable)
        self.name: str = name or _own_name(target)
        if not _NAME.match(self.name):
            raise ValueError(
                f"`{self.name}` is not a valid tool name (letters, digits, `_` and `-`, at "
                "most 64): pass `name=`."
            )
        doc = docstring_of(target)
        docs = param_docs(doc)
        self.description: str = description if description is not None else first_paragraph(doc)
        self._positional: list[str] = []
        self._fields: dict[str, str] = {}  # parameter name -> field name of the arguments model
        self._var_keyword = False
        if self._is_model:
            self._model: type[BaseModel] = func_callable  # type: ignore[assignment]
        else:
            self._model = self._arguments_model(target, docs)
        try:
            parameters = self._model.model_json_schema()
        except Exception as exc:
            raise TypeError(
                f"Tool `{self.name}`: its parameters have no JSON schema ({exc}). Annotate "
                "them with JSON-compatible types (str, int, float, bool, lists, dicts, pydantic "
                "models)."
            ) from exc
        parameters.pop("description", None)
        _describe_properties(parameters, docs)
        self.schema: dict[str, Any] = {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": _strip_titles(parameters),
            },
        }

    def _arguments_model(self, func: Any, docs: dict[str, str]) -> type[BaseModel]:
        try:
            signature = inspect.signature(self.func_callable)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"Tool `{self.name}`: its signature cannot be read; wrap it in a typed function."
            ) from exc
        hints = _type_hints(func)
        fields: dict[str, Any] = {}
        for i, param in enumerate(signature.parameters.values()):
            if param.kind is param.VAR_KEYWORD:
                self._var_keyword = True
                continue
            if param.kind is param.VAR_POSITIONAL:
                continue
            if param.kind is param.POSITIONAL_ONLY:
                self._positional.append(param.name)
            annotation = hints.get(param.name, param.annotation)
            if isinstance(annotation, str):
                annotation = _resolve(annotation, func)
            if annotation is param.empty:
                annotation = Any
            # Field's keywords each take their own type; this map only ever holds `description`
            extra: dict[str, Any] = {"description": docs[param.name]} if param.name in docs else {}
            default = param.default
            if isinstance(default, FieldInfo):  # ``x: int = Field(3, ge=0)``: keep it whole
                annotation = Annotated[annotation, default]
                if default.description is not None:
                    extra = {}
                info = Field(alias=param.name, **extra)
            else:
                value = ... if default is param.empty else default
                info = Field(value, alias=param.name, **extra)
            key = f"p{i}"  # field names never clash with BaseModel attributes
            self._fields[param.name] = key
            fields[key] = (annotation, info)
        config = ConfigDict(
            extra="allow" if self._var_keyword else "forbid", arbitrary_types_allowed=True
        )
        try:
            return create_model(f"{self.name}_arguments", __config__=config, **fields)
        except Exception as exc:
            raise TypeError(
                f"Tool `{self.name}`: its parameters cannot be validated ({exc})."
            ) from exc

    # -- identity ------------------------------------------------------------------------------
    @property
    def function(self) -> str:
        """The tool's name (the name a model calls it by)."""
        return self.name

    @property
    def tool_schema(self) -> JsonObject:
        return self.schema

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r})"

    # -- calling ---------------------------------------------------------------------------------
    def json_object(self, arguments: JsonObject | str | None) -> JsonObject:
        """The arguments as a dict (``None`` is none, a string is parsed as JSON);
        ``ValueError`` when they are not a JSON object."""
        if arguments is None:
            return {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except ValueError as exc:
                raise ValueError(f"Arguments for `{self.name}` are not valid JSON: {exc}") from None
        if not isinstance(arguments, dict):
            raise ValueError(
                f"Arguments for `{self.name}` must be a JSON object; got "
                f"{type(arguments).__name__}."
            )
        return arguments

    def validate(self, arguments: JsonObject | str | None) -> BaseModel:
        """The arguments checked and coerced; ``ValueError`` naming each bad argument."""
        arguments = self.json_object(arguments)
        try:
            return self._model.model_validate(arguments)
        except ValidationError as exc:
            raise ValueError(self._explain(exc)) from None

    # Any: whatever the tool's function returns (a model tool: its instance)
    async def call(self, arguments: JsonObject | str | None = None) -> Any:
        """Validate ``arguments`` and run the tool; a model tool returns its validated instance."""
        values = self.validate(arguments)
        if self._is_model:
            return values
        keyword = {name: getattr(values, key) for name, key in self._fields.items()}
        keyword.update(values.model_extra or {})
        positional = [keyword.pop(name) for name in self._positional]
        func = self.func_callable
        if self.run_in_thread and not is_async_callable(func):
            result = await anyio.to_thread.run_sync(
                functools.partial(func, *positional, **keyword), abandon_on_cancel=True
            )
        else:
            result = func(*positional, **keyword)
        if inspect.isawaitable(result):
            result = await result
        return result

    def _explain(self, exc: ValidationError) -> str:
        props = self.schema["function"]["parameters"].get("properties", {})
        problems = []
        for err in exc.errors(include_url=False):
            loc = err["loc"]
            where = ".".join(str(p) for p in loc) or "arguments"
            expected = _expected(props.get(loc[0])) if len(loc) == 1 and loc[0] in props else ""
            if err["type"] == "missing":
                problems.append(
                    f"`{where}` is required" + (f" (expected {expected})" if expected else "")
                )
            elif err["type"] == "extra_forbidden":
                takes = ", ".join(props) or "no arguments"
                problems.append(f"`{where}` is not a parameter (it takes: {takes})")
            else:
                got = repr(err.get("input"))
                got = got if len(got) <= 40 else got[:37] + "..."
                tail = f"; expected {expected}" if expected else ""
                problems.append(f"`{where}`: {err['msg']} (got {got}{tail})")
        return f"Invalid arguments for `{self.name}`: " + "; ".join(problems) + "."


class ActionManager:
    """A branch's tools by name: register, describe to a model, invoke."""

    # Any: tools in any form `register_tools` takes; `approve` any policy `check_policy` takes
    def __init__(self, tools: Any = None, approve: Any = None):
        from .approval import check_policy

        self.registry: dict[str, Tool] = {}
        #: the default approval policy of tools that have none of their own
        self.approve = check_policy(approve)
        #: tokens a result may take before it is cut (None: unbounded); see the module
        self.result_budget: int | None = RESULT_BUDGET
        #: the tools approved "from now on" on this branch
        self.approved: weakref.WeakSet[Tool] = weakref.WeakSet()
        if tools:
            self.register_tools(tools)

    # Any: a `Tool`, a function or a pydantic model class
    def register_tool(self, tool: Any, update: bool = False) -> Tool:
        """Add one tool (a `Tool`, a function or a pydantic model class)."""
        return self.register_tools([tool], update=update)[0]

    # Any: one tool or an iterable of them, each as `register_tool` takes
    def register_tools(self, tools: Any, update: bool = False) -> list[Tool]:
        """Add several tools at once; nothing is added if any of them is a duplicate."""
        single = isinstance(tools, Tool) or callable(tools) or not _iterable(tools)
        items = [tools] if single else list(tools)
        built = [t if isinstance(t, Tool) else Tool(t) for t in items]
        seen: set[str] = set()
        for tool in built:
            if not update and (tool.name in self.registry or tool.name in seen):
                raise ItemExistsError(
                    f"Tool `{tool.name}` is already registered; pass `update=True` to replace it."
                )
            seen.add(tool.name)
        for tool in built:
            self.registry[tool.name] = tool
        return built

    # Any: a name, a `Tool` or the function itself
    def remove_tool(self, tool: Any) -> Tool:
        """Remove a tool by name (or the tool or function itself) and return it."""
        return self.registry.pop(self._lookup(tool).name)

    # Any: a name, a `Tool` or the function itself
    def get_tool(self, tool: Any) -> Tool:
        return self._lookup(tool)

    def _lookup(self, tool: Any) -> Tool:
        name = _name_of(tool)
        if name not in self.registry:
            known = ", ".join(f"`{n}`" for n in self.registry) or "none"
            raise ItemNotFoundError(
                f"Tool `{name}` is not registered (registered: {known}); register it with "
                "`register_tool()` first."
            )
        return self.registry[name]

    def __contains__(self, tool: Any) -> bool:
        try:
            return _name_of(tool) in self.registry
        except TypeError:
            return False

    def __len__(self) -> int:
        return len(self.registry)

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self.registry.values()))

    def __repr__(self) -> str:
        return f"ActionManager(tools={list(self.registry)})"

    @property
    def schema_list(self) -> list[JsonObject]:
        return [tool.schema for tool in self.registry.values()]

    # Any: True, a name, a tool, or a list of them
    def get_tool_schema(self, tools: Any = True) -> list[JsonObject]:
        """Schemas to offer a model: ``True`` for all, or a name, a tool, or a list of them."""
        if tools is True:
            return self.schema_list
        if tools is None or tools is False:
            return []
        if isinstance(tools, (str, Tool)) or callable(tools):
            tools = [tools]
        chosen: dict[str, dict[str, Any]] = {}
        for item in tools:
            tool = self._lookup(item)
            chosen.setdefault(tool.name, tool.schema)
        return list(chosen.values())

    async def invoke(self, request: ActionRequest | JsonObject) -> ActionResponse:
        """Run the requested tool. Any failure is the response's output, never raised."""
        if isinstance(request, dict):
            request = ActionRequest.model_validate(request)
        start = time.perf_counter()
        metadata: dict[str, Any] = {}
        server = request.metadata.get("mcp_server") if isinstance(request.metadata, dict) else None
        if server:
            metadata["mcp_server"] = server
        try:
            _check_complete(request)
            tool = self._lookup(request.function)
            decision = await self._approve(tool, request, server)
            if decision is not None and not decision.allowed:
                from .approval import denial_output

                output, is_error = denial_output(request.function, decision.reason), True
                metadata["approval"] = f"denied by {decision.by}"
            else:
                if decision is not None and decision.by != "policy":
                    metadata["approval"] = f"approved by {decision.by}"
                arguments = None if decision is None else decision.arguments
                output = await tool.call(request.arguments if arguments is None else arguments)
                if arguments is not None:  # edited before approval: both are recorded
                    metadata["proposed_arguments"] = dict(request.arguments)
                    metadata["ran_arguments"] = dict(arguments)
                    metadata["approval"] = "approved by user, edited"
                is_error = False
                if isinstance(output, ToolOutput):
                    extra = dict(output.metadata)
                    is_error = bool(extra.pop("is_error", False))
                    metadata.update(extra)
                    if output.images:
                        metadata["images"] = output.images
                    output = output.output
                output = _plain(output)
        except Exception as exc:
            logger.debug("tool `%s` failed", request.function, exc_info=True)
            output, is_error = {"error": f"{type(exc).__name__}: {text_of(exc)}"}, True
        output = self._bounded(output, metadata)
        response = ActionResponse(
            function=request.function,
            arguments=dict(metadata.pop("ran_arguments", request.arguments)),
            output=output,
            call_id=request.call_id,
            action_request_id=str(request.id),
            is_error=is_error,
            metadata={"duration": time.perf_counter() - start, **metadata},
        )
        request.action_response_id = str(response.id)
        return response

    async def _approve(self, tool: Tool, request: ActionRequest, server: str | None) -> Any:
        """The approval decision, or None when no policy asks for one (the common case).
        Arguments are validated first: nobody is asked about a call that cannot run."""
        if getattr(tool, "approve", None) in (None, True) and self.approve in (None, True):
            return None
        if tool in self.approved:
            return None
        from .approval import Ask, decide

        tool.validate(request.arguments)
        ask = Ask(request.function, dict(request.arguments), server, request.call_id)
        details = getattr(tool, "ask_details", None)
        if callable(details):  # what the card shows beside the arguments (code, risk flags)
            ask.extra.update(details(dict(request.arguments)))
        try:
            return await decide(tool, request.arguments, self.approve, ask, self.approved.add)
        except BaseException as exc:  # stopped while deciding: `act` records a denial
            if not isinstance(exc, Exception) or isinstance(exc, anyio.get_cancelled_exc_class()):
                request.metadata["approval"] = "denied: the turn was stopped before approval"
            raise

    def _bounded(self, output: Any, metadata: dict[str, Any]) -> Any:
        """``output`` within ``result_budget`` tokens (see the module docstring)."""
        budget = self.result_budget
        if budget is None:
            return output
        error = output.get("error") if isinstance(output, dict) and len(output) == 1 else None
        if isinstance(error, str):
            text = error
        elif isinstance(output, str):
            text = output
        else:
            error = None
            try:
                text = json.dumps(output, ensure_ascii=False, default=str)
            except Exception:  # unprintable parts: made plain (and noted) when recorded
                return output
        if len(text) <= budget * 2:  # within the budget whatever the text (no estimate)
            return output
        from ..context.content import fit_text

        fitted = fit_text(text, budget)
        if fitted is text:
            return output
        metadata["output_cut"] = {"characters": len(text), "kept": len(fitted)}
        return {"error": fitted} if error is not None else fitted


# -- helpers ------------------------------------------------------------------------------------
def _check_complete(request: ActionRequest) -> None:
    """Arguments that were not a JSON object (kept as ``_raw_arguments`` by the endpoint)
    fail with what the model sent and -- when its answer was cut off by ``max_tokens`` --
    how to raise it, rather than as an unknown parameter."""
    raw = request.arguments.get("_raw_arguments")
    if len(request.arguments) != 1 or not isinstance(raw, str):
        return
    shown = raw if len(raw) <= 80 else raw[:77] + "..."
    cut = request.metadata.get("cut_off") if isinstance(request.metadata, dict) else None
    why = f": {cut.strip()}" if cut else "."
    raise ValueError(
        f"The arguments for `{request.function}` are not a complete JSON object (the model "
        f"sent {shown!r}){why}"
    )


def _own_name(obj: Any) -> str:
    """A function's or model's own name; an object without one goes by its class's."""
    found: str = getattr(obj, "__name__", type(obj).__name__)
    return found


def _unwrap(obj: Any) -> Any:
    while isinstance(obj, functools.partial):
        obj = obj.func
    return obj


def _type_hints(func: Any) -> dict[str, Any]:
    """Resolved annotations of a function, a class's ``__init__`` or an object's ``__call__``."""
    hints: dict[str, Any] = {}
    sources = [func]
    if not inspect.isroutine(func):
        sources.insert(0, getattr(func, "__init__" if isinstance(func, type) else "__call__"))
    for source in sources:
        try:
            hints.update(typing.get_type_hints(source, include_extras=True))
        except Exception:  # one unresolvable name: resolve the others one by one
            pass
    return hints


def _resolve(annotation: str, func: Any) -> Any:
    """One postponed annotation evaluated in the function's module; ``Any`` if it cannot be."""
    holder = types.SimpleNamespace(__annotations__={"x": annotation})
    owners: tuple[Any, ...] = (func, getattr(func, "__init__", None), type(func).__call__)
    namespace: dict[str, Any] = next(
        (o.__globals__ for o in owners if hasattr(o, "__globals__")), {}
    )
    try:
        return typing.get_type_hints(holder, globalns=namespace, include_extras=True)["x"]
    except Exception:
        return Any


def _name_of(tool: Any) -> str:
    if isinstance(tool, str):
        return tool
    if isinstance(tool, Tool):
        return tool.name
    target = _unwrap(tool)
    name = getattr(target, "__name__", None)
    if name is None and callable(target):
        name = type(target).__name__
    if not isinstance(name, str):
        raise TypeError(f"`{tool!r}` is not a tool: give a tool name, a Tool or a function.")
    return name


def _plain(value: Any) -> Any:
    """Tool output as plain data: pydantic models become dicts, tuples lists."""
    if isinstance(value, BaseModel):
        try:
            return value.model_dump(mode="json")
        except Exception:  # bytes or unknown objects inside: the response makes them plain
            return value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _describe_properties(schema: dict[str, Any], docs: dict[str, str]) -> None:
    for name, prop in (schema.get("properties") or {}).items():
        if isinstance(prop, dict) and name in docs and "description" not in prop:
            prop["description"] = docs[name]


_VALUES = {"default", "const", "enum", "examples"}


def _strip_titles(node: Any, mapping: bool = False) -> Any:
    """The schema without pydantic's generated titles (``title`` properties are kept)."""
    if isinstance(node, dict):
        if mapping:
            return {k: _strip_titles(v) for k, v in node.items()}
        return {
            k: v if k in _VALUES else _strip_titles(v, k in ("properties", "$defs", "definitions"))
            for k, v in node.items()
            if not (k == "title" and isinstance(v, str))
        }
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def _expected(prop: Any) -> str:
    """What a parameter's schema asks for, in a few words."""
    if not isinstance(prop, dict):
        return ""
    if "enum" in prop:
        return "one of " + ", ".join(json.dumps(v) for v in prop["enum"])
    if "const" in prop:
        return json.dumps(prop["const"])
    if "$ref" in prop:
        ref: str = prop["$ref"]
        return ref.rsplit("/", 1)[-1] + " object"
    for key in ("anyOf", "oneOf"):
        if key in prop:
            return " or ".join(filter(None, (_expected(p) for p in prop[key])))
    kind = prop.get("type", "")
    if kind == "array" and isinstance(prop.get("items"), dict):
        inner = _expected(prop["items"])
        return f"array of {inner}" if inner else "array"
    if prop.get("format"):
        return f"{kind} ({prop['format']})"
    return kind if isinstance(kind, str) else " or ".join(kind)


def _iterable(value: Any) -> bool:
    return isinstance(value, Iterable) and not isinstance(value, (str, bytes, dict))
