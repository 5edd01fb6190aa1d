"""Running a planned turn: its verb called through the verb table, its view kept informed.

``-t`` tools are offered to the turn and taken off the branch when the turn ends (a tool for
every later turn is what ``%lion tool`` registers); ``-m`` is the branch's model for the turn
only. An ``operate`` turn whose model only called tools gets one follow-up exchange, tools
off, that answers from their results: the cell's value is the answer (text, or the ``-r``
model's instance), never operate's record of the calls. ``-f code`` asks the model for
Python code (`CODE_GUIDANCE`); ``--effort`` is the call's ``reasoning=``.

Running streams text fragments and recorded messages to the turn's view, tags every message
the turn recorded with its cell, and leaves the conversation as the operation left it: a
failed or interrupted turn keeps what was received (ADR-0021), and the view says what
happened.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ...operations.verbs import VERBS, call_verb, verb_names
from . import cells
from .failures import presentable, provider_error
from .plan import TurnPlan

__all__ = ["ATTACHING_OPERATIONS", "CODE_GUIDANCE", "call_turn", "execute", "execute_shown"]


@contextlib.contextmanager
def _model_for_turn(branch: Any, model: Any) -> Iterator[None]:
    """Use ``model`` as the branch's chat model for this turn only."""
    if model is None:
        yield
        return
    saved = branch.chat_model
    branch.chat_model = model
    try:
        yield
    finally:
        branch.chat_model = saved


def _offer_tools(branch: Any, tools: list[Any]) -> list[str] | None:
    """Register the cell's tools on the branch for this turn (replacing an older definition
    of the same name: redefining a function and re-running the cell is the notebook way) and
    return their names; ``None`` when the cell names none. `_tools_for_turn` undoes it."""
    if not tools:
        return None
    return [branch.acts.register_tool(func, update=True).name for func in tools]


@contextlib.contextmanager
def _tools_for_turn(branch: Any, funcs: list[Any]) -> Iterator[None]:
    """Keep the cell's tools (``-t``) on the branch for this turn only: afterwards every tool
    the turn registered for them is removed, or the definition it replaced is put back.
    Tools registered meanwhile for other functions (``%lion tool``) stay."""
    if not funcs:
        yield
        return
    acts = branch.acts
    saved = dict(acts.registry)
    try:
        yield
    finally:
        for name, tool in list(acts.registry.items()):
            if saved.get(name) is tool or not any(
                tool is f or tool.func_callable is f for f in funcs
            ):
                continue
            if name in saved:
                acts.register_tool(saved[name], update=True)
            else:
                acts.remove_tool(name)


#: the follow-up of an exchange that only called tools: the answer comes from their results
ANSWER_FROM_TOOLS = "Answer the request above, using the tool results."
#: what ``--format code`` asks of the model: the answer goes into a code cell
CODE_GUIDANCE = "Answer with Python code only, in one ```python fenced block."


def _tools_only(result: Any) -> bool:
    """Whether operate's result is its shape for an exchange that called tools but gave no
    answer yet (text beside tool calls is a preamble, not the answer)."""
    return isinstance(result, dict) and {"response", "action_responses"} <= set(result)


async def _operate(
    branch: Any,
    text: str,
    names: list[str] | None,
    kw: dict[str, Any],
) -> Any:
    """``operate``, then -- when the model only called tools -- one follow-up exchange without
    tools that answers from their results, so the cell shows the answer (an instance of the
    response format when given), not operate's record of the calls. One observed run."""
    from ...runtime.lifecycle import observed_run

    actions = bool(names) or bool(branch.tools)  # tools registered with `%lion tool` too

    async def exchange() -> Any:
        result = await call_verb(branch, "operate", text, actions=actions, tools=names, **kw)
        if actions and _tools_only(result):
            follow = {k: kw[k] for k in ("guidance", "response_format", "reasoning") if k in kw}
            return await call_verb(branch, "communicate", ANSWER_FROM_TOOLS, **follow)
        return result

    return await observed_run(branch, exchange(), "operate")


#: ``--agent``: tool rounds before the model must answer, and what each next round is told
AGENT_ROUNDS = 10
AGENT_CONTINUE = "Continue from the tool results above: call tools again if needed, or answer."


async def _agent_rounds(branch: Any, text: str, names: list[str] | None, kw: dict[str, Any]) -> Any:
    """``--agent``: ``operate`` with the tools again while the model only calls tools (it
    runs code, reads the result, tries again), at most `AGENT_ROUNDS`; then an answer
    without tools if it still has not given one. One observed run."""
    import anyio

    from ...runtime.lifecycle import observed_run

    async def rounds() -> Any:
        instruction, result = text, None
        for _ in range(AGENT_ROUNDS):
            # a Stop that came while a round ran ends the turn here, whatever the model
            # (an offline one never waits, so it would never see the Stop otherwise)
            await anyio.lowlevel.checkpoint()
            result = await call_verb(
                branch, "operate", instruction, actions=True, tools=names, **kw
            )
            if not _tools_only(result):
                return result
            instruction = AGENT_CONTINUE
        follow = {k: kw[k] for k in ("guidance", "response_format", "reasoning") if k in kw}
        await anyio.lowlevel.checkpoint()
        return await call_verb(branch, "communicate", ANSWER_FROM_TOOLS, **follow)

    return await observed_run(branch, rounds(), "operate")


