"""``chat``: one unrecorded model call (ADR-0021 D3).

Builds the instruction, applies context providers, renders the request (incrementally, see
`MessageManager.chat_messages`), checks the budgets (`lion_nb.runtime.budget`), calls the model, accounts for the call in the
ledger (`lion_nb.runtime.ledger`), logs the call, and hands back the
instruction and the response without appending either -- or, when the caller asked for the
text alone, that text (masked and whole, as a response message would hold it) without making
a message to throw away. A failed call raises
`ExecutionError` with the provider's typed error as its cause, before any response is read.
The temporary context-injection slot is cleared in a ``finally`` whatever happens.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Literal, overload

from pydantic import BaseModel

from ..errors import ExecutionError
from ..models.clean import clean_text
from ..models.endpoints import ChatRequest
from ..protocols.messages import AssistantResponse, Instruction
from ..runtime.budget import check_budgets, note_usage
from ..runtime.ledger import record_call
from ..shapes import JsonObject
from .early_end import Received, bill_partial
from .types import ChatParam

if TYPE_CHECKING:
    from ..session.branch import Branch

__all__ = [
    "build_request",
    "chat",
    "cut_by_max_tokens",
    "make_instruction",
    "response_format_spec",
]


@functools.lru_cache(maxsize=256)
def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


# Any: a pydantic model class or instance, a JSON schema, or None
def response_format_spec(response_format: Any) -> JsonObject | None:
    """``{"name", "schema"}`` for a pydantic model class or instance, or a JSON schema."""
    if response_format is None:
        return None
    if isinstance(response_format, BaseModel):
        response_format = type(response_format)
    if isinstance(response_format, type) and issubclass(response_format, BaseModel):
        return {"name": response_format.__name__, "schema": _schema_of(response_format)}
    if isinstance(response_format, dict):
        schema = response_format.get("schema", response_format)
        return {
            "name": response_format.get("name") or schema.get("title") or "Response",
            "schema": schema,
        }
    raise TypeError(
        f"`response_format` takes a pydantic model class or a JSON schema dict, got "
        f"{type(response_format).__name__}."
    )


def _fields_schema(request_fields: Any) -> dict[str, Any] | None:
    if not request_fields:
        return None
    if isinstance(request_fields, (list, tuple)):
        request_fields = dict.fromkeys(request_fields, "...")
    props = {str(k): {"description": str(v)} for k, v in request_fields.items()}
    return {
        "name": "RequestedFields",
        "schema": {"type": "object", "properties": props, "required": list(props)},
    }


def _plain(value: Any) -> bool:
    """Text, numbers and None: nothing to convert (the common case, checked cheaply)."""
    return value is None or isinstance(value, (str, int, float, bool))


# Any: an instruction is any value: text, an `Instruction`, or data rendered into one
def make_instruction(branch: Branch, instruction: Any, param: ChatParam) -> Instruction:
    """The Instruction message for this turn (an Instruction passed in is used as is)."""
    if isinstance(instruction, Instruction):
        return instruction
    fmt = response_format_spec(param.response_format)
    fields = param.request_fields
    if isinstance(fields, (list, tuple)):
        fields = dict.fromkeys(fields, "...")
    context, images, files = param.context, param.images, param.files
    if files or images or not _plain(context):
        from ..context.verbs import instruction_parts

        context, images, files = instruction_parts(context, images, files)
    return Instruction(
        instruction=instruction,
        guidance=param.guidance,
        context=context,
        request_fields=fields or None,
        response_format=fmt["schema"] if fmt else None,
        tool_schemas=param.tool_schemas,
        images=images,
        image_detail=param.image_detail,
        files=files,
        plain_content=param.plain_content,
        sender=param.sender if param.sender is not None else (branch.user or "user"),
        recipient=param.recipient if param.recipient is not None else branch.id_text,
    )


def build_request(
    branch: Branch, ins: Instruction, param: ChatParam, injection: str | None
) -> ChatRequest:
    """The provider request: rendered history, context folded into the system message,
    the new instruction last."""
    messages = branch.msgs.chat_messages(param.progression)
    if injection:
        if messages and messages[0]["role"] == "system":
            messages[0] = {**messages[0], "content": f"{messages[0]['content']}\n\n{injection}"}
        else:
            messages.insert(0, {"role": "system", "content": injection})
    current = ins.chat_msg()
    if param.include_token_usage_to_model:
        from ..tokens import estimate_message_tokens

        used = estimate_message_tokens([*messages, current])
        note = f"\n\n(This conversation uses about {used} tokens so far.)"
        if isinstance(current["content"], str):
            current = {**current, "content": current["content"] + note}
    messages.append(current)
    fmt = response_format_spec(param.response_format) or _fields_schema(param.request_fields)
    if fmt is None and ins.response_format:
        fmt = {"name": ins.response_format.get("title", "Response"), "schema": ins.response_format}
    return ChatRequest(
        messages=messages,
        tools=_as_openai_tools(param.tool_schemas or ins.tool_schemas),
        response_format=fmt,
        options=dict(param.imodel_kw),
        cache_key=branch.id_text,
    )


def _as_openai_tools(schemas: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    if not schemas:
        return None
    out = []
    for schema in schemas:
        if schema.get("type") == "function" and "function" in schema:
            out.append(schema)
        elif isinstance(schema.get("type"), str) and schema["type"] != "function":
            out.append(schema)  # a provider's own tool (web search): sent as it is
        else:
            out.append({"type": "function", "function": schema})
    return out


@overload
async def chat(
    branch: Branch,
    # Any: an instruction is any value: text, an `Instruction`, or data rendered into one
    instruction: Any,  # a str, an Instruction, or the parts `make_instruction` takes
    chat_param: ChatParam,
    return_ins_res_message: Literal[False] = False,
) -> str: ...


@overload
async def chat(
    branch: Branch,
    # Any: an instruction is any value: text, an `Instruction`, or data rendered into one
    instruction: Any,  # a str, an Instruction, or the parts `make_instruction` takes
    chat_param: ChatParam,
    return_ins_res_message: Literal[True],
) -> tuple[Instruction, AssistantResponse]: ...


async def chat(
    branch: Branch,
    # Any: an instruction is any value: text, an `Instruction`, or data rendered into one
    instruction: Any,  # a str, an Instruction, or the parts `make_instruction` takes
    chat_param: ChatParam,
    return_ins_res_message: bool = False,
) -> tuple[Instruction, AssistantResponse] | str:
    """Call the model once; record nothing. See the module docstring."""
    ins = make_instruction(branch, instruction, chat_param)
    imodel = branch.chat_model if chat_param.imodel is None else chat_param.imodel
    request = build_request(branch, ins, chat_param, await branch.take_context(ins))
    billing = imodel.endpoint.billing
    if billing == "live":
        check_budgets(branch, imodel, request)  # raises before a call that would cross one
    with Received() as received:
        try:
            call = await imodel.invoke(request)
        except BaseException as exc:  # cancelled mid-call: bill what arrived (ADR-0106)
            if billing != "none" and received.text:
                bill_partial(branch, imodel, request, received.text, exc)
            raise
    _log_call(branch, imodel, call)
    if call.status == "failed" or call.response is None:
        error = call.error
        from ..models.secrets import redact

        failed = ExecutionError(redact(f"`{imodel.provider}/{imodel.model}` failed: {error}"))
        text = getattr(error, "partial_text", None) or received.text
        if billing != "none" and text:
            reported = getattr(error, "partial_usage", None)
            bill_partial(branch, imodel, request, text, failed, reported)
        raise failed from error
    usage = call.response.usage
    usd = record_call(branch, imodel, usage) if billing != "none" else None
    if billing == "live":
        note_usage(branch, request, call.response)
    note = _cache_break(branch, request) if billing == "live" else None
    if not return_ins_res_message:  # the text alone: no message is made to be thrown away
        return clean_text(call.response.text or "")
    res = _to_assistant_response(branch, imodel, call.response, usd)
    if note and imodel.cache:
        res.metadata["cache_note"] = note
    return ins, res


def _to_assistant_response(
    branch: Branch, imodel: Any, response: Any, usd: float | None
) -> AssistantResponse:
    metadata: dict[str, Any] = {
        "model_response": response.raw,
        "usage": response.usage,
        "model": f"{imodel.provider}/{imodel.model}",
        "cost_usd": usd,  # the ledger's price of this call (None: the model is unpriced)
        **response.metadata,  # readable thinking, reasoning items to send back
    }
    if response.tool_calls:
        metadata["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls
        ]
    if getattr(response, "notes", None):
        metadata["notes"] = list(response.notes)
    if response.finish_reason == "length":  # cut off: later errors about the answer say so
        metadata["finish_reason"] = "length"
    return AssistantResponse(
        response=response.text or "",
        sender=branch.id_text,
        recipient=branch.user or "user",
        metadata=metadata,
    )


def cut_by_max_tokens(response: AssistantResponse, param: ChatParam | None = None) -> str:
    """A sentence saying the answer was cut off by ``max_tokens`` and how to raise it, or
    ``""`` when it was not (finish reason ``length``, recorded on the response)."""
    if response.metadata.get("finish_reason") != "length":
        return ""
    limit = None
    if param is not None:
        imodel = param.imodel
        options = {**(getattr(imodel, "options", None) or {}), **(param.imodel_kw or {})}
        limit = options.get("max_tokens", options.get("max_completion_tokens"))
    where = f"`max_tokens={limit}`" if limit is not None else "`max_tokens`"
    return (
        f"the answer was cut off by {where} before it was complete; raise it (pass a larger "
        "`max_tokens=` to the call, or set it on the model). "
    )


def _cache_break(branch: Branch, request: ChatRequest) -> str | None:
    """Why this request's cached prefix cannot match the last one's: its system prompt or
    its tools changed (an interpolated value, say). ``None`` when nothing changed. Cheap: a
    string's hash is computed once per string object."""
    messages = request.messages
    system = messages[0].get("content") if messages and messages[0]["role"] == "system" else None
    tools = tuple(str((t.get("function") or t).get("name")) for t in request.tools or ())
    mark = (hash(system) if isinstance(system, str) else None, tools)
    before = branch.note_prefix(mark)
    if before is None or before == mark:
        return None
    if before[0] != mark[0]:
        return "The system prompt changed since the last turn, so its cached prefix was not read."
    return "The tools changed since the last turn, so the cached prefix was not read."


def _log_call(branch: Branch, imodel: Any, call: Any) -> None:
    entry: dict[str, Any] = {
        "event": "api_call",
        "provider": imodel.provider,
        "model": imodel.model,
        "status": call.status,
        "duration": call.duration,
        "messages": len(call.request.messages),
    }
    if call.response is not None:
        entry["usage"] = call.response.usage
        if getattr(call.response, "notes", None):
            entry["notes"] = list(call.response.notes)
    if call.error is not None:
        from ..models.secrets import redact

        entry["error"] = redact(f"{type(call.error).__name__}: {call.error}")
    branch.log_manager.log(entry)
