"""The options of ``%%lion``: parsed, checked, and resolved against the notebook namespace.

Every mistake is a `UsageError` that names the option in backticks and says how to fix it,
so IPython shows one line and no traceback. Names refer to the notebook namespace: a
response format is the name of a pydantic model there (or a dotted import path), tools are
names of functions there, and a model is an alias, the name of an ``iModel`` there, or a
``provider/model`` string.
"""

from __future__ import annotations

import difflib
import importlib
import keyword
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from IPython.core.error import UsageError

__all__ = [
    "FORMATS",
    "POLICIES",
    "TurnOptions",
    "check_model_spec",
    "help_formatter",
    "long_options",
    "parse_with_hint",
    "resolve_model",
    "resolve_response_format",
    "resolve_tools",
    "split_line",
    "turn_parser",
    "validate_name",
]

POLICIES = ("fork", "append", "replace")
FORMATS = ("markdown", "code", "json", "html", "text")

TURN_EXAMPLES = """
Examples:

  %%lion
  Summarize {df.describe()} in three bullet points.

  %%lion -b ideas --system "You are a terse reviewer." -m openai/gpt-4o-mini
  Review the function in {In[3]}.

  %%lion -r Summary -o summary -f json
  Summarize the report: {report_text}

  %%lion -t get_weather,convert_units
  What should I wear in Oslo today?

  %%lion -m offline_cli/scripted --bg -o answer
  Refactor the parser module.

  %%lion --file report.pdf --file chart.png
  Does the chart agree with the report?

  %%lion --notebook
  Why does the last cell fail?

  %%lion --effort high
  Prove that the square root of 2 is irrational.

Braces interpolate from the notebook: {name}, {expr}, {In[n]}, {Out[n]}, {Err} (the last
error and its traceback), {Err[n]}. Braces that hold no expression ({'a': 1}) stay as
written; {{ and }} are literal braces; --raw turns interpolation off. A DataFrame, an array
or an exception becomes a summary within `%config LionMagics.context_budget` tokens; a
figure or an image is attached as an image.
"""


def help_formatter() -> type:
    """IPython's magic help formatter, with a plain ``usage:`` line instead of its
    reStructuredText ``::`` block (the help is read in a notebook, not rendered by Sphinx)."""
    from IPython.core.magic_arguments import MagicHelpFormatter

    class HelpFormatter(MagicHelpFormatter):
        def add_usage(self, usage: Any, actions: Any, groups: Any, prefix: Any = None) -> None:
            super().add_usage(usage, actions, groups, "usage: %")

    return HelpFormatter


