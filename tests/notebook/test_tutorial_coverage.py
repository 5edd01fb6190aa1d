"""Every verb, ``%%lion`` option and ``%lion`` subcommand is taught by at least one tutorial.

The tutorials in ``notebooks/`` are lion_nb's documentation. What a user can call or type is
enumerated from the code itself -- the public methods of `Branch` and `Session`, the option
strings of the parser ``%%lion`` parses its line with, the subcommands registered with the
``%lion`` dispatcher -- and the test fails with the list of whatever no tutorial's code cell
uses, by category, so a new verb, option or subcommand cannot land untaught.

How a notebook is read: each code cell goes through IPython's own input transformer (as the
kernel would run it), so ``%%lion -m x`` becomes ``run_cell_magic('lion', '-m x', body)``
and ``t = %lion branches`` becomes ``run_line_magic('lion', 'branches')``; the result is
parsed with `ast`. Comments, strings and prompt text therefore never count.

- A verb is taught when some attribute access in Python code has its name
  (``await branch.communicate(...)``, ``@session.operation``), except on a name the notebook
  imported as a module (``asyncio.run`` does not teach `Branch.run`).
- An option is taught when the line of a ``%%lion`` cell holds its long or its short form.
- A subcommand is taught when a ``%lion`` line names it or one of its aliases, resolved by
  the dispatcher's own splitting (``%lion ls`` is ``branches``).

A verb is a method (function, classmethod or staticmethod) defined by a lion_nb class in the
class's MRO, not starting with ``_`` and not inherited from pydantic's ``BaseModel``;
properties are state, not verbs. `EXCLUDED` names the few verbs that are plumbing between
lion_nb's own parts, each with the reason a tutorial does not teach it. `TAUGHT_IN_PROSE` names
the few that a tutorial cannot run with no key and no error output, each with the reason; those
must still be shown in a tutorial's Markdown (``.verb(`` or ``%lion NAME``).
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import re
from argparse import Namespace
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager
from pydantic import BaseModel

from lion_nb import Branch, Session
from lion_nb.notebook import magics as lion_magics
from lion_nb.notebook.cell.options import split_line
from lion_nb.notebook.commands import registry as line_commands

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
TUTORIALS = sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))

#: verbs that are plumbing, not user API: class name -> {verb: why no tutorial teaches it}
EXCLUDED: dict[str, dict[str, str]] = {
    "Branch": {
        "get_operation": "the lookup `Session.run_operation` and `%%lion --op` go through; "
        "users call the operation itself",
        "attach_to": "how a Session takes a branch in (`Session.include_branches`)",
        "detach": "how a Session lets a branch go (`Session.remove_branch`)",
        "take_context": "how `chat` and `run` take the context a provider prepared for the "
        "next request; users set context through providers and `%%lion` values",
        "note_prefix": "how `chat` marks the request's system prompt and tools for the cache "
        "report; users read the report, not the mark",
    },
    "Session": {},
}

#: what no tutorial can run offline and without an error, so one shows it in its text instead:
#: category -> {name: why}
TAUGHT_IN_PROSE: dict[str, dict[str, str]] = {
    "Session verbs": {
        "resume_batch": "takes up a batch at OpenAI's or Anthropic's batch service, which no "
        "offline model has; tutorial 09 shows it beside `via='batch'`",
    },
    "%lion subcommands": {
        "explain": "explains the cell that failed last, and a tutorial has no failing cell "
        "(Run All stops at one in Jupyter); tutorial 02 describes it",
    },
}


# -- what there is ---------------------------------------------------------------------------
def public_verbs(cls: type) -> set[str]:
    """The public methods ``cls`` and its lion_nb bases define (pydantic's left out)."""
    plumbing = set(dir(BaseModel))
    verbs = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("lion_nb."):
            continue
        for name, attr in vars(klass).items():
            if name.startswith("_") or name in plumbing:
                continue
            if isinstance(attr, (classmethod, staticmethod)) or inspect.isfunction(attr):
                verbs.add(name)
    return verbs


def taught_verbs_wanted(cls: type) -> set[str]:
    return public_verbs(cls) - set(EXCLUDED[cls.__name__])


def cell_options() -> list[tuple[str, ...]]:
    """Each option of ``%%lion`` as its option strings (``("-m", "--model")``), read from the
    very parser instance the cell magic parses its line with."""
    parser = lion_magics._TURN_PARSER
    return [tuple(a.option_strings) for a in parser._actions if a.option_strings]


def line_subcommands() -> set[str]:
    """The ``%lion`` subcommands: the dispatcher's registry, plus ``ask``, which the
    dispatcher handles before the registry (it takes the turn parser of ``%%lion``)."""
    return {*line_commands.COMMANDS, "ask"}


def wanted() -> dict[str, list[str]]:
    """Everything a tutorial must teach, by category (an option as ``-m/--model``)."""
    return {
        "Branch verbs": sorted(taught_verbs_wanted(Branch)),
        "Session verbs": sorted(taught_verbs_wanted(Session)),
        "%%lion options": ["/".join(strings) for strings in cell_options()],
        "%lion subcommands": sorted(line_subcommands()),
    }


# -- what the tutorials use ------------------------------------------------------------------
class Usage:
    """Attribute names, ``%%lion`` lines and ``%lion`` subcommands in some code cells."""

    def __init__(self, sources: list[str]):
        self.attributes: set[str] = set()
        self.cell_lines: list[list[str]] = []
        self.subcommands: set[str] = set()
        transform = TransformerManager().transform_cell
        trees = [ast.parse(transform(source)) for source in sources]
        modules = {
            alias.asname or alias.name.split(".")[0]
            for tree in trees
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute):
                    on_module = isinstance(node.value, ast.Name) and node.value.id in modules
                    if not on_module:
                        self.attributes.add(node.attr)
                magic = _lion_magic(node)
                if magic == "cell":
                    self.cell_lines.append(_words(node.args[1].value))
                elif magic == "line":
                    name, _ = line_commands._split(node.args[1].value)
                    self.subcommands.add(name)

    def has_option(self, strings: tuple[str, ...]) -> bool:
        return any(
            word == s or (s.startswith("--") and word.startswith(s + "="))
            for words in self.cell_lines
            for word in words
            for s in strings
        )

    def uses(self, category: str, name: str) -> bool:
        if category == "%%lion options":
            return self.has_option(tuple(name.split("/")))
        if category == "%lion subcommands":
            return name in self.subcommands
        return name in self.attributes


def _lion_magic(node: ast.AST) -> str | None:
    """``"cell"`` / ``"line"`` when ``node`` is IPython's call of a ``lion`` magic."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    kind = {"run_cell_magic": "cell", "run_line_magic": "line"}.get(node.func.attr)
    args = node.args
    if kind is None or len(args) < 2 or not all(isinstance(a, ast.Constant) for a in args[:2]):
        return None
    return kind if args[0].value == "lion" else None


def _words(line: str) -> list[str]:
    return split_line(line, "%%lion")


def cells(path: Path, kind: str) -> list[str]:
    notebook = nbformat.read(path, as_version=4)
    return [cell.source for cell in notebook.cells if cell.cell_type == kind]


def in_prose(category: str, name: str) -> str:
    """How ``name`` is written when a tutorial's text shows it."""
    if category == "%lion subcommands":
        return f"%lion {name}"
    if category == "%%lion options":
        return max(name.split("/"), key=len)
    return f".{name}("


@pytest.fixture(scope="module")
def usage() -> Usage:
    return Usage([source for path in TUTORIALS for source in cells(path, "code")])


# -- the checks ------------------------------------------------------------------------------
def test_every_verb_option_and_subcommand_is_taught_by_a_tutorial(usage):
    missing = {
        category: [
            name
            for name in names
            if not usage.uses(category, name) and name not in TAUGHT_IN_PROSE.get(category, {})
        ]
        for category, names in wanted().items()
    }
    missing = {category: names for category, names in missing.items() if names}
    assert not missing, (
        "Not taught by any tutorial in notebooks/ (use each one in a code cell of the most "
        "fitting tutorial; a verb that is not user API goes in EXCLUDED, and what cannot run "
        "offline in TAUGHT_IN_PROSE, with the reason):\n"
        + "\n".join(f"  {category}: {', '.join(names)}" for category, names in missing.items())
    )


def test_the_enumerations_find_the_known_items():
    """A broken enumerator would make the coverage test pass on nothing."""
    assert {"communicate", "operate", "ReAct", "clone", "to_dict", "from_dict"} <= public_verbs(
        Branch
    )
    assert {"new_branch", "split", "map", "register_operation"} <= public_verbs(Session)
    assert not {"model_dump", "model_validate", "copy", "chat_model"} & public_verbs(Branch)
    options = cell_options()
    assert {("-m", "--model"), ("-r", "--response-format"), ("--map",)} <= set(options)
    assert len(options) >= 15
    assert {"save", "load", "branches", "export", "ask", "help"} <= line_subcommands()
    overview = io.StringIO()
    with contextlib.redirect_stdout(overview):
        line_commands.COMMANDS["help"].func(None, Namespace(topic=None))
    rows = (re.match(r"  (\w+) {2,}\S", line) for line in overview.getvalue().splitlines())
    listed = {row.group(1) for row in rows if row}
    assert listed | {"help"} == line_subcommands(), "`%lion help` and the enumeration disagree"


def test_every_exclusion_names_a_real_verb_with_a_reason():
    for cls in (Branch, Session):
        for name, reason in EXCLUDED[cls.__name__].items():
            assert name in public_verbs(cls), f"{cls.__name__}.{name} is no longer a verb"
            assert len(reason.split()) >= 4, f"{cls.__name__}.{name}: say why it is excluded"


def test_what_is_taught_in_prose_is_real_shown_and_not_yet_run(usage):
    """Each entry of `TAUGHT_IN_PROSE` names a real item that a tutorial's Markdown shows, and
    that no code cell uses yet (once one does, the entry goes)."""
    text = "\n".join(source for path in TUTORIALS for source in cells(path, "markdown"))
    everything = wanted()
    for category, entries in TAUGHT_IN_PROSE.items():
        for name, reason in entries.items():
            assert name in everything[category], f"{category}: {name} no longer exists"
            assert in_prose(category, name) in text, f"no tutorial's text shows {name}"
            assert not usage.uses(category, name), f"{name} is run by a tutorial: drop the entry"
            assert len(reason.split()) >= 4, f"{category}: {name}: say why it is not run"


def test_the_reader_finds_uses_and_ignores_text():
    usage = Usage(
        [
            "import asyncio\nanswer = await branch.communicate('Hi')  # .operate( in a comment",
            "asyncio.run(main())\ns = 'text that says .clone('",
            "%%lion -b ideas --model=fast -q\nUse --map and %lion save in the prompt.",
            "t = %lion ls\n%lion export main --to md",
        ]
    )
    assert "communicate" in usage.attributes
    assert not {"operate", "clone", "run"} & usage.attributes
    assert usage.has_option(("-b", "--branch")) and usage.has_option(("-m", "--model"))
    assert usage.has_option(("-q", "--quiet")) and not usage.has_option(("--map",))
    assert usage.subcommands == {"branches", "export"}


def test_there_are_tutorials_to_read():
    assert len(TUTORIALS) >= 10
