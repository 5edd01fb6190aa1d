"""Who answers a coding agent's permission requests during `run`, and what an ACP agent is
given of the branch (its history, its MCP servers).

The policy is the model's ``approve=`` when set, else the branch's ``approve``, else
``"ask"`` (an agent's requests are asked by default, unlike a tool's calls):

- ``True`` / ``False``: the agent's allow-once / reject-once option;
- a callable ``(title, arguments) -> bool`` (sync or async): its answer; an exception in
  it rejects (approval fails closed);
- ``"ask"``: the asker in effect when the turn started (the turn view's approval card, with
  every option the agent offers: allow once / always, reject once / always). With nobody
  to ask, the request is rejected.

The answer is the id of one of the agent's options (``None`` when none fits: the request is
answered ``cancelled``). "Always" answers are the agent's to remember.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..protocols.approval import ALWAYS, Ask, current_asker
from ..shapes import JsonObject

if TYPE_CHECKING:
    from ..models.imodel import iModel
    from ..session.branch import Branch

__all__ = ["agent_history", "agent_mcp_servers", "permission_for"]

log = logging.getLogger("lion_nb.approval")

#: what an asker returns to pick one of the agent's options by id
OPTION = "option:"


def _first(options: list[dict[str, Any]], *kinds: str) -> str | None:
    for kind in kinds:
        for option in options:
            if option.get("kind") == kind:
                return str(option["id"])
    return None


def _allow(options: list[dict[str, Any]]) -> str | None:
    return _first(options, "allow_once", "allow_always")


def _reject(options: list[dict[str, Any]]) -> str | None:
    return _first(options, "reject_once", "reject_always")


def _from_answer(answer: Any, options: list[dict[str, Any]]) -> str | None:
    """An asker's answer as an option id: ``"option:ID"``, ``"always"``, or true / false."""
    if isinstance(answer, str) and answer.startswith(OPTION):
        chosen = answer[len(OPTION) :]
        return chosen if any(o["id"] == chosen for o in options) else _reject(options)
    if answer == ALWAYS:
        return _first(options, "allow_always", "allow_once")
    if answer is True:
        return _allow(options)
    return _reject(options)


def permission_for(branch: Branch, imodel: iModel) -> Callable[..., Awaitable[str | None]]:
    """The ``permission`` callback of one `run` turn (see the module docstring)."""
    policy: Any = getattr(imodel.endpoint, "approve", None)
    if policy is None:
        policy = branch.approve
    if policy is None:
        policy = "ask"
    asker = current_asker()  # the turn's: the agent's requests arrive in another task
    agent = f"{imodel.provider}/{imodel.model}"

    async def permit(title: str, arguments: dict[str, Any], options: list[dict[str, Any]]) -> Any:
        if policy is True:
            return _allow(options)
        if policy is False:
            return _reject(options)
        if policy == "ask":
            if asker is None:
                return _reject(options)  # nobody to ask
            ask = Ask(tool=title, arguments=arguments, server=agent, extra={"options": options})
            return _from_answer(await asker(ask), options)
        try:
            answer = policy(title, dict(arguments))
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception:
            log.warning("approval callable for `%s` failed", title, exc_info=True)
            return _reject(options)
        return _allow(options) if answer else _reject(options)

    return permit


def agent_history(branch: Branch) -> list[JsonObject]:
    """The branch's conversation as ``{"role", "content"}`` turns (system prompt left out:
    it travels as the turn's system text)."""
    turns: list[JsonObject] = []
    for message in branch.messages:
        kind = getattr(message, "kind", "")
        if kind == "instruction":
            turns.append({"role": "user", "content": message.rendered})
        elif kind == "assistant_response" and getattr(message, "response", ""):
            turns.append({"role": "assistant", "content": getattr(message, "response", "")})
    return turns


def agent_mcp_servers(branch: Branch) -> list[JsonObject]:
    """The branch's MCP servers as an ACP agent starts them (stdio command or URL)."""
    found = []
    for server in branch.mcp_servers.values():
        spec = getattr(server, "launch_spec", None)
        if callable(spec):
            found.append(spec())
    return found
