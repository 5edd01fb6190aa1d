"""The ``%lion`` subcommands' registry and dispatch, and the branch subcommands (branches,
switch, new, clone, remove, history, signals); the other groups register from their modules.

Each subcommand is a function ``(ctx: CommandContext, args: Namespace) -> value`` with its
own IPython argument parser (``%lion help NAME`` prints it); an ``async def`` one is awaited
(on a helper loop from synchronous code), and `awaited` registers how an awaited line runs
it: ``async (ctx, args, *, assigned) -> value``. ``ctx`` is the line's `CommandContext`
(`command_context`), built once per line by the magics: ``ctx.state``, ``ctx.shell``,
``ctx.aliases``, ``ctx.output_format``, ``ctx.cell_context()``, ``ctx.persistence()``,
``ctx.turn(...)``, and ``ctx.settings.get/set(NAME)`` for any ``LionMagics`` option.
Subcommands that show something return a `Table`, so the cell displays it and a variable can
keep it (``t = %lion branches``). ``ask`` and ``explain`` call a model and are awaited like
``%%lion`` cells. A new group is a module that registers with `command` and `arg`::

    @command("trace", "Show the last turn's spans.", arg("-n", type=int, default=10))
    def _trace(ctx: CommandContext, args: Namespace) -> Table: ...

A subcommand written against the magics object, ``(magics, args)``, converts by its first
parameter: the context's names are the magics' own (``magics.state`` is ``ctx.state``);
an option set by assignment (``magics.aliases = x``) becomes ``ctx.settings.set("aliases",
x)``.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

from ..cell.output_formats import Table

if TYPE_CHECKING:
    from argparse import Namespace

    from .command_context import CommandContext

__all__ = ["COMMANDS", "dispatch", "dispatch_async"]

_ALIASES = {
    "ls": "branches",
    "use": "switch",
    "checkout": "switch",
    "rm": "remove",
    "tools": "tool",
}


class _Command:
    def __init__(
        self,
        name: str,
        func: Callable[..., Any],
        summary: str,
        parser: MagicArgumentParser,
        trailing: str | None = None,
    ):
        self.name, self.func, self.summary, self.parser = name, func, summary, parser
        #: the argument that takes every word after `--` as it is (a command to run)
        self.trailing = trailing
        #: ``async (ctx, args, *, assigned)``: how an awaited line runs it (see `awaited`)
        self.awaited: Callable[..., Any] | None = None


COMMANDS: dict[str, _Command] = {}


def command(
    name: str, summary: str, *args: tuple[tuple, dict], trailing: str | None = None
) -> Callable[[Callable], Callable]:
    """Register a subcommand with its parser arguments (``((flags...), {kwargs})`` pairs).
    With ``trailing``, the words after ``--`` are that argument's, untouched, and options go
    anywhere before it (argparse alone fills a ``nargs="*"`` positional early and then
    refuses the ``--`` words as unrecognized)."""

    def decorate(func: Callable) -> Callable:
        from ..cell.options import help_formatter

        parser = MagicArgumentParser(
            prog=f"lion {name}", description=summary, formatter_class=help_formatter()
        )
        for flags, kw in args:
            parser.add_argument(*flags, **kw)
        COMMANDS[name] = _Command(name, func, summary, parser, trailing)
        return func

    return decorate


def arg(*flags: str, **kw: Any) -> tuple[tuple, dict]:
    return flags, kw


def awaited(name: str) -> Callable[[Callable], Callable]:
    """Register ``async func(ctx, args, *, assigned)`` as how an awaited ``%lion NAME``
    line runs (on the kernel's loop, like a ``%%lion`` cell); `command` registers NAME."""

    def decorate(func: Callable) -> Callable:
        COMMANDS[name].awaited = func
        return func

    return decorate


def _split(line: str) -> tuple[str, str]:
    line = line.strip()
    if not line:
        return "help", ""
    name, _, rest = line.partition(" ")
    if name in ("-h", "--help"):
        return "help", rest
    return _ALIASES.get(name, name), rest


def _find(name: str) -> _Command:
    cmd = COMMANDS.get(name)
    if cmd is None:
        close = difflib.get_close_matches(name, [*COMMANDS, *_ALIASES], n=1)
        maybe = f" Did you mean `%lion {close[0]}`?" if close else ""
        raise UsageError(f"`%lion {name}`: no such subcommand.{maybe} `%lion help` lists them all.")
    return cmd


def _parse(cmd: _Command, rest: str) -> Any:
    """The subcommand's arguments; ``None`` when ``-h`` / ``--help`` printed its usage."""
    from ..cell.options import split_line, wants_help

    words = split_line(rest, f"%lion {cmd.name}")
    after: list[str] | None = None
    if cmd.trailing and "--" in words:
        cut = words.index("--")
        words, after = words[:cut], words[cut + 1 :]
    if wants_help(words):
        print(_usage(cmd.name))
        return None
    # a command line after `--` may hold a token: the error does not repeat it
    shown = rest if not cmd.trailing else " ".join(words[:1])
    try:
        args = cmd.parser.parse_args(words)
    except UsageError as exc:
        raise UsageError(
            f"`%lion {cmd.name} {shown}`: {exc}. `%lion help {cmd.name}` shows its usage."
        ) from None
    if after is not None and cmd.trailing:
        setattr(args, cmd.trailing, [*(getattr(args, cmd.trailing) or []), *after])
    return args


def dispatch(ctx: CommandContext, line: str, *, assigned: bool = True) -> Any:
    """Run a subcommand from synchronous code. ``ask`` and ``explain`` drive their turn with
    `run_sync`, except ``ask --bg``, which starts on this thread's loop and returns the handle.
    Unassigned (``assigned=False``), their answer is the cell's value and they return ``None``.
    """
    from ..cell.runner import run_sync

    name, rest = _split(line)
    if name == "ask":
        opts = ctx.parse_turn(rest, "%lion ask", prompt=True)
        if opts is None:
            return None
        if opts.bg:
            handle = ctx.start_background(opts, _prompt(opts), cell_value=not assigned)
            return handle if assigned else None
        return run_sync(_ask(ctx, opts, assigned=assigned))
    cmd = _find(name)
    args = _parse(cmd, rest)
    if args is None:
        return None
    if name == "explain":
        return cmd.func(ctx, args, assigned=assigned)
    result = cmd.func(ctx, args)
    if inspect.iscoroutine(result):  # `%lion mcp`, not awaited by the cell
        return run_sync(result)
    return result


async def dispatch_async(ctx: CommandContext, line: str, *, assigned: bool = True) -> Any:
    """Run any subcommand from an awaited line (``ask`` / ``explain`` on the running loop)."""
    name, rest = _split(line)
    if name == "ask":
        opts = ctx.parse_turn(rest, "%lion ask", prompt=True)
        if opts is None:
            return None
        return await _ask(ctx, opts, assigned=assigned)
    cmd = COMMANDS.get(name)
    if cmd is not None and cmd.awaited is not None:
        args = _parse(cmd, rest)
        if args is None:
            return None
        return await cmd.awaited(ctx, args, assigned=assigned)
    return dispatch(ctx, line, assigned=assigned)


async def _ask(ctx: CommandContext, opts: Any, *, assigned: bool) -> Any:
    result = await ctx.turn(opts, _prompt(opts), cell_value=not assigned)
    return result if assigned else None


def _prompt(opts: Any) -> str:
    text = opts.prompt
    if not text.strip():
        raise UsageError('`%lion ask` needs an instruction: `%lion ask "What is {x}?"`.')
    return text


def _count(value: int, command: str, what: str) -> int:
    """``-n``: a count of the last items, 0 for all."""
    if value < 0:
        raise UsageError(
            f"`%lion {command} -n {value}`: `-n` is how many of the last {what} to show: "
            f"a positive number, or 0 for all (e.g. `%lion {command} -n 10`)."
        )
    return value


def _branch(ctx: CommandContext, name: str | None) -> Any:
    state = ctx.state
    branch = state.branch(name)
    if branch is None:
        names = ", ".join(f"`{b.name}`" for b in state.session.branches) or "none"
        raise UsageError(
            f"No branch named `{name}` (branches: {names}). `%lion new {name}` creates it."
        )
    return branch


def _short(text: Any, limit: int = 80) -> str:
    text = "" if text is None else str(text).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def file_problem(exc: OSError, path: Any, *, writing: bool) -> str:
    """What went wrong with the file ``path``, and the fix, in one line (for a `UsageError`)."""
    import errno
    from pathlib import Path

    path = Path(path)
    if exc.errno == errno.ENAMETOOLONG:
        return (
            f"the file name `{_short(path.name, 40)}` is too long ({len(path.name)} characters; "
            "file systems allow about 255); pick a shorter name."
        )
    try:
        is_dir, parent_missing = path.is_dir(), not path.parent.exists()
    except OSError:
        is_dir = parent_missing = False
    if isinstance(exc, IsADirectoryError) or is_dir:
        return f"`{path}` is a folder; give a file in it, e.g. `{path / 'session.json'}`."
    if writing and parent_missing:
        return (
            f"the folder `{path.parent}` does not exist; create it first "
            f"(`mkdir -p {path.parent}`) or pick another path."
        )
    if not writing and isinstance(exc, FileNotFoundError):
        return f"no file `{path}`."
    reason = exc.strerror or type(exc).__name__
    verb = "write" if writing else "read"
    return f"cannot {verb} `{path}` ({reason}); pick a file in a folder you can {verb}."


def _model_label(model: Any) -> str:
    return f"{model.provider}/{model.model}" if model is not None else ""


# -- help --------------------------------------------------------------------------------------
OVERVIEW = """\
%lion SUBCOMMAND [options] -- manage the notebook's Session. `%%lion?` documents cells.

{rows}

Examples:

  %lion branches                  # a table of branches; * marks the active one
  %lion new critic -s "Be harsh." -m openai/gpt-4o-mini
  %lion switch main
  %lion history -n 10
  answer = %lion ask -b critic "Is {{Out[4]}} right?"
  handle = %lion ask --bg "Write the report."   # then: result = await handle
  %lion explain                   # explain the last error on the active branch
  %lion alias fast openai/gpt-4o-mini
  %lion config rerun append
"""


@command("help", "Show this help, or one subcommand's usage.", arg("topic", nargs="?"))
def _help(ctx: CommandContext, args: Namespace) -> None:
    if args.topic:
        print(_usage(_ALIASES.get(args.topic, args.topic)))
        return
    rows = [f"  {'ask':<10} Run a turn from one line (the options of %%lion)."]
    rows += [f"  {c.name:<10} {c.summary}" for c in COMMANDS.values() if c.name != "help"]
    print(OVERVIEW.format(rows="\n".join(rows)))


def _usage(topic: str) -> str:
    if topic == "ask":
        from ..cell.options import ask_parser

        return ask_parser().format_help()
    return _find(topic).parser.format_help()


# -- branches ----------------------------------------------------------------------------------
@command("branches", "List the branches (alias: ls).")
def _branches(ctx: CommandContext, args: Namespace) -> Table:
    state = ctx.state
    active = state.branch()
    rows = []
    for b in state.session.branches:
        system = b.system.rendered if b.system is not None else ""
        rows.append(
            {
                "": "*" if b is active else "",
                "branch": b.name or str(b.id),
                "messages": len(b.messages),
                "model": _model_label(b.chat_model),
                "system": _short(system, 40),
                "tools": ", ".join(sorted(b.tools)),
            }
        )
    for run in state.session.runs:  # one row a run, however many items (`run.page(...)`)
        info = run.summary()
        counts = f"{info['done']} done · {info['failed']} failed · {info['pending']} left"
        rows.append(
            {"": "", "branch": f"{info['run']} (run)", "messages": f"{info['items']:,} items",
             "model": info["via"], "system": counts, "tools": ""}
        )  # fmt: skip
    return Table(["", "branch", "messages", "model", "system", "tools"], rows, title="branches")


@command("switch", "Make a branch the active one (aliases: use, checkout).", arg("name"))
def _switch(ctx: CommandContext, args: Namespace) -> None:
    branch = _branch(ctx, args.name)
    ctx.state.set_active(branch)
    print(f"Active branch: `{branch.name}`.")


@command(
    "new",
    "Create a branch and make it active.",
    arg("name"),
    arg("-m", "--model", metavar="MODEL", help="alias, iModel variable or provider/model"),
    arg("-s", "--system", metavar="TEXT", help="system prompt"),
)
def _new(ctx: CommandContext, args: Namespace) -> Any:
    from ..cell.plan import default_model, model_for

    state = ctx.state
    if state.branch(args.name) is not None:
        raise UsageError(
            f"`%lion new {args.name}`: that branch exists; `%lion switch {args.name}` uses it."
        )
    from ...models.secrets import scrub

    given = args.model is not None
    cell = ctx.cell_context()
    model = model_for(cell, args.model, None) if given else default_model(cell)
    system = scrub(args.system) if args.system else args.system  # cell source, like a prompt
    branch = state.session.new_branch(name=args.name, system=system, chat_model=model)
    state.set_active(branch)
    print(f"Created branch `{args.name}` ({_model_label(branch.chat_model)}); it is now active.")


@command(
    "clone",
    "Copy a branch's conversation into a new branch and make it active.",
    arg("name", help="name of the copy"),
    arg("--from", dest="source", metavar="BRANCH", help="branch to copy (default: the active one)"),
)
def _clone(ctx: CommandContext, args: Namespace) -> None:
    state = ctx.state
    if state.branch(args.name) is not None:
        raise UsageError(
            f"`%lion clone {args.name}`: a branch with that name exists; pick another name."
        )
    source = _branch(ctx, args.source)
    copy = state.session.split(source)
    copy.name = args.name
    state.set_active(copy)
    print(
        f"Cloned `{source.name}` into `{args.name}` ({len(copy.messages)} messages); it is now active."
    )


@command(
    "remove",
    "Remove a branch from the session (alias: rm); the active one only with --force.",
    arg("name"),
    arg("--force", action="store_true", help="remove it even if it is the active branch"),
)
def _remove(ctx: CommandContext, args: Namespace) -> None:
    """Removing the active branch discards the conversation the next cell would continue,
    so it needs ``--force``; the session then always keeps an active branch: the session's
    next default one, or a new empty one named like the default (``main``)."""
    state = ctx.state
    branch = _branch(ctx, args.name)
    if state.busy(branch) is not None:
        raise UsageError(
            f"`%lion remove {args.name}`: a background run is using it; cancel it first."
        )
    active = state.branch() is branch
    count = sum(1 for m in branch.messages if m.kind != "system")
    if active and not args.force:
        raise UsageError(
            f"`%lion remove {args.name}`: it is the active branch ({count} message(s)); "
            f"`%lion switch OTHER` first, or `%lion remove {args.name} --force` to discard it."
        )
    state.session.remove_branch(branch)
    if active:
        now = state.session.default_branch
        if now is None:
            from ..cell.plan import default_model

            now = state.session.new_branch(
                name=state.default_branch_name, chat_model=default_model(ctx.cell_context())
            )
        state.set_active(now)
    now = state.branch()
    print(
        f"Removed `{args.name}` ({count} message(s))."
        + (f" Active branch: `{now.name}`." if now is not None else "")
    )


# -- history and signals -----------------------------------------------------------------------
@command(
    "history",
    "Show a branch's messages with the cells that produced them.",
    arg("name", nargs="?", help="branch (default: the active one)"),
    arg("-n", type=int, default=20, help="how many of the last messages (0 = all)"),
)
def _history(ctx: CommandContext, args: Namespace) -> Table:
    count = _count(args.n, "history", "messages")
    branch = _branch(ctx, args.name)
    messages = list(branch.messages)
    start = max(0, len(messages) - count) if count else 0
    rows = []
    for i, m in enumerate(messages[start:], start):
        tag = m.metadata.get("lion") or {}
        rows.append(
            {
                "#": i,
                "cell": _cell_label(tag),
                "kind": m.kind,
                "text": _thought(m) + _short(m.rendered, 100),
            }
        )
    return Table(["#", "cell", "kind", "text"], rows, title=f"history of `{branch.name}`")


def _thought(message: Any) -> str:
    """``[Thought for 3.2 s] `` before an answer whose model thought ("" otherwise)."""
    metadata = message.metadata or {}
    thinking = metadata.get("thinking")
    if message.kind != "assistant_response" or not (isinstance(thinking, str) and thinking):
        return ""
    from ...rendering.answer_parts import thinking_words

    return f"[{thinking_words(metadata.get('thinking_seconds'))}] "


def _cell_label(tag: Any) -> Any:
    """A message's cell: its execution count, marked when an earlier kernel ran it (counts
    start again at 1 after a restart)."""
    from ..cell.cells import KERNEL_RUN

    if not isinstance(tag, dict):
        return ""
    count = tag.get("execution_count", "")
    kernel = tag.get("kernel")
    if count not in ("", None) and kernel is not None and kernel != KERNEL_RUN:
        return f"{count} (before restart)"
    return count if count is not None else ""


@command(
    "signals",
    "Show the signals the session emitted (runs, messages, structured output).",
    arg("-n", type=int, default=30, help="how many of the last signals (0 = all)"),
    arg("--kind", metavar="NAME", help="only this signal type, e.g. RunEnd"),
)
def _signals(ctx: CommandContext, args: Namespace) -> Table:
    count = _count(args.n, "signals", "signals")
    signals = list(ctx.state.signals)
    if args.kind:
        signals = [s for s in signals if s.kind == args.kind]
    if count:
        signals = signals[-count:]
    rows = []
    for s in signals:
        detail = ""
        if s.kind == "MessageAdded":
            detail = f"{s.message.kind}: {_short(s.message.rendered, 60)}"
        elif hasattr(s, "operation"):
            detail = s.operation
            if getattr(s, "error", None) is not None:
                detail += f" ({type(s.error).__name__})"
        rows.append(
            {
                "time": _dt.datetime.fromtimestamp(s.timestamp).strftime("%H:%M:%S.%f")[:-3],
                "signal": s.kind,
                "branch": s.branch_name or "",
                "detail": detail,
            }
        )
    return Table(["time", "signal", "branch", "detail"], rows, title="signals")
