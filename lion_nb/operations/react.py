"""``ReAct`` / ``ReActStream``: reason, act with tools, extend a bounded number of rounds, answer.

A round is an `operate` with the tools on and a `ReActAnalysis` answer (the analysis so far,
tool calls to make, and whether another round is needed). A model that answers a round with
tool calls only (as many models do, the offline ``auto`` one when tools are named) gets one
follow-up in the same round, with the tools off, asking for the analysis of the results; so
every round yields an analysis and the follow-up does not use up an extension.

Rounds continue while the analysis says ``extension_needed`` and the bound allows; then a
final exchange (tools off) answers in ``response_format``, or as text. The bound (ADR-0021
D1): ``None``, 0 or a negative number mean no extension rounds; above 100 warns and is
clamped to 100. `ReAct` defaults to 3 on the facade, `ReActStream` to 0.

Every inner exchange runs inside `nested_turns`, so none of them announces a run of its own:
on the facade, `ReAct` is one observed run. The context variable is set around each awaited
exchange only, never across a ``yield``, so the consumer of the stream is never affected.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ..runtime.lifecycle import nested_turns
from .operate_op import operate, operative_model, prepare_operate_kw

if TYPE_CHECKING:
    from ..session.branch import Branch

__all__ = ["MAX_EXTENSIONS", "ReAct", "ReActAnalysis", "ReActStream", "extension_bound"]

MAX_EXTENSIONS = 100
_ACTION_KEYS = ("action_requests", "action_responses")

_ROUND_GUIDANCE = (
    "Work step by step. Call the available tools when they help. In `analysis`, say what "
    "you know so far and what is missing. Set `extension_needed` to true only if you need "
    "another round of tool use or thinking before you can answer."
)
_FOLLOW_UP = (
    "Analyse the tool results above for the task. Set `extension_needed` to true only if "
    "another round of tool use is needed before the final answer."
)
_EXTEND = (
    "Continue the task: use the tools again if that helps, then analyse. {left} more "
    "round(s) allowed after this one."
)
_ANSWER = "Give the final answer to the original task, using everything above."


class ReActAnalysis(BaseModel):
    """One round's reasoning."""

    analysis: str = Field(description="What is known so far and what is still missing.")
    extension_needed: bool = Field(
        default=False,
        description="True if another round of tool use or thinking is needed before answering.",
    )


def extension_bound(max_extensions: Any) -> int:  # Any: the caller's, checked by int()
    """``max_extensions`` as a bound: None/0/negative -> 0, above 100 -> 100 with a warning."""
    if max_extensions is None:
        return 0
    try:
        value = int(max_extensions)
    except (TypeError, ValueError):
        raise TypeError(
            f"`max_extensions` is a whole number of rounds (or None), got {max_extensions!r}."
        ) from None
    if value > MAX_EXTENSIONS:
        warnings.warn(
            f"`max_extensions={value}` is above the limit of {MAX_EXTENSIONS}; using "
            f"{MAX_EXTENSIONS}.",
            UserWarning,
            stacklevel=3,
        )
        return MAX_EXTENSIONS
    return max(0, value)


def _instruct(instruct: Any) -> dict[str, Any]:
    if isinstance(instruct, BaseModel):
        instruct = instruct.model_dump()
    if isinstance(instruct, str):
        return {"instruction": instruct}
    if not isinstance(instruct, Mapping) or not instruct.get("instruction"):
        raise TypeError(
            "`instruct` is a mapping with `instruction` (and optional `guidance`, `context`), "
            f'e.g. {{"instruction": "..."}}; got {type(instruct).__name__}.'
        )
    return {k: instruct.get(k) for k in ("instruction", "guidance", "context")}


def _needs_more(analysis: Any) -> bool:
    if isinstance(analysis, BaseModel):
        return bool(getattr(analysis, "extension_needed", False))
    if isinstance(analysis, dict):
        return bool(analysis.get("extension_needed"))
    return False


def _tool_only(result: Any) -> bool:
    """operate's shape for an answer that was only tool calls."""
    return (
        isinstance(result, dict) and result.get("response") is None and "action_responses" in result
    )


