"""``operate``: one exchange through a Middle, then validation and tool calls (ADR-0022).

The coordinator, in order:

1. Tools given are registered on the branch (the same function again is not an error). A
   provider's own tool, given as its dict (``{"type": "web_search"}`` on the Responses API,
   ``{"type": "web_search_20250305", "name": "web_search"}`` on Anthropic's), is not
   registered: it is offered as it is, beside the functions, and the provider runs it.
2. The response schema is built: ``response_format`` (a pydantic model or a JSON schema)
   and/or ``request_fields``; with actions on, an ``action_requests`` field is added (for a
   model: a subclass, so the answer is still an instance of the caller's class, with
   ``action_requests`` and a schema-hidden ``action_responses``).
3. API models are offered the tools natively (``ChatParam.tool_schemas``).
4. The Middle is called exactly once: the injected one, else ``communicate`` for API models
   and ``run_and_collect`` for CLI models. The Middle owns recording; nothing is appended
   around it.
5. ``skip_validation``: the Middle's result is returned as is; no validation, no actions.
6. Otherwise the result is validated into the schema (a Middle that returns text is parsed
   here), and action requests are gathered from the native tool calls recorded during this
   exchange and from the answer's ``action_requests`` field, then run through `act`.
7. Context-provider writeback runs only when actions ran and gave a non-``None`` response.

What is returned (ADR-0022 D3): the validated answer. When actions ran, a model answer carries
them in ``action_requests`` / ``action_responses`` and a mapping answer under those keys;
any other answer -- plain text, or no answer at all because the model only called tools --
comes back as ``{"response": text | None, "action_requests": [...], "action_responses":
[...]}``. A tool-call-only answer is not a validation failure: the tool results are recorded
and the next exchange (another ``operate``, or the next ReAct round) gives the answer.
"""

from __future__ import annotations

import copy
import functools
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, create_model
from pydantic.json_schema import SkipJsonSchema

from ..errors import ParseError
from ..protocols.messages import ActionRequest, AssistantResponse
from .act_op import ActionRequestModel, ActionResponseModel, act, to_action_request
from .types import ActionParam, ChatParam, Middle, ParseParam

if TYPE_CHECKING:
    from ..session.branch import Branch

__all__ = ["operate", "operative_model", "prepare_operate_kw"]

_REQUESTS_HELP = (
    "Tool calls to make now, each {function, arguments}; leave empty when no tool is needed."
)


@functools.lru_cache(maxsize=128)
def operative_model(model: type[BaseModel]) -> type[BaseModel]:
    """``model`` plus ``action_requests`` (in the schema) and ``action_responses`` (filled
    by operate, hidden from the schema). A subclass, so ``isinstance(answer, model)``."""
    fields: dict[str, Any] = {}
    if "action_requests" not in model.model_fields:
        # a literal ``[]`` default (not a factory) so the schema shows it
        fields["action_requests"] = (
            list[ActionRequestModel],
            Field(default=[], description=_REQUESTS_HELP),
        )
    if "action_responses" not in model.model_fields:
        fields["action_responses"] = (SkipJsonSchema[list[ActionResponseModel]], Field(default=[]))
    if not fields:
        return model
    operative = create_model(model.__name__, __base__=model, **fields)
    operative.__doc__ = model.__doc__
    return operative


