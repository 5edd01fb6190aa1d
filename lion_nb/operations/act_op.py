"""``act``: run tool calls and record them (ADR-0021; the action phase of ADR-0022).

Input: one request or a list -- an `ActionRequest`, a dict (``{"function"|"name",
"arguments"}``, optionally ``"id"``/``"call_id"``), a pydantic model with those fields
(`ActionRequestModel`), or anything with ``name``/``function`` and ``arguments`` attributes
(a provider `ToolCall`).

Recording order is fixed whatever the strategy: every request first (in the given order;
one already on the branch is not added again), then every response in request order, after
all calls finished. So the history always reads as one tool-call batch followed by its
results, which is the shape OpenAI-style APIs require, and two runs with different timing
record the same sequence.

A tool's failure never escapes the call: `ActionManager.invoke` turns an unknown tool (its
message names the registered tools), bad arguments or an exception inside the tool into an
`ActionResponse` with ``is_error=True``. With ``suppress_errors=False`` the responses are
still all recorded, then the first failed one (in request order) raises `ExecutionError`
carrying every response in ``.action_responses``. Cancellation is not a failure: it
propagates, but only after every request has its response recorded -- the real one for a
call that finished, an error response marked ``metadata["cancelled"]`` for one that had
not -- so that the history stays a valid tool-call batch for every provider.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, Field

from ..errors import ExecutionError
from ..protocols.messages import ActionRequest, ActionResponse
from .types import ActionParam

if TYPE_CHECKING:
    from ..session.branch import Branch

__all__ = ["ActionRequestModel", "ActionResponseModel", "act", "to_action_request"]

logger = logging.getLogger("lion_nb.operations.act_op")


class ActionRequestModel(BaseModel):
    """A tool call a model asks for inside a structured answer."""

    function: str = Field(description="The name of the tool to call.")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="The tool's arguments, as a JSON object."
    )


class ActionResponseModel(BaseModel):
    """What one tool call returned (or its contained error)."""

    function: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    output: Any = None
    is_error: bool = False

    @classmethod
    def from_message(cls, response: ActionResponse) -> ActionResponseModel:
        return cls(
            function=response.function,
            arguments=dict(response.arguments),
            output=response.output,
            is_error=response.is_error,
        )


def _arguments(value: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value or "{}")
        except ValueError:
            return {"_raw": value}  # the tool's validation reports it to the model
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if not isinstance(value, dict):
        raise TypeError(
            f"The arguments of the call to `{name}` must be a JSON object, got "
            f"{type(value).__name__}."
        )
    return dict(value)


# Any: any form the module docstring lists (a request, a dict, a tool call)
def to_action_request(item: Any, branch: Branch | None = None) -> ActionRequest:
    """One request in any accepted form (see the module docstring) as an `ActionRequest`."""
    if isinstance(item, ActionRequest):
        return item
    if isinstance(item, BaseModel):
        item = item.model_dump()
    if isinstance(item, dict):
        name = item.get("function") or item.get("name")
        args = item.get("arguments", item.get("args"))
        call_id = item.get("call_id") or item.get("id")
    else:
        name = getattr(item, "function", None) or getattr(item, "name", None)
        args = getattr(item, "arguments", None)
        call_id = getattr(item, "call_id", None) or getattr(item, "id", None)
    if not isinstance(name, str) or not name:
        raise TypeError(
            f"`act` takes ActionRequests, dicts with `function` (or `name`) and `arguments`, "
            f"or models with those fields; got {type(item).__name__} without a tool name."
        )
    data: dict[str, Any] = {"function": name, "arguments": _arguments(args, name)}
    if isinstance(call_id, str) and call_id:
        data["call_id"] = call_id
    if branch is not None:
        data["sender"] = str(branch.id)
        data["recipient"] = name
    return ActionRequest(**data)


def _as_list(action_request: Any) -> list[Any]:
    if action_request is None:
        return []
    if isinstance(action_request, (ActionRequest, BaseModel, dict, str, bytes)):
        return [action_request]
    if isinstance(action_request, Iterable):
        return list(action_request)
    return [action_request]


# Any: one request or a list, each in any form `to_action_request` takes
async def act(branch: Branch, action_request: Any, param: ActionParam) -> list[ActionResponse]:
    """Run the requested tools and record requests and responses (see the module docstring)."""
    requests = [to_action_request(item, branch) for item in _as_list(action_request)]
    if not requests:
        return []
    if param.strategy not in ("concurrent", "sequential"):
        raise ValueError(f'`strategy` is "concurrent" or "sequential", not {param.strategy!r}.')
    registry = branch.acts.registry
    for request in requests:
        server = getattr(registry.get(request.function), "server_name", None)
        if server:  # a tool of an MCP server: the views show which server ran it
            request.metadata["mcp_server"] = server
        if request.id not in branch.messages:
            branch.msgs.add_message(action_request=request)

    responses: list[ActionResponse | None] = [None] * len(requests)

    async def run_one(index: int, request: ActionRequest) -> None:
        responses[index] = await branch.acts.invoke(request)

    try:
        if param.strategy == "sequential" or len(requests) == 1:
            for index, request in enumerate(requests):
                await run_one(index, request)
        else:
            async with anyio.create_task_group() as tg:
                for index, request in enumerate(requests):
                    tg.start_soon(run_one, index, request)
    except BaseException as exc:  # cancelled (or interrupted) while tools ran
        _record_unfinished(branch, requests, responses, exc)
        raise

    done: list[ActionResponse] = []
    for request, response in zip(requests, responses, strict=True):
        assert response is not None  # every task finished or the group raised
        response.sender = request.function
        response.recipient = str(branch.id)
        branch.msgs.add_message(action_response=response)
        done.append(response)
        if param.verbose:
            status = "failed" if response.is_error else "ok"
            logger.info("tool `%s` %s: %s", request.function, status, response.rendered[:200])

    return _check_failures(done, param)


def _record_unfinished(
    branch: Branch,
    requests: list[ActionRequest],
    responses: list[ActionResponse | None],
    exc: BaseException,
) -> None:
    """Record a response for every request, so the history stays a valid tool-call batch.

    What finished is recorded as it came back; a call that was still running gets an error
    response saying it was cancelled. Without this, the recorded requests would have no
    results, and the next request of an OpenAI-style API would be refused as malformed.
    Recording is synchronous, so it happens even while the cancellation propagates.
    """
    what = "cancelled" if isinstance(exc, anyio.get_cancelled_exc_class()) else "interrupted"
    for request, response in zip(requests, responses, strict=True):
        if response is None:
            output: dict[str, Any] = {
                "error": f"The call was {what} before it finished; it has no result."
            }
            metadata: dict[str, Any] = {"cancelled": True}
            approval = request.metadata.get("approval", "")
            if approval.startswith("denied"):  # stopped while a person was asked: denied
                from ..protocols.approval import denial_output

                output = denial_output(request.function, "the turn was stopped before approval")
                metadata["approval"] = approval
            if request.metadata.get("mcp_server"):
                metadata["mcp_server"] = request.metadata["mcp_server"]
            response = ActionResponse(
                function=request.function,
                arguments=dict(request.arguments),
                output=output,
                call_id=request.call_id,
                action_request_id=str(request.id),
                is_error=True,
                metadata=metadata,
            )
            request.action_response_id = str(response.id)
        response.sender = request.function
        response.recipient = str(branch.id)
        branch.msgs.add_message(action_response=response)


def _check_failures(done: list[ActionResponse], param: ActionParam) -> list[ActionResponse]:
    if not param.suppress_errors:
        failed = next((r for r in done if r.is_error), None)
        if failed is not None:
            detail = (
                failed.output.get("error") if isinstance(failed.output, dict) else failed.output
            )
            error = ExecutionError(
                f"Tool `{failed.function}` failed: {detail}. Every call and its result is "
                "recorded on the branch; pass `suppress_errors=True` to get the errors as "
                "responses instead."
            )
            error.action_responses = done  # type: ignore[attr-defined]
            raise error
    return done