async def ReActStream(
    branch: Branch,
    # Any: instruction, tools, format and model as `operate` takes them; its keywords passed on
    instruct: Any,
    *,
    tools: Any = None,
    response_format: Any = None,
    max_extensions: int | None = 0,
    extension_allowed: bool = True,
    interpret: bool = False,
    chat_model: Any = None,
    verbose: bool = False,
    interpret_domain: str | None = None,
    interpret_style: str | None = None,
    interpret_sample: str | None = None,
    **kwargs: Any,
) -> AsyncGenerator[Any, None]:
    """Yield each round's analysis, then the final answer (see the module docstring).
    Other keywords go to every `operate` (``parse_model``, ``handle_validation``, model
    options, ...)."""
    bound = extension_bound(max_extensions) if extension_allowed else 0
    ins = _instruct(instruct)
    if interpret:
        from .interpret_op import interpret as rewrite
        from .types import InterpretParam

        param = InterpretParam(
            domain=interpret_domain,
            style=interpret_style,
            sample_writing=interpret_sample,
            imodel=branch.chat_model if chat_model is None else chat_model,
        )
        with nested_turns(branch):
            ins["instruction"] = await rewrite(branch, str(ins["instruction"]), param)
        if verbose:
            print(f"ReAct: interpreted instruction: {ins['instruction']}")
    kwargs.pop("actions", None)
    has_tools = bool(tools) or bool(len(branch.acts))

    async def exchange(**kw: Any) -> Any:
        with nested_turns(branch):
            return await operate(
                branch, **prepare_operate_kw(branch, chat_model=chat_model, **kwargs, **kw)
            )

    async def round_(instruction: Any, **kw: Any) -> Any:
        result = await exchange(
            instruction=instruction,
            response_format=ReActAnalysis,
            actions=has_tools,
            tools=tools if tools is not None else (True if has_tools else None),
            **kw,
        )
        if _tool_only(result):
            follow = await exchange(instruction=_FOLLOW_UP, response_format=ReActAnalysis)
            if isinstance(follow, ReActAnalysis):  # carry the round's tool calls with it
                data = {**follow.model_dump(), **{k: result[k] for k in _ACTION_KEYS}}
                follow = operative_model(ReActAnalysis).model_validate(data)
            result = follow
        return result

    guidance = (
        _ROUND_GUIDANCE if not ins.get("guidance") else f"{ins['guidance']}\n\n{_ROUND_GUIDANCE}"
    )
    analysis = await round_(ins["instruction"], guidance=guidance, context=ins.get("context"))
    if verbose:
        print(f"ReAct round 1: {_summary(analysis)}")
    yield analysis
    done = 0
    while done < bound and _needs_more(analysis):
        done += 1
        analysis = await round_(_EXTEND.format(left=bound - done))
        if verbose:
            print(f"ReAct round {done + 1}: {_summary(analysis)}")
        yield analysis
    final = await exchange(instruction=_ANSWER, response_format=response_format)
    if verbose:
        print(f"ReAct answer: {_summary(final)}")
    yield final


def _summary(value: Any) -> str:
    text = getattr(value, "analysis", None) if isinstance(value, BaseModel) else None
    text = text if text is not None else str(value)
    return text if len(text) <= 200 else text[:197] + "..."


async def ReAct(
    branch: Branch,
    # Any: instruction, tools, format and model as `operate` takes them; its keywords passed on
    instruct: Any,
    *,
    tools: Any = None,
    response_format: Any = None,
    max_extensions: int | None = 3,
    extension_allowed: bool = True,
    interpret: bool = False,
    chat_model: Any = None,
    return_analysis: bool = False,
    verbose: bool = False,
    **kwargs: Any,
) -> Any:
    """Run `ReActStream` to the end: the final answer, or ``(answer, analyses)`` with
    ``return_analysis=True``."""
    items = []
    stream = ReActStream(
        branch,
        instruct,
        tools=tools,
        response_format=response_format,
        max_extensions=max_extensions,
        extension_allowed=extension_allowed,
        interpret=interpret,
        chat_model=chat_model,
        verbose=verbose,
        **kwargs,
    )
    try:
        async for item in stream:
            items.append(item)
    finally:
        await stream.aclose()
    final, analyses = items[-1], items[:-1]
    return (final, analyses) if return_analysis else final
