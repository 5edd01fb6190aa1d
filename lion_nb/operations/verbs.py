"""The verbs a caller names -- a cell's ``--op``, `Session.map`'s ``operation=``, the `Chat`
picker, an evaluation -- in one table, and the one way each is called by name.

Each `Verb` says how it takes its instruction, what else it takes (images and files, tools,
the model's own options such as ``reasoning=``), whether it records the exchange on the
branch, and how its answer is collected: ``run`` streams messages and its answer is their
texts joined by blank lines (`joined_answers`, also what `run_and_collect` returns); every
other verb returns its answer. A name outside the table is an operation registered on the
branch's session, called with ``instruction=`` and the caller's keywords.

Callers decide *which* keywords to send (a cell sends its guidance and response format, a
batch its own ``**kwargs``); this table decides only how the call is made, so the four
callers can no longer drift apart.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ..models.imodel import iModel
    from ..session.branch import Branch

__all__ = [
    "VERBS",
    "Verb",
    "call_verb",
    "default_verb",
    "joined_answers",
    "verb_names",
]


@dataclass(frozen=True, slots=True)
class Verb:
    """One verb of `Branch` that callers name as a string."""

    name: str
    #: how the instruction is passed: first argument, ``instruction=``, or ``{"instruction": ...}``
    instruction: Literal["positional", "keyword", "dict"]
    #: the exchange is appended to the branch (``chat``, ``interpret``, ``parse``: nothing is)
    records: bool
    #: takes ``images=`` and ``files=`` with the instruction
    takes_media: bool
    #: takes ``tools=`` (the functions the model may call in this exchange)
    takes_tools: bool
    #: ``"value"``: the call returns the answer; ``"stream"``: messages are streamed and the
    #: answer is their texts joined (`joined_answers`)
    collect: Literal["value", "stream"] = "value"
    #: the model's own options (``reasoning=``) reach the model's request
    takes_model_options: bool = True

    # Any: any instruction value; the verb's keywords passed on and its own result
    async def call(self, branch: Branch, instruction: Any, **kwargs: Any) -> Any:
        """Run this verb on ``branch`` with ``instruction`` and ``kwargs``; its answer."""
        method = getattr(branch, self.name)
        if self.collect == "stream":
            async with aclosing(method(instruction, **kwargs)) as stream:
                return joined_answers([m async for m in _answers(stream)])
        if self.instruction == "keyword":
            return await method(instruction=instruction, **kwargs)
        if self.instruction == "dict":
            return await method({"instruction": instruction}, **kwargs)
        return await method(instruction, **kwargs)


#: every verb callers name, in the order they are listed to users
VERBS: dict[str, Verb] = {
    verb.name: verb
    for verb in (
        Verb("communicate", "positional", records=True, takes_media=True, takes_tools=False),
        Verb("chat", "positional", records=False, takes_media=True, takes_tools=False),
        Verb("operate", "keyword", records=True, takes_media=True, takes_tools=True),
        Verb("ReAct", "dict", records=True, takes_media=False, takes_tools=True),
        Verb("interpret", "positional", records=False, takes_media=False, takes_tools=False),
        Verb("parse", "positional", records=False, takes_media=False, takes_tools=False),
        Verb(
            "run",
            "positional",
            records=True,
            takes_media=True,
            takes_tools=False,
            collect="stream",
        ),
    )
}


def verb_names(*, media: bool | None = None, tools: bool | None = None) -> tuple[str, ...]:
    """The verbs' names, in table order; ``media=`` / ``tools=`` keep those that take (True)
    or do not take (False) images and files, or tools."""
    return tuple(
        v.name
        for v in VERBS.values()
        if (media is None or v.takes_media == media) and (tools is None or v.takes_tools == tools)
    )


def default_verb(model: iModel, *, tools: bool = False) -> str:
    """The verb a caller that names none uses: ``run`` for a CLI agent, ``operate`` when
    there are tools to offer, else ``communicate``."""
    if model.is_cli:
        return "run"
    return "operate" if tools else "communicate"


# Any: any instruction value; the verb's keywords passed on and its own result
async def call_verb(branch: Branch, name: str, instruction: Any, **kwargs: Any) -> Any:
    """Run verb ``name`` -- or the operation registered under it -- on ``branch``; a
    `ValueError` saying how to fix an unknown name."""
    verb = VERBS.get(name)
    if verb is not None:
        return await verb.call(branch, instruction, **kwargs)
    from .node import call_operation, resolve_operation, unknown_operation_hint

    func = resolve_operation(branch, name)
    if func is None:
        raise ValueError(f"Unknown operation: {name}. " + unknown_operation_hint(branch, name))
    return await call_operation(func, {"instruction": instruction, **kwargs})


async def _answers(stream: AsyncIterator[Any]) -> AsyncIterator[str]:
    async for message in stream:
        if message.kind == "assistant_response":
            yield message.response


def joined_answers(texts: Iterable[str | None]) -> str | None:
    """A streamed turn's answer: its answers' texts joined by blank lines, leaving out empty
    and whitespace-only ones (an agent's blank message between tool calls says nothing);
    ``None`` when no text is left."""
    kept = [t for t in texts if t and t.strip()]
    return "\n\n".join(kept) if kept else None
