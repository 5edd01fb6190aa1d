"""Self-check: a Middle adapter that answers in three recorded exchanges -- draft, check,
final -- and a named operation that runs ``operate`` with it.

ADR-0021 D5 defines a Middle as one *logical* exchange: ``operate`` calls it exactly once,
and the adapter may run "a bounded series of recorded inner exchanges". `SelfCheck` is such
an adapter. Each step is an ordinary ``communicate`` on the branch, so each is recorded
(instruction and response, six messages in all) and tagged ``metadata["self_check"]`` =
``"draft"`` / ``"check"`` / ``"final"``:

1. draft: the caller's instruction (with its guidance, context and images), as plain text;
2. check: the model reviews its draft for mistakes;
3. final: the model gives the final answer; only this step carries the response format,
   the requested fields and the tool schemas, and only its result is returned, so
   ``operate`` validates it and runs its tool calls as usual.

``clear_messages`` clears the branch once, before the draft; ``skip_validation`` applies to
the final step. Context providers are consulted for every step (each is a request).

    %lion extend ../extensions/self_check.py
    %%lion --op self_check
    How many prime numbers are there below 30?

or ``await branch.operate(instruction=..., middle=SelfCheck())``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CHECK_PROMPT", "FINAL_PROMPT", "SelfCheck", "extend", "self_check"]

CHECK_PROMPT = (
    "Check the draft you just wrote: is anything wrong, missing or unclear? List the "
    "problems briefly, or say that there are none."
)
FINAL_PROMPT = "Now give your final answer to the original request, correcting those problems."


class SelfCheck:
    """A `Middle` of three recorded exchanges (see the module docstring)."""

    def __init__(self, check_prompt: str = CHECK_PROMPT, final_prompt: str = FINAL_PROMPT):
        self.check_prompt = check_prompt
        self.final_prompt = final_prompt

    async def __call__(
        self,
        branch: Any,
        instruction: Any,
        chat_param: Any,
        parse_param: Any = None,
        clear_messages: bool = False,
        skip_validation: bool = False,
    ) -> Any:
        from lion_nb import ChatParam
        from lion_nb.operations import communicate

        if clear_messages:
            branch.msgs.clear_messages()
        plain = chat_param.with_(response_format=None, request_fields=None, tool_schemas=None)
        await communicate(branch, instruction, plain, None, skip_validation=True)
        _tag(branch, "draft")
        bare = ChatParam(imodel=chat_param.imodel, imodel_kw=chat_param.imodel_kw)
        await communicate(branch, self.check_prompt, bare, None, skip_validation=True)
        _tag(branch, "check")
        final = chat_param.with_(guidance=None, context=None, images=None, plain_content=None)
        result = await communicate(
            branch, self.final_prompt, final, parse_param, skip_validation=skip_validation
        )
        _tag(branch, "final")
        return result


def _tag(branch: Any, step: str) -> None:
    for message in list(branch.messages)[-2:]:  # the exchange just recorded
        message.metadata["self_check"] = step


async def self_check(
    branch: Any, instruction: Any, *, response_format: Any = None, tools: Any = None
) -> Any:
    """``operate`` through `SelfCheck`: tools (if given) are offered in the final step."""
    return await branch.operate(
        instruction=instruction,
        response_format=response_format,
        actions=bool(tools),
        tools=tools,
        middle=SelfCheck(),
    )


def extend(session: Any) -> None:
    """Register ``self_check`` as a named operation of ``session``."""
    session.register_operation("self_check", self_check)
