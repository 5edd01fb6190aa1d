"""``%lion`` subcommands about models, tools, operations, errors, files, configuration and runs.

``save`` / ``load`` write one JSON file (``LionMagics.save_path`` by default): the Session's
``to_dict(mode="json")`` plus the active branch. Tools, named operations and observers are
live objects and are not saved; register them again after ``load``. Keys are never saved:
models are saved without them, and every text in the file is scrubbed of the values of known
secrets (`lion_nb.models.secrets.scrub`), so a key that reached a branch some other way than
a prompt -- a tool's result, a message added in Python -- is not written either.

``explain`` builds its prompt from the failing cell's source and traceback; like every
turn's text, it is scrubbed of secrets by `LionMagics.turn` before it is sent or recorded.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ..cell.output_formats import Table
from .registry import _branch, _model_label, _short, arg, awaited, command, file_problem

if TYPE_CHECKING:
    from argparse import Namespace

    from .command_context import CommandContext

__all__ = ["explain"]

FILE_FORMAT = "lion_nb.session/1"


# -- models ------------------------------------------------------------------------------------
@command("models", "List each branch's model, the aliases and the default for new branches.")
def _models(ctx: CommandContext, args: Namespace) -> Table:
    from ...models.endpoints import ENDPOINTS, PRESETS
    from ...settings import default_chat_model

    state = ctx.state
    rows = [
        {
            "name": b.name or str(b.id),
            "kind": "branch",
            "model": _model_label(b.chat_model),
            "cli": "yes" if b.chat_model.is_cli else "",
        }
        for b in state.session.branches
    ]
    rows += [
        {"name": k, "kind": "alias", "model": v, "cli": ""} for k, v in sorted(ctx.aliases.items())
    ]
    default = ctx.default_model or "/".join(default_chat_model())
    rows.append({"name": "(new branches)", "kind": "default", "model": default, "cli": ""})
    providers = ", ".join(sorted([*ENDPOINTS, *PRESETS]))
    return Table(["name", "kind", "model", "cli"], rows, title=f"models · providers: {providers}")


@command("cost", "What the session's model calls cost, by branch and model.")
def _cost(ctx: CommandContext, args: Namespace) -> Table:
    session = ctx.state.session
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for row in session.costs():
        key = (str(row["branch"] or row["branch_id"]), row["model"])
        group = groups.setdefault(
            key, {"branch": key[0], "model": key[1], "calls": 0, "in": 0, "cached": 0, "out": 0}
        )
        group["calls"] += 1
        group["in"] += row["input_tokens"]
        group["cached"] += row["cache_read_tokens"]
        group["out"] += row["output_tokens"]
        usd = row["usd"]
        group["usd"] = (
            None if usd is None or group.get("usd", 0.0) is None else group.get("usd", 0.0) + usd
        )
        group["unpriced"] = group.get("unpriced", 0) + (usd is None)
        group["estimated"] = group.get("estimated", 0) + bool(row["estimated"])
    rows = [_cost_row(g) for g in groups.values()]
    total = session.cost()
    budget = session.budget
    title = f"cost · {total.line()}"
    if any(g["estimated"] for g in groups.values()):
        title += " · ≈ estimated (a call cut short, or one with no usage reported)"
    if budget is not None and budget.usd is not None:
        title += f" · session budget ${budget.usd:g}"
    return Table(["branch", "model", "calls", "in", "cached", "out", "usd"], rows, title=title)


def _cost_row(group: dict[str, Any]) -> dict[str, Any]:
    """One row of `%lion cost`; a group with estimated calls says how many, and its
    dollars are marked ``≈``."""
    from ...runtime.ledger import format_usd

    usd = group["usd"]
    text = format_usd(usd, group["unpriced"]) if usd is None else f"${usd:.4f}"
    row = {**group, "usd": text}
    estimated = row.pop("estimated")
    if estimated:
        row["calls"] = f"{group['calls']} ({estimated} estimated)"
        row["usd"] = f"≈{text}"
    return row


@command(
    "model",
    "Set a branch's model for every later turn.",
    arg("model", help="alias, iModel variable or provider/model"),
    arg("-b", "--branch", metavar="NAME", help="branch (default: the active one)"),
)
def _model(ctx: CommandContext, args: Namespace) -> None:
    from ..cell.options import resolve_model

    branch = _branch(ctx, args.branch)
    branch.chat_model = resolve_model(args.model, ctx.shell.user_ns, dict(ctx.aliases))
    ctx.state.models = {k: v for k, v in ctx.state.models.items() if k[0] != str(branch.id)}
    print(f"Branch `{branch.name}` now uses {_model_label(branch.chat_model)}.")


@command(
    "alias",
    "List model aliases, or set or remove one.",
    arg("name", nargs="?"),
    arg("model", nargs="?", help="provider/model"),
    arg("--remove", action="store_true", help="remove the alias NAME"),
)
def _alias(ctx: CommandContext, args: Namespace) -> Any:
    aliases = dict(ctx.aliases)
    if args.name is None:
        return Table(
            ["alias", "model"],
            [{"alias": k, "model": v} for k, v in sorted(aliases.items())],
            title="aliases",
        )
    if args.remove:
        if aliases.pop(args.name, None) is None:
            raise UsageError(f"`%lion alias --remove {args.name}`: no such alias.")
        ctx.settings.set("aliases", aliases)
        print(f"Removed the alias `{args.name}`.")
        return None
    if (
        not args.model
        or "/" in args.name
        or "/" not in args.model
        or not all(part.strip() for part in args.model.split("/", 1))
    ):
        raise UsageError(
            f"`%lion alias {args.name} {args.model or ''}`: give a name and a provider/model, "
            "e.g. `%lion alias fast openai/gpt-4o-mini`."
        )
    aliases[args.name] = args.model
    ctx.settings.set("aliases", aliases)
    print(f"Alias `{args.name}` = {args.model}: use it with `-m {args.name}`.")
    return None


# -- tools and operations ----------------------------------------------------------------------
@command(
    "tool",
    "Register notebook functions as tools on a branch (alias: tools).",
    arg("names", nargs="+", help="function names in the notebook"),
    arg("-b", "--branch", metavar="NAME", help="branch (default: the active one)"),
    arg("--remove", action="store_true", help="remove these tools instead"),
)
def _tool(ctx: CommandContext, args: Namespace) -> None:
    from ..cell.options import resolve_tools

    branch = _branch(ctx, args.branch)
    if args.remove:
        for name in args.names:
            if name not in branch.tools:
                raise UsageError(
                    f"`%lion tool --remove {name}`: branch `{branch.name}` has no tool `{name}`."
                )
            branch.acts.remove_tool(name)
        print(f"Removed from `{branch.name}`: {', '.join(args.names)}.")
        return
    for func in resolve_tools(args.names, ctx.shell.user_ns):
        try:
            branch.acts.register_tool(func, update=True)
        except Exception as exc:
            raise UsageError(f"`%lion tool {getattr(func, '__name__', func)}`: {exc}") from None
    print(f"Tools on `{branch.name}`: {', '.join(sorted(branch.tools))}.")


@command(
    "operation",
    "Register an async notebook function as a named operation (`%%lion --op NAME`).",
    arg("name", help="operation name"),
    arg("func", nargs="?", help="function in the notebook (default: NAME)"),
)
def _operation(ctx: CommandContext, args: Namespace) -> None:
    func_name = args.func or args.name
    func = ctx.shell.user_ns.get(func_name)
    if func is None or not callable(func):
        raise UsageError(
            f"`%lion operation {args.name}`: no function named `{func_name}` in the notebook. "
            "Define `async def "
            f"{func_name}(branch, instruction, **kw): ...` in a cell above."
        )
    try:
        ctx.state.session.register_operation(args.name, func, update=True)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"`%lion operation {args.name}`: {exc}") from None
    print(f"Registered operation `{args.name}`: use it with `%%lion --op {args.name}`.")


# -- explaining the last error ---------------------------------------------------------------------
EXPLAIN_PROMPT = """\
This notebook cell raised an error. Explain the cause in plain words, then show the fix.