def turn_parser(prog: str, *, prompt: bool = False) -> Any:
    """The options of a turn (``%%lion`` and ``%lion ask``), as an IPython magic parser."""
    from IPython.core.magic_arguments import MagicArgumentParser

    where = "the line's prompt" if prompt else "the cell"
    p = MagicArgumentParser(
        prog=prog,
        description=f"Run {where} as an instruction on a branch of the notebook's Session.",
        epilog=TURN_EXAMPLES,
        formatter_class=help_formatter(),
    )
    add = p.add_argument
    add(
        "-b",
        "--branch",
        metavar="NAME",
        help="branch to use; created if new (default: the active branch)",
    )
    add(
        "-m",
        "--model",
        metavar="MODEL",
        help="an alias, an iModel variable, or provider/model; on an existing branch, for this turn only",
    )
    add(
        "-s",
        "--system",
        metavar="TEXT",
        help="system prompt of a new branch, or of one with no conversation yet (the same prompt again changes nothing)",
    )
    add(
        "--op",
        metavar="OPERATION",
        help="chat, communicate (default), operate, run (CLI agents; default for them), ReAct, interpret, parse, or a registered operation",
    )
    add(
        "-r",
        "--response-format",
        metavar="MODEL",
        help="pydantic model (a name in the notebook, or a dotted import path); the result is an instance of it",
    )
    add(
        "-t",
        "--tools",
        metavar="FUNCS",
        action="append",
        help="notebook functions the model may call in this turn, comma-separated or repeated (implies --op operate; `%%lion tool` keeps tools on a branch)",
    )
    add(
        "--agent",
        action="store_true",
        help="the model works in the notebook: run_python (asks first, unless the branch has notebook_tools(approve=...) already), inspect, list_variables and propose_cell, for several rounds",
    )
    add(
        "-o",
        "--out",
        metavar="VAR",
        help="also bind the result to this variable (the result is always Out[n])",
    )
    add(
        "-f",
        "--format",
        metavar="FORMAT",
        choices=FORMATS,
        help="output: markdown (default), code (into a new cell below, never run), json, html (sanitized), text",
    )
    add(
        "-q",
        "--quiet",
        action="store_true",
        help="show nothing; the result is still bound and in Out[n]",
    )
    add(
        "--bg",
        action="store_true",
        help="run in the background: return a handle at once (await it, or .cancel() it)",
    )
    add(
        "--policy",
        metavar="POLICY",
        choices=POLICIES,
        help="what re-running this cell does: fork (default), append, replace",
    )
    add("--raw", action="store_true", help="send the text as written: no {...} interpolation")
    add(
        "--file",
        metavar="PATH",
        action="append",
        help="attach a file (repeatable): a PDF as a document, an image as an image, text as text",
    )
    add(
        "--notebook",
        action="store_true",
        help="add the cells above (code and results, newest first, within the budget) as context",
    )
    add(
        "--effort",
        metavar="LEVEL",
        help="how hard a reasoning model thinks in this turn: minimal, low, medium or high "
        "(sent as `reasoning=`; default: the model's own setting)",
    )
    add(
        "--max-extensions",
        metavar="N",
        type=int,
        help="ReAct: extra reasoning rounds, 0 or more (default 3)",
    )
    add(
        "--map",
        metavar="ITERABLE",
        # a cell's line has no prompt: an expression's words run up to the next option
        **({} if prompt else {"nargs": "+"}),
        help="run the cell once per item of ITERABLE (a name or expression: a list, a DataFrame...), "
        "each on its own clone of the branch, concurrently; {item}, {item[key]}, {item.attr} and "
        "{index} are filled in per item",
    )
    add(
        "--compare",
        metavar="MODELS",
        help="run the cell once per model (comma-separated), on sibling clones of the branch, "
        "concurrently, and show the answers side by side",
    )
    add(
        "--budget",
        metavar="USD",
        type=float,
        help="the most this cell's model calls may cost, in dollars; a call that would pass it is not started",
    )
    add(
        "--eval",
        metavar="CASES",
        help="evaluate: run the cell as a prompt template over CASES (a list of dicts or a "
        "DataFrame; {field} is a case's field), check each answer and show the grid; with "
        "--compare, over several models",
    )
    add(
        "--check",
        metavar="EXPR",
        action="append",
        help="with --eval: a check, e.g. \"contains('Paris')\" or a function (answer, case) "
        "of the notebook; give several --check for several checks",
    )
    add("--repeat", metavar="N", type=int, help="with --eval: run each case N times (default 1)")
    add(
        "--name",
        metavar="NAME",
        help="with --eval: save the run under NAME and compare it with the last run of NAME",
    )
    add("-h", "--help", action="store_true", help="show this help")
    if prompt:
        add("prompt", nargs="*", help="the instruction")
    return p


def long_options(parser: Any) -> list[str]:
    """The ``--long`` options ``parser`` takes, in the order it declares them: what a
    misspelt option is matched against, read from the parser so it cannot fall behind."""
    return [s for action in parser._actions for s in action.option_strings if s[:2] == "--"]


