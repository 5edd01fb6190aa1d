"""``communicate``: a recorded model call, then optional parsing (ADR-0021 D3).

Order: clear messages if asked; one `chat`; append the instruction and the response (in that
order); then return the text (``skip_validation`` or nothing to parse), the parsed
``response_format`` instance, or the ``request_fields`` mapping with unmatched fields
removed. Parse failures are wrapped in `ParseError` naming the requested type; when the
answer was cut off by ``max_tokens`` the error says so and how to raise it. The parse model's
call gets the turn's own ``max_tokens`` (a re-parse is bounded like the call it repairs). The
lifecycle is the facade's (`observed_run`), not this function's.

A turn that ends early (a stream cut short, a cancellation) keeps what arrived, marked
incomplete, by the rule in `early_end`.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from ..errors import ExecutionError, ParseError, ProviderError
from .chat_op import chat, cut_by_max_tokens, make_instruction
from .early_end import billed, is_cancellation, partial_answer, reason_for
from .types import ChatParam, ParseParam

if TYPE_CHECKING:
    from ..session.branch import Branch

__all__ = ["MAX_PARSE_RETRIES", "clamp_parse_retries", "communicate"]

MAX_PARSE_RETRIES = 5


def clamp_parse_retries(value: int) -> int:
    """Values above 5 warn and become 5 (fewer than 3 is usually enough)."""
    if value > MAX_PARSE_RETRIES:
        warnings.warn(
            f"`num_parse_retries={value}` is above the limit of {MAX_PARSE_RETRIES}; using "
            f"{MAX_PARSE_RETRIES}. Fewer than 3 retries is usually enough.",
            UserWarning,
            stacklevel=3,
        )
        return MAX_PARSE_RETRIES
    return max(0, value)


async def communicate(
    branch: Branch,
    # Any: any instruction value; the fields' types; the result is text or the parsed value
    instruction: Any,
    chat_param: ChatParam,
    parse_param: ParseParam | None = None,
    clear_messages: bool = False,
    skip_validation: bool = False,
    request_fields: dict[str, Any] | list[str] | None = None,
) -> Any:
    """Record one exchange and return its (parsed) result. See the module docstring."""
    retries = clamp_parse_retries(parse_param.max_retries) if parse_param is not None else 0
    if clear_messages:
        branch.msgs.clear_messages()
    ins = make_instruction(branch, instruction, chat_param)
    ended: BaseException | None = None
    try:
        ins, res = await chat(branch, ins, chat_param, return_ins_res_message=True)
    except BaseException as exc:
        ended = exc
    if ended is not None:
        raise _ended_early(branch, ins, chat_param, ended)
    branch.msgs.add_message(instruction=ins)
    branch.msgs.add_message(assistant_response=res)

    if skip_validation:
        return res.response

    if parse_param is not None and parse_param.response_format is not None:
        from .parse_op import parse_with_details

        target = parse_param.response_format
        name = getattr(target, "__name__", None) or "the response format"
        try:
            value, parse_response = await parse_with_details(
                branch,
                res.response,
                parse_param.with_(
                    max_retries=retries,
                    handle_validation="raise",
                    imodel_kw=_parse_options(parse_param, chat_param),
                ),
            )
        except ValueError as exc:
            cut = cut_by_max_tokens(res, chat_param)
            raise ParseError(
                f"The model's answer could not be parsed into `{name}`: {cut}{exc}",
                target=target,
                text=res.response,
            ) from exc
        if parse_response is not None:
            res.metadata["original_model_response"] = res.metadata.get("model_response")
            res.metadata["parse_model_response"] = parse_response
        return value

    fields = request_fields if request_fields is not None else chat_param.request_fields
    if fields:
        from .parse_op import extract_json, fuzzy_validate_mapping

        keys = list(fields) if not isinstance(fields, dict) else list(fields.keys())
        data = extract_json(res.response)
        if not isinstance(data, dict):
            return res.response
        return fuzzy_validate_mapping(data, keys, drop_undefined=True)

    return res.response


def _ended_early(
    branch: Branch, ins: Any, chat_param: ChatParam, exc: BaseException
) -> BaseException:
    """Apply the early-end rule (`early_end`) to a call that ended with ``exc``; return the
    exception to raise. `chat` billed the call when text had arrived."""
    failed = isinstance(exc, ExecutionError)  # the call failed (the provider's error is the cause)
    cause = exc.__cause__ if failed else exc
    bill = billed(exc)
    text = bill[0] if bill is not None else ""
    if isinstance(cause, ProviderError) and cause.partial_text:
        text = cause.partial_text
    if not text or not (failed or is_cancellation(exc)):
        return exc  # nothing arrived: the branch stays as it was
    imodel = branch.chat_model if chat_param.imodel is None else chat_param.imodel
    answer = partial_answer(branch, imodel, text, reason_for(cause or exc), bill)
    branch.msgs.add_message(instruction=ins)
    branch.msgs.add_message(assistant_response=answer)
    return cause if isinstance(cause, ProviderError) else exc


def _parse_options(parse_param: ParseParam, chat_param: ChatParam) -> dict[str, Any]:
    """The parse call's options: its own, plus the turn's output limit when it has none."""
    options = dict(parse_param.imodel_kw)
    for key in ("max_tokens", "max_completion_tokens"):
        if key in chat_param.imodel_kw and key not in options:
            options[key] = chat_param.imodel_kw[key]
    return options