#: the operations that take images and files with the instruction
ATTACHING_OPERATIONS = verb_names(media=True)


def _call_kwargs(plan: TurnPlan) -> dict[str, Any]:
    """What the cell sends its verb besides the instruction (by what the verb takes)."""
    verb = VERBS.get(plan.op)
    if verb is None:  # a registered operation: the instruction, its format and tools only
        extra: dict[str, Any] = {}
        if plan.response_format is not None:
            extra["response_format"] = plan.response_format
        if plan.tools:
            extra["tools"] = plan.tools
        return extra
    kw: dict[str, Any] = {}
    if verb.takes_media:
        kw.update(images=plan.images or None, files=plan.files or None)
    if verb.name in ("communicate", "chat", "operate"):
        kw["guidance"] = CODE_GUIDANCE if plan.options.fmt == "code" else None
    if verb.name in ("communicate", "chat", "operate", "ReAct", "parse"):
        kw["response_format"] = plan.response_format
    if verb.name == "parse":
        kw["handle_validation"] = "raise"
    if verb.name == "ReAct":
        kw["tools"] = _offer_tools(plan.branch, plan.tools)
        if plan.options.extensions is not None:
            kw["max_extensions"] = plan.options.extensions
    if plan.options.effort is not None and verb.takes_model_options:
        kw["reasoning"] = plan.options.effort
    return kw


async def call_turn(plan: TurnPlan) -> Any:
    """Call the turn's verb with what the cell gives it; the turn's result."""
    branch, text, op = plan.branch, plan.text, plan.op
    kw = _call_kwargs(plan)
    if op == "operate" and plan.options.agent:
        return await _agent_rounds(branch, text, _offer_tools(branch, plan.tools), kw)
    if op == "operate":
        return await _operate(branch, text, _offer_tools(branch, plan.tools), kw)
    answer = await call_verb(branch, op, text, **kw)
    rf = plan.response_format
    if op == "run" and rf is not None and answer is not None:  # an agent answers in text
        return await branch.parse(answer, response_format=rf, handle_validation="raise")
    return answer


async def execute_shown(plan: TurnPlan, view: Any, session: Any) -> Any:
    """`execute`, its error raised as the notebook shows it (`presentable`), in the
    foreground as in a background run."""
    try:
        return await execute(plan, view, session)
    except Exception as exc:
        shown = presentable(exc)
        if shown is exc:
            raise
        raise shown from None


async def execute(plan: TurnPlan, view: Any, session: Any) -> Any:
    """Run ``plan``, reporting to ``view`` (already started). Returns the turn's result."""
    from ...models.endpoints import streaming_to
    from ...models.endpoints.base import thinking_to
    from ...protocols.signals import MessageAdded
    from ...runtime.budget import budget_scope

    branch = plan.branch
    branch_id = str(branch.id)

    def on_message(signal: Any) -> None:
        if signal.branch_id == branch_id:
            view.message(signal.message)

    before = set(branch.messages.keys())
    subscription = branch.observe(MessageAdded, on_message)
    try:
        from ...protocols.approval import asking, current_asker
        from ..agent.execute import runs_shown_by

        with (
            streaming_to(view.text),
            thinking_to(_thinking_sink(view)),
            _model_for_turn(branch, plan.model),
            _tools_for_turn(branch, plan.tools),
            budget_scope(_cell_meter(plan), "cell"),
            asking(getattr(view, "ask", None) or current_asker()),  # approve="ask"
            runs_shown_by(getattr(view, "code_running", None)),  # Stop while code runs
        ):
            result = await call_turn(plan)
    except BaseException as exc:
        import anyio

        interrupted = isinstance(exc, (anyio.get_cancelled_exc_class(), KeyboardInterrupt))
        view.fail(provider_error(exc) or exc, interrupted=interrupted)
        raise
    finally:
        subscription.cancel()
        new = [m for m in branch.messages if m.id not in before]
        cells.tag_messages(new, plan.cell, plan.turn_id)
        from ..state.persistence import checkpoint

        checkpoint(session)  # the tags reach the session store now, not after the cell
    view.finish(result)
    return result


def _thinking_sink(view: Any) -> Any:
    """Where the model's thinking goes: the view's ``thinking``, if it has one."""
    show = getattr(view, "thinking", None)
    return (lambda chunk: show(chunk.content or "")) if callable(show) else None


def _cell_meter(plan: TurnPlan) -> Any:
    """The cell's ``--budget`` meter: one per turn, so a continued turn counts what it spent."""
    usd = plan.options.budget
    if plan.meter is None and usd is not None:
        from ...runtime.budget import Budget, Meter

        plan.meter = Meter(Budget(usd=usd), "cell")
    return plan.meter