@dataclass(slots=True)
class TurnOptions:
    """One turn, as the user asked for it (names still unresolved)."""

    branch: str | None = None
    model: str | None = None
    op: str | None = None
    response_format: str | None = None
    tools: list[str] = field(default_factory=list)
    out: str | None = None
    system: str | None = None
    fmt: str = "markdown"
    quiet: bool = False
    bg: bool = False
    policy: str | None = None
    raw: bool = False
    extensions: int | None = None
    effort: str | None = None  # ``--effort``: the call's ``reasoning=`` level
    prompt: str = ""  # ``%lion ask``: the instruction given on the line
    map_over: str | None = None  # ``--map``: the expression giving the items
    compare: list[str] = field(default_factory=list)  # ``--compare``: model specs
    budget: float | None = None  # ``--budget``: dollars for this cell's calls

    agent: bool = False  # ``--agent``: the notebook tools, several rounds
    files: list[str] = field(default_factory=list)  # ``--file``: paths to attach
    notebook: bool = False  # ``--notebook``: the cells above as context
    eval_over: str | None = None  # ``--eval``: the expression giving the cases
    checks: list[str] = field(default_factory=list)  # ``--check``: expressions
    repeat: int | None = None  # ``--repeat``
    eval_name: str | None = None  # ``--name``

    @classmethod
    def from_args(cls, args: Any, *, default_format: str) -> TurnOptions:
        tools: list[str] = []
        for chunk in args.tools or ():
            tools += [t.strip() for t in chunk.split(",") if t.strip()]
        opts = cls(
            branch=args.branch,
            model=args.model,
            op=args.op,
            response_format=args.response_format,
            tools=tools,
            out=args.out,
            system=args.system,
            fmt=args.format or default_format,
            quiet=args.quiet,
            bg=args.bg,
            policy=args.policy,
            raw=args.raw,
            extensions=args.max_extensions,
            effort=getattr(args, "effort", None),
            prompt=" ".join(getattr(args, "prompt", None) or ()),
            map_over=getattr(args, "map", None),
            compare=[
                m.strip() for m in (getattr(args, "compare", None) or "").split(",") if m.strip()
            ],
            budget=getattr(args, "budget", None),
            agent=bool(getattr(args, "agent", False)),
            files=list(getattr(args, "file", None) or ()),
            notebook=bool(getattr(args, "notebook", False)),
            eval_over=getattr(args, "eval", None),
            checks=list(getattr(args, "check", None) or ()),
            repeat=getattr(args, "repeat", None),
            eval_name=getattr(args, "name", None),
        )
        opts.check()
        return opts

    def check(self) -> None:
        """Checks that need nothing but the options themselves."""
        if self.out is not None:
            validate_name(self.out, "--out")
        if self.budget is not None and not (0 < self.budget < float("inf")):
            raise UsageError(
                f"`--budget {self.budget:g}`: give the dollars this cell may spend, above 0 "
                "(e.g. `--budget 0.25`)."
            )
        if self.branch is not None and not self.branch.strip():
            raise UsageError("`--branch` needs a name, e.g. `-b ideas`.")
        if self.model is not None and not self.model.strip():
            raise UsageError(EMPTY_MODEL)
        if self.fmt == "code" and self.bg:
            raise UsageError(
                "`--format code` cannot be combined with `--bg`: the new cell can only be "
                "created while the cell that asked for it runs. Drop `--bg`, or use another format."
            )
        if self.op == "parse" and not self.response_format:
            raise UsageError(
                "`--op parse` needs `--response-format NAME` (a pydantic model in the namespace)."
            )
        if self.tools and self.op is not None and not _takes_tools(self.op):
            raise UsageError(
                f"`--tools` works with `--op operate`, `--op ReAct` or a registered operation, "
                f"not `--op {self.op}`. Drop `--op` (tools imply `operate`)."
            )
        if self.effort is not None:
            check_effort(self.effort)
        if self.extensions is not None and self.op != "ReAct":
            raise UsageError("`--max-extensions` only applies to `--op ReAct`.")
        if self.extensions is not None and self.extensions < 0:
            raise UsageError(
                f"`--max-extensions {self.extensions}`: the number of extra reasoning rounds "
                "is 0 or more, e.g. `--max-extensions 2` (0: no extra round)."
            )
        for path in self.files:
            if not path.strip():
                raise UsageError("`--file` needs a path, e.g. `--file report.pdf`.")
        if self.eval_over is not None or self.checks or self.repeat is not None or self.eval_name:
            check_eval_options(self)
        elif self.map_over is not None or self.compare:
            check_batch_options(self)


def ask_parser() -> Any:
    """The parser of ``%lion ask`` (the options of ``%%lion`` and a prompt), made once."""
    global _ASK_PARSER
    if _ASK_PARSER is None:
        _ASK_PARSER = turn_parser("lion ask", prompt=True)
    return _ASK_PARSER


_ASK_PARSER: Any = None


def _takes_tools(op: str) -> bool:
    """Whether ``--op op`` can be given tools: a verb that takes them, or a registered
    operation (the verb table is read at the first turn, not at ``%load_ext``)."""
    from ...operations.verbs import VERBS

    verb = VERBS.get(op)
    return verb is None or verb.takes_tools


def check_effort(level: str) -> str:
    """``level`` if ``reasoning=`` takes it, else a `UsageError` naming the levels."""
    from ...models.reasoning import LEVELS

    if level not in LEVELS:
        raise UsageError(
            f"`--effort {level}`: use one of {', '.join(LEVELS)} (how hard a reasoning model "
            "thinks), e.g. `--effort low`."
        )
    return level


