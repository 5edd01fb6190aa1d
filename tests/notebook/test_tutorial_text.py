"""Commands quoted in the tutorials' text and the READMEs work as written: an install command
installs from the clone with extras ``pyproject.toml`` defines (the package is not on a
registry), and a ``%lion mcp add`` example uses the options the command has, before the
``--`` that starts the server's own command line."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tests.notebook.test_readme_blocks import check_command

REPO = Path(__file__).resolve().parents[2]
SPAN = re.compile(r"`([^`\n]+)`")


def markdown(path: Path) -> str:
    """The prose of a tutorial (its markdown cells) or of a Markdown file."""
    if path.suffix != ".ipynb":
        return path.read_text(encoding="utf-8")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def quoted(path: Path, starts: str) -> list[str]:
    """The inline code spans of ``path``'s prose that contain ``starts``."""
    return [s for s in SPAN.findall(markdown(path)) if starts in s]


DOCS = [
    REPO / "README.md",
    REPO / "notebooks" / "README.md",
    *sorted((REPO / "notebooks").glob("[0-9][0-9]-*.ipynb")),
]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_quoted_install_command_installs_from_the_clone(path):
    for span in quoted(path, "pip install"):
        words = shlex.split(span)
        if words[0] == "pip":
            words = ["python", "-m", *words]
        check_command(words)


def test_an_install_from_a_registry_is_seen():
    """The checker itself: the package name alone is refused (no registry serves it)."""
    with pytest.raises(AssertionError):
        check_command(shlex.split('python -m pip install "lion-nb[mcp]"'))


def mcp_add_options() -> dict[str, tuple | None]:
    """``%lion mcp``'s options and their choices, from the parser the command parses with."""
    from lion_nb.notebook.commands import registry

    registry._find("mcp")  # registers the subcommand modules
    parser = registry.COMMANDS["mcp"].parser
    return {
        flag: tuple(action.choices) if action.choices else None
        for action in parser._actions
        for flag in action.option_strings
    }


def test_the_mcp_add_examples_put_options_before_the_servers_command():
    examples = quoted(REPO / "notebooks" / "14-mcp-tools-and-approval.ipynb", "%lion mcp add")
    assert any("--approve ask" in e for e in examples), examples
    options = mcp_add_options()
    for example in examples:
        ours, _, server = example.partition(" -- ")
        assert not any(w.startswith("--") for w in server.split()), example
        words = ours.split()[3:]  # after `%lion mcp add`
        for i, word in enumerate(words):
            if not word.startswith("-"):
                continue
            flag = word.split("=")[0]
            assert flag in options, f"{example}: `%lion mcp` has no {flag}"
            if options[flag] is not None:
                assert words[i + 1] in options[flag], example
