"""`notebook_tools`: the tools with which a model works in the live notebook (ADR-0114).

- ``run_python(code)`` runs code in the notebook's namespace, on the kernel's main thread, as
  a cell would (`execute.run_code`), and returns what it printed, returned, showed and
  raised, and the names it created, changed or deleted. It asks first: its policy is
  ``approve="ask"`` unless ``notebook_tools(approve=...)`` says otherwise, and the card shows
  the code highlighted with its risk flags (`risk.risk_flags`), and Edit then run.
- ``inspect(name)`` and ``list_variables()`` only read; they run unasked.
- ``propose_cell(code)`` puts a new cell below the running one, not run (IPython's
  ``set_next_input``: JupyterLab and Notebook insert it, while the turn's cell runs; not in
  a background turn, `cell_ended`); the call records the code, which the turn view shows
  with "Insert below" (for a background turn, or a front end that ignores the payload).

Every text the model gets is bounded (the context budget's marker) and scrubbed of known
secrets; values of secret-looking names are never shown.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Coroutine, Iterator
from html import escape
from typing import Any

from ...protocols.actions import Tool, ToolOutput
from .execute import RunOutcome, run_code, run_watcher
from .names import describe_size, is_secret_name, list_names, user_names
from .risk import FLAGS, risk_flags

__all__ = ["AGENT_PROMPT", "cell_ended", "notebook_tools"]

#: the system prompt of ``%%lion --agent`` (the same every turn: the variables are a tool call away)
AGENT_PROMPT = (
    "You work inside the user's live Jupyter notebook (an IPython kernel). Tools: "
    "`list_variables` and `inspect` read the notebook's variables; `run_python` runs code in "
    "the notebook's namespace (its changes stay), and the user approves each run; "
    "`propose_cell` offers a new cell for the user to read and run. Look before you change: "
    "inspect data first, keep runs short, read errors and fix them. A denied call did not "
    "run: do not retry it; continue without it or ask the user."
)

#: images one run sends the model (its figures beyond are named, not sent)
MAX_IMAGES = 4

#: tokens each part of a run's result (printed text, a value) may take
PART_BUDGET = 2000

#: whether the turn's cell still runs: IPython's next-input payload goes out with the reply
#: of the cell running when it is written -- in a background turn, some later cell's
_cell_running: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "lion_nb_turn_cell_running", default=True
)


@contextlib.contextmanager
def cell_ended() -> Iterator[None]:
    """Within this block (and the tasks started in it) the turn's cell has ended: a
    proposed cell is offered in the turn view only, not inserted by the front end."""
    token = _cell_running.set(False)
    try:
        yield
    finally:
        _cell_running.reset(token)


#: seconds an interrupted run waits for the turn view's Stop to arrive (see `_stop_grace`)
STOP_GRACE = 1.0


class _CodeTool(Tool):
    """A tool whose ``code`` argument is shown on the approval card, with its risk flags."""

    def ask_details(self, arguments: dict[str, Any]) -> dict[str, Any]:
        from ...rendering.highlight import highlight_code_blocks

        code = str(arguments.get("code", ""))
        html = highlight_code_blocks(
            f'<pre><code class="language-python">{escape(code)}</code></pre>'
        )
        flags = risk_flags(code)
        return {
            "code": code,
            "code_html": html,
            "flags": [{"flag": f, "label": FLAGS[f]} for f in flags],
            "edit": "code",
        }


def notebook_tools(
    approve: Any = "ask",
    *,
    shell: Any = None,
    time_limit: float | None = 60.0,
    budget: int = PART_BUDGET,
) -> list[Tool]:
    """The notebook's tools for a branch: ``Branch(tools=notebook_tools())``.

    ``approve`` is ``run_python``'s policy (``"ask"``: the turn view's card; ``True``,
    ``False`` or a callable, as for any tool); ``time_limit`` (seconds, ``None``: none)
    stops a run; ``budget`` bounds each part of a result in tokens; ``shell`` is the IPython
    shell (the running one by default).
    """
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"`time_limit={time_limit!r}`: give positive seconds, or None.")

    def _shell() -> Any:
        found = shell
        if found is None:
            from IPython import get_ipython

            found = get_ipython()
        if found is None:
            raise RuntimeError("the notebook tools need an IPython shell (a kernel) to work in")
        return found

    def run_python(code: str) -> ToolOutput | Coroutine[Any, Any, ToolOutput]:
        """Run Python code in the user's live notebook, in its namespace, as a cell would.

        Returns what the code printed, its last expression's value, what it displayed
        (figures come back as images), the error's traceback if it failed, and the names it
        created, changed or deleted. Each run is shown to the user, who may deny it.

        Args:
            code: Python source (IPython syntax such as `!cmd` and `%magic` works too).
        """
        watched = run_watcher() is not None  # a turn view whose Stop may have interrupted
        outcome = run_code(_shell(), code, time_limit=time_limit, budget=budget)
        images = list(dict.fromkeys(outcome.images))  # each once
        outcome.images = images[:MAX_IMAGES]
        extra = len(images) - MAX_IMAGES
        if extra > 0:
            outcome.displays.append(f"[{extra} more image{'s' * (extra != 1)} not sent]")
        if watched and outcome.stopped == "interrupted":
            return _stop_grace(outcome, code, budget)  # awaited by `Tool.call`
        return run_output(outcome, code, budget)

    def inspect(name: str) -> ToolOutput:
        """Look at one variable of the notebook: its type, size and contents as a model sees them.

        Args:
            name: the variable's name.
        """
        from ...context import to_content

        names = user_names(_shell())
        if name not in names:
            known = ", ".join(sorted(names)[:30]) or "none"
            raise KeyError(f"no variable `{name}` in the notebook (names: {known})")
        value = names[name]
        what = f"`{name}`: {type(value).__module__}.{type(value).__qualname__}"
        size = describe_size(value)
        if size:
            what += f", {size}"
        if is_secret_name(name):
            return ToolOutput(f"{what}. Its name looks secret, so its value is not shown.")
        content = to_content(value, name=name, budget=budget)
        return ToolOutput(f"{what}\n{content.text}", images=content.images)

    def list_variables() -> list[dict[str, str]]:
        """List the notebook's variables: name, type and size (no values)."""
        return list_names(_shell())

    def propose_cell(code: str) -> ToolOutput:
        """Propose a new cell below the current one, for the user to read and run (it is not run).

        Args:
            code: the new cell's source.
        """
        shell = _shell()
        inserted = _cell_running.get()
        if inserted:
            shell.set_next_input(code, replace=False)
        where = "as a new cell below this one" if inserted else "in the turn view, to insert"
        return ToolOutput(
            f"Proposed {where}; it was not run. The user decides.",
            {"code": code, "proposed_cell": True},  # the turn view offers "Insert below"
        )

    return [
        _CodeTool(run_python, run_in_thread=False, approve=approve),
        Tool(inspect, run_in_thread=False, approve=True),
        Tool(list_variables, run_in_thread=False, approve=True),
        Tool(propose_cell, run_in_thread=False, approve=True),
    ]