def check_batch_options(opts: TurnOptions) -> None:
    """The checks of `TurnOptions.check` that concern ``--map`` and ``--compare``
    (`batch_cells` runs those cells)."""
    what = "--map" if opts.map_over is not None else "--compare"
    if opts.map_over is not None and opts.compare:
        raise UsageError("`--map` and `--compare` cannot be combined: pick one.")
    if opts.map_over is not None and not opts.map_over.strip():
        raise UsageError("`--map` needs the items: a name or expression, e.g. `--map cities`.")
    if opts.policy:
        raise UsageError(
            f"`--policy` does not apply to `{what}`: each run makes new branches of its own."
        )
    if opts.fmt == "code":
        raise UsageError(f"`--format code` cannot be combined with `{what}`.")
    if opts.compare:
        if len(opts.compare) < 2:
            raise UsageError("`--compare` needs two models or more, e.g. `--compare fast,smart`.")
        if opts.model:
            raise UsageError("`--compare` names the models; drop `--model`.")
        if opts.bg:
            raise UsageError("`--compare` cannot run with `--bg`: drop `--bg`.")


def check_eval_options(opts: TurnOptions) -> None:
    """The checks of `TurnOptions.check` that concern ``--eval`` (`eval_cells` runs it)."""
    if opts.eval_over is None:
        used = "--check" if opts.checks else "--repeat" if opts.repeat is not None else "--name"
        raise UsageError(f"`{used}` goes with `--eval CASES`: add `--eval` and the cases.")
    if not opts.eval_over.strip():
        raise UsageError("`--eval` needs the cases: a name or expression, e.g. `--eval cases`.")
    if opts.map_over is not None:
        raise UsageError("`--eval` and `--map` cannot be combined: pick one.")
    for option, used in (("--bg", opts.bg), ("--policy", opts.policy), ("--op", opts.op)):
        if used:
            raise UsageError(f"`{option}` does not apply to `--eval`: drop `{option}`.")
    if opts.fmt == "code":
        raise UsageError("`--format code` cannot be combined with `--eval`.")
    if opts.compare and opts.model:
        raise UsageError("`--compare` names the models; drop `--model`.")
    if opts.repeat is not None and opts.repeat < 1:
        raise UsageError(
            f"`--repeat {opts.repeat}`: run each case 1 time or more, e.g. `--repeat 3`."
        )
    if opts.eval_name is not None and not opts.eval_name.strip():
        raise UsageError("`--name` needs a name, e.g. `--name capitals`.")


def validate_name(name: str, option: str) -> str:
    """``name`` if it can be a Python variable, else a `UsageError` for ``option``."""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise UsageError(
            f"`{option} {name}`: not a valid Python variable name. Use letters, digits and "
            "underscores, not starting with a digit (e.g. `answer`, `summary_2`)."
        )
    return name


def split_line(line: str, magic: str) -> list[str]:
    """Shell-like words of ``line`` (quotes group and are removed, as in a terminal)."""
    from IPython.utils.process import arg_split

    try:
        return arg_split(line, posix=True, strict=True)
    except ValueError as exc:
        raise UsageError(
            f"`{magic} {line.strip()}`: {exc} -- close the quote, or quote the text with the "
            'other kind ("it\'s").'
        ) from None


HELP_FLAGS = ("-h", "--help")


def wants_help(words: list[str]) -> bool:
    """Whether ``-h`` / ``--help`` is among the words (a quoted prompt is one word)."""
    return any(word in HELP_FLAGS for word in words)


def parse_with_hint(parser: Any, line: str, magic: str, options: list[str]) -> Any:
    """``parser`` applied to ``line``, argparse's complaint turned into a message with the fix.
    With ``-h`` / ``--help`` the help is printed and ``None`` returned."""
    words = split_line(line, magic)
    if wants_help(words):
        print(parser.format_help())
        return None
    try:
        args = parser.parse_args(words)
    except UsageError as exc:
        message = str(exc)
        hint = f"See `{magic}?` for every option."
        unknown = re.search(r"unrecognized arguments: (.*)", message)
        if unknown:
            words = unknown.group(1).split()
            bad = words[0] if words else unknown.group(1)  # an empty or blank argument
            close = difflib.get_close_matches(bad, options, n=1, cutoff=0.6)
            if close:
                hint = f"Did you mean `{close[0]}`? " + hint
            message = (
                f"unknown option `{bad}`" if bad.startswith("-") else f"unexpected argument {bad!r}"
            )
        raise UsageError(f"`{magic} {line.strip()}`: {message}. {hint}") from None
    if isinstance(getattr(args, "map", None), list):
        args.map = _expression(line, args.map)
    return args


