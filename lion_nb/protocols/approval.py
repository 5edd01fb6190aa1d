"""Approval of tool calls: who says a call may run, before it runs.

A policy is one of:

- ``True`` (or ``None``, "not set"): the call runs;
- ``False``: the call is always denied;
- a callable ``(tool_name, arguments) -> bool``, sync or async: its answer decides; an
  exception inside it denies the call (approval fails closed);
- ``"ask"``: a person decides. The asker in effect (`asking`) is called with an `Ask`; in a
  notebook the turn view shows Approve / Deny / "approve for this tool from now on" (and, for
  code, Edit then run: the answer is an `Edited` with the arguments to run instead). With no
  asker (a script), nobody can be asked, and the call is denied with that reason.

The policy is looked up on the tool first (``Tool(..., approve=)``, or ``connect_mcp(...,
approve=)`` for a server's tools), then on the branch (``Branch(approve=)``, the default for
its tools). "Approve from now on" is remembered by the branch where it was given (its
`ActionManager`), not by the tool: a clone shares its source's tool objects, and an answer
given on one branch holds on that branch only.

A denied call never runs: `ActionManager.invoke` records a response whose output tells the
model the call was denied (``metadata["approval"]`` says by whom). Cancelling the turn while a
person is being asked (the kernel interrupt, Stop) propagates like any cancellation; `act`
records that call as denied.
"""

from __future__ import annotations

import contextvars
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..shapes import JsonObject

__all__ = [
    "ALWAYS",
    "NOBODY",
    "Ask",
    "Decision",
    "Edited",
    "asking",
    "check_policy",
    "decide",
    "denial_output",
]

logger = logging.getLogger("lion_nb.approval")

#: what an asker returns for "approve for this tool from now on"
ALWAYS = "always"
#: what an asker returns when nobody could see the question (no front end showed it)
NOBODY = "nobody"

# Any: an asker answers True, False, `ALWAYS` or a reason text, read by `decide`
Asker = Callable[["Ask"], Awaitable[Any]]
_ASKER: contextvars.ContextVar[Asker | None] = contextvars.ContextVar("lion_nb_asker", default=None)


@dataclass
class Ask:
    """One call waiting for a person: what to show, and the tool it is for."""

    tool: str
    arguments: dict[str, Any]
    server: str | None = None
    call_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    by: str  # "policy", "callable", "user", "nobody"
    reason: str = ""
    #: the arguments to run instead of the model's (the person edited them); None: the model's
    arguments: dict[str, Any] | None = None


@dataclass(frozen=True)
class Edited:
    """An asker's answer "run this instead": the call runs once with ``arguments`` (both the
    model's and these are recorded)."""

    arguments: dict[str, Any]


# Any: the policy as given: None, a bool, "ask" or a callable
def check_policy(value: object, where: str = "approve") -> Any:
    """``value`` if it is a valid policy; a `TypeError` naming ``where`` and the forms if not."""
    if value is None or isinstance(value, bool) or value == "ask" or callable(value):
        return value
    raise TypeError(
        f'`{where}={value!r}` is not an approval policy: pass True, False, "ask" or a '
        "callable `(tool_name, arguments) -> bool`."
    )


class asking:
    """Within this block (this task and the tasks it starts), ``"ask"`` calls ``asker``."""

    __slots__ = ("_asker", "_token")

    def __init__(self, asker: Asker | None):
        self._asker = asker

    def __enter__(self) -> asking:
        self._token = _ASKER.set(self._asker)
        return self

    def __exit__(self, *exc: object) -> None:
        _ASKER.reset(self._token)


def current_asker() -> Asker | None:
    return _ASKER.get()


async def decide(
    # Any: `tool` is a `Tool` or a stand-in; `default` and `remember` take any policy
    tool: Any,
    arguments: JsonObject,
    default: Any,
    ask: Ask,
    remember: Callable[[Any], None] | None = None,
) -> Decision:
    """Whether the call may run, under the tool's policy or else ``default``; an answer
    "from now on" is passed to ``remember`` (the branch's record of such answers)."""
    policy = getattr(tool, "approve", None)
    if policy is None:
        policy = default
    if policy is None or policy is True:
        return Decision(True, "policy")
    if policy is False:
        return Decision(False, "policy", f"calls to `{ask.tool}` are not approved")
    if policy == "ask":
        asker = _ASKER.get()
        if asker is None:
            return Decision(
                False,
                "nobody",
                'approve="ask" needs someone to ask (a notebook turn view); nobody was '
                "asked, so the call did not run",
            )
        answer = await asker(ask)
        if answer == NOBODY:
            return Decision(
                False, "nobody", "nobody could be asked (no front end showed the question)"
            )
        if isinstance(answer, Edited):
            return Decision(True, "user", "edited, then approved", dict(answer.arguments))
        if answer == ALWAYS:
            if remember is not None:
                remember(tool)
            return Decision(True, "user", "approved for this tool from now on")
        if answer:
            return Decision(True, "user")
        return Decision(False, "user", "the user denied the call")
    try:
        answer = policy(ask.tool, dict(arguments))
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:
        logger.warning("approval callable for `%s` failed", ask.tool, exc_info=True)
        return Decision(False, "callable", f"the approval check failed ({type(exc).__name__})")
    if answer:
        return Decision(True, "callable")
    return Decision(False, "callable", "the approval check denied the call")


def denial_output(tool: str, reason: str) -> dict[str, str]:
    """The tool result a model receives for a denied call."""
    return {
        "denied": f"The call to `{tool}` was denied and did not run: {reason}. Do not retry "
        "it; continue without it or ask the user."
    }