def run_output(outcome: RunOutcome, code: str, budget: int) -> ToolOutput:
    """A run as the tool's output: the model's text, what the branch records, the images."""
    return ToolOutput(
        result_text(outcome, budget),
        {
            "code": code,
            "run_seconds": round(outcome.duration, 4),
            "names": outcome.names,
            **({"stopped": outcome.stopped} if outcome.stopped else {}),
            "is_error": outcome.error is not None,
        },
        outcome.images,
    )


async def _stop_grace(outcome: RunOutcome, code: str, budget: int) -> ToolOutput:
    """An interrupted run in a turn view: was it the view's Stop, or the kernel's ■?

    The Stop button sends its message, then interrupts the kernel; the message is read only
    once the loop runs again, which is now. So the run waits up to `STOP_GRACE` seconds: a
    Stop cancels the turn's task in that time, and the run is recorded as stopped with
    what it printed -- the cancellation is carried on once the output is returned, so the
    turn ends as a Stop ends it. Without one, the turn goes on, and the model reads that
    the user interrupted the run."""
    import asyncio

    import anyio

    try:
        await anyio.sleep(STOP_GRACE)
    except asyncio.CancelledError:
        outcome.stopped = "stopped"
        task = asyncio.current_task()
        if task is not None:  # carried on: the next await of the turn raises it, as the
            uncancel = getattr(task, "uncancel", None)  # same one cancellation (Python >= 3.11
            if uncancel is not None:  # counts them, and whoever stops turns reads the count)
                uncancel()
            task.cancel()
    return run_output(outcome, code, budget)


def result_text(outcome: RunOutcome, budget: int) -> str:
    """A run as the text the model reads, each part bounded and scrubbed."""
    from ...context.content import fit_text
    from ...models.secrets import scrub

    parts: list[str] = []

    def part(title: str, text: str | None) -> None:
        if text:
            parts.append(f"[{title}]\n{scrub(fit_text(text.rstrip(), budget))}")

    part("stdout", outcome.stdout)
    part("stderr", outcome.stderr)
    for shown in outcome.displays:
        part("displayed", shown)
    part("value", outcome.value)
    part("error", outcome.error)
    if outcome.images:
        n = len(outcome.images)
        parts.append(f"[images] {n} image{'s' * (n != 1)} attached")
    if outcome.stopped == "time limit":
        parts.append(f"[stopped] the run passed its time limit after {outcome.duration:.1f} s")
    elif outcome.stopped == "stopped":
        parts.append("[stopped] the user stopped the turn while this ran")
    elif outcome.stopped:
        parts.append("[stopped] the user interrupted the run: do not run it again unless they ask")
    names = outcome.names
    changed = [f"{k}: {', '.join(v)}" for k, v in names.items() if v]
    parts.append(
        "[names] " + ("; ".join(changed) if changed else "no names created, changed or deleted")
    )
    if len(parts) == 1:
        parts.insert(0, "(no output)")
    return "\n".join(parts)