def _expression(line: str, words: list[str]) -> str:
    """``--map``'s expression as written on ``line``: several words keep their quotes
    (``[c for c in rows if c != 'x']``), up to the next option, as argparse reads them; one
    word is as the shell-like split gave it."""
    if len(words) == 1:
        return words[0]
    from IPython.utils.process import arg_split

    try:
        raw = arg_split(line, posix=False, strict=True)
        start = raw.index("--map") + 1
    except ValueError:
        return " ".join(words)
    taken = []
    for word in raw[start:]:
        if len(word) > 1 and word[0] == "-" and not word[1].isdigit():
            break  # the next option
        taken.append(word)
    return " ".join(taken)


def resolve_response_format(name: str, namespace: Mapping[str, Any]) -> type:
    """The pydantic model class called ``name`` in the namespace, or at a dotted import path."""
    from pydantic import BaseModel

    obj: Any = namespace.get(name)
    if obj is None and "." in name:
        module_name, _, attr = name.rpartition(".")
        if not all(part.isidentifier() for part in name.split(".")):
            raise UsageError(
                f"`--response-format {name}`: not a name or a dotted import path. Give the "
                "name of a pydantic model in the notebook, or a path such as `mypkg.models.Summary`."
            )
        try:
            obj = getattr(importlib.import_module(module_name), attr)
        except Exception as exc:  # importing runs the module's code: anything can fail
            raise UsageError(
                f"`--response-format {name}`: cannot import `{attr}` from `{module_name}` "
                f"({type(exc).__name__}: {exc}). Check the dotted path, or define the model in "
                "a cell above."
            ) from None
    if obj is None:
        raise UsageError(
            f"`--response-format {name}`: no pydantic model named `{name}` in the notebook "
            "namespace. Define it in a cell above, or pass a dotted import path."
        )
    if not (isinstance(obj, type) and issubclass(obj, BaseModel)):
        raise UsageError(
            f"`--response-format {name}`: `{name}` is a {type(obj).__name__}, not a pydantic "
            "model class. Pass a class that subclasses `pydantic.BaseModel`."
        )
    return obj


def resolve_tools(names: list[str], namespace: Mapping[str, Any]) -> list[Callable[..., Any]]:
    """The notebook functions called ``names`` (each checked to exist and be callable)."""
    tools = []
    for name in names:
        obj = namespace.get(name)
        if obj is None:
            close = difflib.get_close_matches(
                name, [k for k in namespace if not k.startswith("_")], n=1
            )
            maybe = f" Did you mean `{close[0]}`?" if close else ""
            raise UsageError(
                f"`--tools {name}`: no function named `{name}` in the notebook namespace.{maybe} "
                "Define it in a cell above (a docstring and type hints describe it to the model)."
            )
        if not callable(obj):
            raise UsageError(
                f"`--tools {name}`: `{name}` is a {type(obj).__name__}, not a function."
            )
        tools.append(obj)
    return tools


EMPTY_MODEL = (
    "`-m ''`: the model is empty. Give an alias, an `iModel` variable or a provider/model "
    "(e.g. `-m offline/auto`), or leave `-m` out for the branch's own model."
)


def resolve_model(spec: str, namespace: Mapping[str, Any], aliases: Mapping[str, str]) -> Any:
    """An iModel from an alias, an ``iModel`` variable or a ``provider/model`` string."""
    from ...errors import ConfigurationError
    from ...models.imodel import iModel

    spec = spec.strip()
    if not spec:
        raise UsageError(EMPTY_MODEL)
    obj = namespace.get(spec) if spec.isidentifier() else None
    if isinstance(obj, iModel):
        return obj
    target = aliases.get(spec, spec)
    if target.startswith("acp:"):  # `-m acp:gemini`: an ACP agent preset
        target = f"acp/{target[4:]}"
    check_model_spec(target, f"--model {spec}")
    if "/" not in target:
        known = ", ".join(f"`{a}`" for a in sorted(aliases)) or "none set"
        raise UsageError(
            f"`--model {spec}`: not an alias (aliases: {known}), an `iModel` in the namespace, "
            "or a `provider/model` string such as `offline/auto` or `openai/gpt-4o-mini`. "
            "Add an alias with `%lion alias NAME provider/model`."
        )
    try:
        return iModel(model=target)
    except ConfigurationError as exc:
        raise UsageError(f"`--model {spec}`: {exc}") from None


def check_model_spec(spec: str, where: str) -> str:
    """``spec`` unless it is a ``provider/model`` string missing either part (``openai/``)."""
    if "/" in spec and not all(part.strip() for part in spec.split("/", 1)):
        raise UsageError(
            f"`{where}`: `{spec}` needs both a provider and a model name, e.g. "
            "`openai/gpt-4o-mini` or `offline/auto`."
        )
    return spec