Cell [{count}]:
```python
{source}
```

Error and traceback:
```
{traceback}
```"""


@command(
    "explain",
    "Explain the notebook's last error (its traceback and its cell's source) on a branch.",
    arg("-b", "--branch", metavar="NAME", help="branch (default: the active one)"),
    arg("-m", "--model", metavar="MODEL", help="model for this turn"),
    arg("-f", "--format", metavar="FORMAT", help="output format (default: markdown)"),
    arg("-q", "--quiet", action="store_true"),
)
def _explain_sync(ctx: CommandContext, args: Namespace, *, assigned: bool = True) -> Any:
    from ..cell.runner import run_sync

    return run_sync(explain(ctx, args, assigned=assigned))


@awaited("explain")
async def explain(ctx: CommandContext, args: Namespace, *, assigned: bool = True) -> Any:
    """Explain the last error on a branch. Unassigned, the answer is the cell's value and
    ``None`` is returned, so it is shown once."""
    from ..cell.options import TurnOptions
    from ..cell.output_formats import FORMATS

    last = ctx.state.errors.last
    if last is None:
        raise UsageError("`%lion explain`: no error has been raised in this notebook yet.")
    fmt = args.format or ctx.output_format
    if fmt not in FORMATS:
        raise UsageError(f"`%lion explain -f {fmt}`: use one of {', '.join(FORMATS)}.")
    text = EXPLAIN_PROMPT.format(
        count=last.execution_count if last.execution_count is not None else "?",
        source=last.source.strip(),
        traceback=last.traceback.strip(),
    )
    opts = TurnOptions(branch=args.branch, model=args.model, fmt=fmt, quiet=args.quiet, raw=True)
    opts.check()
    result = await ctx.turn(opts, text, cell_value=not assigned)
    return result if assigned else None


# -- save, load, reset ---------------------------------------------------------------------------
def _path(ctx: CommandContext, given: str | None) -> Path:
    return Path(os.path.expanduser(given or ctx.save_path))


def _no_runs(ctx: CommandContext, what: str) -> None:
    running = [h for h in ctx.state.runs.values() if not h.done()]
    if running:
        raise UsageError(
            f"`%lion {what}`: {len(running)} background run(s) are still going; await or "
            "cancel them first (`%lion cancel --all`)."
        )


@command(
    "save",
    "Save the session to a JSON file (no keys, tools or operations).",
    arg("path", nargs="?"),
)
def _save(ctx: CommandContext, args: Namespace) -> None:
    state = ctx.state
    path = _path(ctx, args.path)
    data = {
        "format": FILE_FORMAT,
        "active": state.active,
        "session": _scrub_data(state.session.to_dict(mode="json")),
    }
    from ..._files import write_atomically

    try:  # a folder that is not there is the user's to make: the error says so
        write_atomically(path, json.dumps(data, ensure_ascii=False), make_folder=False)
    except OSError as exc:
        where = f" {args.path}" if args.path else ""
        raise UsageError(f"`%lion save{where}`: {file_problem(exc, path, writing=True)}") from None
    print(f"Saved {len(state.session.branches)} branch(es) to `{path}`.")


def _scrub_data(value: Any) -> Any:
    """``value`` (JSON data) with every string in it scrubbed of secrets, keys included."""
    from ...models.secrets import scrub

    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {_scrub_data(k): _scrub_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub_data(v) for v in value]
    return value


@command(
    "load",
    "Restore this notebook's latest saved session from the store; with a FILE, import one "
    "saved by `%lion save` (as a new session when the store holds newer messages of it, "
    "which are kept).",
    arg("path", nargs="?", help="a JSON file written by `%%lion save`"),
    arg("--session", metavar="ID", help="restore this saved session (`%%lion sessions` lists)"),
)
def _load(ctx: CommandContext, args: Namespace) -> None:
    from ...session.session import Session

    _no_runs(ctx, "load")
    if args.path is None:
        from .store import restore

        restore(ctx, args.session)
        return
    if args.session is not None:
        raise UsageError(
            f"`%lion load {args.path} --session {args.session}`: give a FILE to import or "
            "`--session ID` to restore from the store, not both."
        )
    path = _path(ctx, args.path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(
            f"`%lion load`: no file `{path}`. Save one first with `%lion save`; to restore a "
            "session from the store, use `%lion load` alone or `%lion load --session ID`."
        ) from None
    except ValueError as exc:
        raise UsageError(f"`%lion load`: `{path}` is not JSON ({exc}).") from None
    except OSError as exc:
        raise UsageError(f"`%lion load`: {file_problem(exc, path, writing=False)}") from None
    if not isinstance(data, dict) or data.get("format") != FILE_FORMAT:
        raise UsageError(f"`%lion load`: `{path}` was not written by `%lion save`.")
    saved = data["session"]
    newer = ctx.persistence().unsaved_in_file(saved)
    if newer:  # never replace committed messages: import a copy beside them
        saved = _as_new_session(saved)
    try:
        session = Session.from_dict(saved)
    except Exception as exc:
        raise UsageError(f"`%lion load`: `{path}` could not be restored: {exc}") from None
    state = ctx.state
    state.attach(session)
    active = state.branch(data.get("active"))
    if active is not None:
        state.set_active(active)
    copy = ""
    if newer:
        old = data["session"]["id"][:8]
        copy = (
            f" as a new session `{str(session.id)[:8]}`: the store holds {newer} message(s) of "
            f"session `{old}` saved after this file, and keeps them (`%lion load --session "
            f"{old}` restores that one)"
        )
    print(
        f"Loaded {len(session.branches)} branch(es) from `{path}`{copy}; active: "
        f"`{state.active}`. Register tools and operations again."
    )


def _as_new_session(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a ``Session.to_dict``) with new ids for the session and its branches, so
    saving it leaves the stored session it came from alone."""
    import uuid

    data = dict(data, id=str(uuid.uuid4()))
    ids = {}
    branches = []
    for branch in data.get("branches") or ():
        if isinstance(branch, dict) and isinstance(branch.get("id"), str):
            ids[branch["id"]] = new = str(uuid.uuid4())
            branch = dict(branch, id=new)
        branches.append(branch)
    data["branches"] = branches
    data["default_branch_id"] = ids.get(data.get("default_branch_id"))
    return data


