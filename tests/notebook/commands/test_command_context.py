"""The ``%lion`` subcommands take the line's `CommandContext`, never the magics object."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
from traitlets import TraitError

import lion_nb.notebook.commands as commands_package
from lion_nb.notebook.commands import COMMANDS
from lion_nb.notebook.commands.command_context import CommandContext
from lion_nb.notebook.state.session import notebook_state
from tests.notebook.nbshell import run

COMMANDS_DIR = Path(commands_package.__file__).parent
STATE_DIR = COMMANDS_DIR.parent / "state"


def _registered():
    for cmd in COMMANDS.values():
        yield cmd.name, cmd.func
        if cmd.awaited is not None:
            yield f"{cmd.name} (awaited)", cmd.awaited


def test_every_subcommand_takes_the_command_context_first():
    for name, func in _registered():
        first = next(iter(inspect.signature(func).parameters.values()))
        assert first.annotation == "CommandContext", (name, first)


def test_no_subcommand_or_state_module_names_the_magics_object():
    found = []
    paths = sorted(COMMANDS_DIR.glob("*.py")) + sorted(STATE_DIR.glob("*.py"))
    assert any(path.name == "persistence.py" for path in paths)
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            name = getattr(node, "id", None) or getattr(node, "arg", None)
            if isinstance(node, (ast.Name, ast.arg)) and name == "magics":
                found.append(f"{path.name}:{node.lineno}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").endswith("magics"):
                found.append(f"{path.name}:{node.lineno} imports {node.module}")
    assert not found, found


def _magics(ip):
    return ip.magics_manager.registry["LionMagics"]


def test_the_context_reads_the_options_when_asked_and_sets_them_as_config_does(ip):
    ctx = _magics(ip).command_context()
    assert isinstance(ctx, CommandContext)
    assert ctx.state is notebook_state() and ctx.shell is ip
    assert run(ip, "%config LionMagics.aliases = {'fast': 'offline/fast'}").error is None
    assert ctx.aliases == {"fast": "offline/fast"}  # read at use, not copied at the start
    ctx.aliases["other"] = "offline/x"  # a copy: the option is unchanged
    assert _magics(ip).aliases == {"fast": "offline/fast"}
    ctx.settings.set("output_format", "text")
    assert _magics(ip).output_format == "text" == ctx.output_format
    with pytest.raises(TraitError):
        ctx.settings.set("aliases", {"bad": "no-slash"})
    assert _magics(ip).aliases == {"fast": "offline/fast"}
    assert "autosave" in ctx.settings.options()
    assert ctx.settings.env_vars["rerun"] == "LION_NB_RERUN"


def test_a_context_follows_a_notebook_state_made_afresh(ip):
    from lion_nb.notebook.state.session import reset_notebook_state

    ctx = _magics(ip).command_context()
    before = ctx.state
    fresh = reset_notebook_state()
    assert ctx.state is fresh is not before