def _schema_with_requests(schema: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(schema)
    body = out.get("schema", out) if isinstance(out.get("schema"), dict) else out
    props = body.setdefault("properties", {})
    props.setdefault(
        "action_requests",
        {
            "type": "array",
            "items": ActionRequestModel.model_json_schema(),
            "default": [],
            "description": _REQUESTS_HELP,
        },
    )
    return out


def _target(response_format: Any, actions: bool) -> Any:
    if response_format is None:
        return None
    if isinstance(response_format, BaseModel):
        response_format = type(response_format)
    if isinstance(response_format, type) and issubclass(response_format, BaseModel):
        return operative_model(response_format) if actions else response_format
    if isinstance(response_format, dict):
        return _schema_with_requests(response_format) if actions else response_format
    raise TypeError(
        f"`response_format` takes a pydantic model class or a JSON schema dict, got "
        f"{type(response_format).__name__}."
    )


def _fields_with_requests(request_fields: Any, actions: bool) -> Any:
    if not request_fields or not actions:
        return request_fields
    fields = (
        dict.fromkeys(request_fields, "...")
        if not isinstance(request_fields, dict)
        else dict(request_fields)
    )
    fields.setdefault("action_requests", "list of {function, arguments} tool calls, or []")
    return fields


def _model(value: Any) -> Any:
    """An iModel from a ``"provider/model"`` string or ``iModel.to_dict()`` output."""
    if isinstance(value, (str, dict)):
        from ..models.imodel import iModel

        return iModel(model=value) if isinstance(value, str) else iModel.from_dict(value)
    return value


def prepare_operate_kw(
    branch: Branch,
    *,
    instruction: Any = None,
    guidance: Any = None,
    context: Any = None,
    response_format: Any = None,
    request_fields: dict[str, Any] | list[str] | None = None,
    actions: bool = False,
    tools: Any = None,
    invoke_actions: bool = True,
    action_strategy: Literal["concurrent", "sequential"] = "concurrent",
    middle: Middle | None = None,
    chat_model: Any = None,
    parse_model: Any = None,
    skip_validation: bool = False,
    clear_messages: bool = False,
    handle_validation: Literal["raise", "return_value", "return_none"] = "return_value",
    images: list[Any] | None = None,  # Any: URLs, paths, bytes (`lion_nb.context.files`)
    image_detail: Literal["low", "high", "auto"] | None = None,
    files: list[Any] | None = None,  # Any: paths or PDF / image bytes
    sender: Any = None,
    recipient: Any = None,
    progression: Any = None,
    include_token_usage_to_model: bool = False,
    num_parse_retries: int = 3,
    **kwargs: Any,
) -> dict[str, Any]:
    """The keywords of `operate`, built from the facade's flat ones. Giving ``tools`` turns
    actions on; other keywords become model options."""
    from .communicate_op import clamp_parse_retries

    if handle_validation not in ("raise", "return_value", "return_none"):
        raise ValueError(
            '`handle_validation` is "raise", "return_value" or "return_none", not '
            f"{handle_validation!r}."
        )
    suppress_errors = kwargs.pop("suppress_errors", True)
    chat_model, parse_model = _model(chat_model), _model(parse_model)
    chat_param = ChatParam(
        guidance=guidance,
        context=context,
        sender=sender,
        recipient=recipient,
        response_format=response_format,
        request_fields=request_fields,
        progression=progression,
        images=images,
        image_detail=image_detail,
        files=files,
        include_token_usage_to_model=include_token_usage_to_model,
        imodel=branch.chat_model if chat_model is None else chat_model,
        imodel_kw=kwargs,
    )
    parse_param = ParseParam(
        response_format=response_format,
        handle_validation=handle_validation,
        imodel=branch.parse_model if parse_model is None else parse_model,
        max_retries=clamp_parse_retries(num_parse_retries),
    )
    return {
        "instruction": instruction,
        "chat_param": chat_param,
        "parse_param": parse_param,
        "actions": bool(actions or tools),
        "tools": tools,
        "invoke_actions": invoke_actions,
        "action_param": ActionParam(strategy=action_strategy, suppress_errors=suppress_errors),
        "middle": middle,
        "clear_messages": clear_messages,
        "skip_validation": skip_validation,
        "handle_validation": handle_validation,
    }


def _register(branch: Branch, tools: Any) -> Any:
    """Register what is new; return what to offer (``True`` for every registered tool)."""
    from ..protocols.actions import Tool

    if tools is None or tools is True:
        return True
    if tools is False:
        return []
    items = list(tools) if isinstance(tools, (list, tuple, set)) else [tools]
    names: list[str] = []
    for item in items:
        if hosted_tool(item):
            continue  # the provider's own (`_hosted`)
        if isinstance(item, str):
            names.append(item)
            continue
        func = item.func_callable if isinstance(item, Tool) else item
        name = item.name if isinstance(item, Tool) else getattr(func, "__name__", None)
        existing = branch.acts.registry.get(name) if name else None
        if existing is None or (existing is not item and existing.func_callable is not func):
            existing = branch.acts.register_tool(item)  # a different tool of that name raises
        names.append(existing.name)
    return names


def hosted_tool(item: object) -> bool:
    """Whether ``item`` is a provider's own tool: a dict whose ``type`` is not ``function``."""
    return (
        isinstance(item, dict) and isinstance(item.get("type"), str) and item["type"] != "function"
    )


def _hosted(tools: Any) -> list[dict[str, Any]]:
    """The provider's own tools among ``tools``, as given."""
    items = tools if isinstance(tools, (list, tuple)) else [tools]
    return [dict(item) for item in items if hosted_tool(item)]


def _new_messages(branch: Branch, mark: Any) -> list[Any]:
    order = branch.messages.progression.order
    i = len(order) - 1
    while i >= 0 and order[i] != mark:
        i -= 1
    return [branch.messages[uid] for uid in order[i + 1 :]]


def _native_requests(new: list[Any], chat_param: ChatParam) -> list[ActionRequest]:
    """Tool calls the model made natively in this exchange and nobody has run yet. A call
    whose arguments were cut off by ``max_tokens`` carries that in ``metadata["cut_off"]``,
    so its error says so (`ActionManager.invoke`)."""
    from .chat_op import cut_by_max_tokens

    handled = {m.call_id for m in new if isinstance(m, ActionRequest)}
    out = []
    for message in new:
        if isinstance(message, AssistantResponse):
            cut = cut_by_max_tokens(message, chat_param)
            for call in message.metadata.get("tool_calls") or ():
                if call.get("id") not in handled:
                    request = to_action_request(call)
                    if cut and "_raw_arguments" in request.arguments:
                        request.metadata["cut_off"] = cut
                    out.append(request)
    return out


def _field_requests(answer: Any) -> list[ActionRequest]:
    found = (
        answer.get("action_requests")
        if isinstance(answer, dict)
        else getattr(answer, "action_requests", None)
    )
    if not isinstance(found, list):
        return []
    out = []
    for item in found:
        try:
            out.append(to_action_request(item))
        except TypeError:
            continue  # a malformed entry the model wrote; nothing to run
    return out


def _valid(result: Any, target: Any) -> bool:
    if isinstance(target, type):
        return isinstance(result, target)
    return isinstance(result, dict)


def _assemble(answer: Any, requests: list[ActionRequest], responses: list[Any]) -> Any:
    if not requests:
        return answer
    req = [ActionRequestModel(function=r.function, arguments=r.arguments) for r in requests]
    res = [ActionResponseModel.from_message(r) for r in responses if r is not None]
    if isinstance(answer, BaseModel) and "action_responses" in type(answer).model_fields:
        # a copy with the fields set: works for frozen models too
        return answer.model_copy(update={"action_requests": req, "action_responses": res})
    plain_req = [r.model_dump() for r in req]
    plain_res = [r.model_dump() for r in res]
    if isinstance(answer, dict):
        return {**answer, "action_requests": plain_req, "action_responses": plain_res}
    return {"response": answer or None, "action_requests": plain_req, "action_responses": plain_res}


async def operate(
    branch: Branch,
    *,
    # Any: any instruction value; tools as `ActionManager` takes; text, model or dict result
    instruction: Any = None,
    chat_param: ChatParam,
    parse_param: ParseParam | None = None,
    actions: bool = False,
    tools: Any = None,
    invoke_actions: bool = True,
    action_param: ActionParam | None = None,
    middle: Middle | None = None,
    clear_messages: bool = False,
    skip_validation: bool = False,
    handle_validation: Literal["raise", "return_value", "return_none"] = "return_value",
) -> Any:
    """One coordinated exchange; see the module docstring for the steps and the result."""
    imodel = branch.chat_model if chat_param.imodel is None else chat_param.imodel
    response_format = chat_param.response_format
    if response_format is None and parse_param is not None:
        response_format = parse_param.response_format
    target = _target(response_format, actions)
    changes: dict[str, Any] = {
        "response_format": target,
        "request_fields": _fields_with_requests(chat_param.request_fields, actions),
    }
    if actions:
        offer = _register(branch, tools)
        hosted = _hosted(tools)
        if not imodel.is_cli and (len(branch.acts) or hosted):
            schemas = branch.acts.get_tool_schema(offer) if len(branch.acts) else []
            changes["tool_schemas"] = [*schemas, *hosted] or None
    chat_param = chat_param.with_(**changes)
    mid_parse: ParseParam | None = None
    if target is not None:
        base = parse_param if parse_param is not None else ParseParam(imodel=branch.parse_model)
        mid_parse = base.with_(response_format=target)
    if middle is None:
        if imodel.is_cli:
            from .run_op import run_and_collect

            middle = run_and_collect
        else:
            from .communicate_op import communicate

            middle = communicate

    order = branch.messages.progression.order
    mark = order[-1] if order else None
    failure: ParseError | None = None
    try:
        result = await middle(
            branch,
            instruction,
            chat_param,
            mid_parse,
            clear_messages=clear_messages,
            skip_validation=skip_validation,
        )
    except ParseError as exc:
        if skip_validation:
            raise
        failure, result = exc, exc.text
    if skip_validation:
        return result

    native = _native_requests(_new_messages(branch, mark), chat_param) if actions else []
    answer = result
    if failure is None and mid_parse is not None and not _valid(result, target):
        if isinstance(result, (str, dict, BaseModel)) and (result or not native):
            from .parse_op import parse

            try:
                answer = await parse(branch, result, mid_parse.with_(handle_validation="raise"))
            except ParseError as exc:
                failure = exc
        elif native:
            answer = None  # nothing but tool calls
        else:
            failure = ParseError(
                f"The exchange gave no answer to validate as `{getattr(target, '__name__', 'the schema')}`.",
                target=target,
                text=result if isinstance(result, str) else None,
            )
    if failure is not None:
        if native:
            answer = None  # the model answered with tool calls; the answer comes next turn
        elif handle_validation == "raise":
            raise failure
        elif handle_validation == "return_none":
            return None
        else:
            return failure.text if failure.text is not None else result

    if not actions:
        return answer
    requests = native + _field_requests(answer)
    responses: list[Any] = []
    if invoke_actions and requests:
        responses = await act(branch, requests, action_param or ActionParam())
        if any(r is not None for r in responses):
            from ..protocols.context_providers import writeback_after_actions

            await writeback_after_actions(branch, responses)
    return _assemble(answer, requests, responses)