@command(
    "reset",
    "Clear a branch's conversation (its system prompt stays), or start a new session.",
    arg("-b", "--branch", metavar="NAME", help="branch (default: the active one)"),
    arg("--all", action="store_true", help="discard every branch: a new session"),
)
def _reset(ctx: CommandContext, args: Namespace) -> None:
    state = ctx.state
    if args.all:
        from ...session.session import Session

        _no_runs(ctx, "reset --all")
        state.attach(Session())
        print(f"New session; active branch: `{state.active}`.")
        return
    branch = _branch(ctx, args.branch)
    if state.busy(branch) is not None:
        raise UsageError(
            f"`%lion reset`: a background run is using `{branch.name}`; cancel it first."
        )
    branch.msgs.clear_messages()
    print(f"Cleared `{branch.name}`.")


# -- configuration -------------------------------------------------------------------------------
@command(
    "config",
    "Show the configuration, or set one option (same as `%config LionMagics.NAME = VALUE`).",
    arg("name", nargs="?"),
    arg("value", nargs="?"),
)
def _config(ctx: CommandContext, args: Namespace) -> Any:
    from traitlets import TraitError

    traits = ctx.settings.options()
    if args.name is None:
        rows = [
            {
                "option": n,
                "value": json.dumps(ctx.settings.get(n)),
                "env": ctx.settings.env_vars.get(n, ""),
                "help": t.help,
            }
            for n, t in sorted(traits.items())
        ]
        return Table(["option", "value", "env", "help"], rows, title="LionMagics configuration")
    if args.name not in traits:
        raise UsageError(
            f"`%lion config {args.name}`: no such option. Options: {', '.join(sorted(traits))}."
        )
    if args.value is None:
        return ctx.settings.get(args.name)
    try:
        value = ast.literal_eval(args.value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        value = args.value  # not a Python literal: the text itself
    if isinstance(traits[args.name].default_value, str) and not isinstance(value, str):
        value = args.value
    try:
        ctx.settings.set(args.name, value)
    except TraitError as exc:
        raise UsageError(
            f"`%lion config {args.name} {_short(args.value)}`: {_short(exc, 300)}"
        ) from None
    return None


# -- background runs -------------------------------------------------------------------------------
@command("runs", "List the background runs.")
def _runs(ctx: CommandContext, args: Namespace) -> Table:
    rows = [
        {
            "id": h.id,
            "branch": h.branch.name,
            "status": h.status,
            "seconds": f"{h.elapsed:.1f}",
            "prompt": h.label,
        }
        for h in ctx.state.runs.values()
    ]
    return Table(["id", "branch", "status", "seconds", "prompt"], rows, title="background runs")


@command(
    "cancel",
    "Cancel background runs.",
    arg("id", nargs="?", type=int),
    arg("--all", action="store_true"),
)
def _cancel(ctx: CommandContext, args: Namespace) -> None:
    runs = ctx.state.runs
    if args.all:
        chosen = [h for h in runs.values() if not h.done()]
    elif args.id is not None:
        if args.id not in runs:
            raise UsageError(
                f"`%lion cancel {args.id}`: no background run {args.id} (`%lion runs` lists them)."
            )
        chosen = [runs[args.id]]
    else:
        raise UsageError("`%lion cancel` needs a run id (`%lion runs` lists them) or `--all`.")
    for handle in chosen:
        handle.cancel()
    print(f"Cancelled {len(chosen)} run(s).")
