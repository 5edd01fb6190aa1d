"""The README and notebooks/README.md each list every tutorial in notebooks/, in order, in
one table: a new tutorial is added where it belongs, and no blank line splits the table
(Markdown ends a table at a blank line, so rows after it show as loose text)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p.name for p in (REPO / "notebooks").glob("[0-9][0-9]-*.ipynb"))
LINK = re.compile(r"\]\((?:notebooks/)?(\d\d-[^)/]+\.ipynb)\)")


def tables(text: str) -> list[list[str]]:
    """The Markdown tables of ``text``: runs of consecutive lines starting with ``|``."""
    found: list[list[str]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if line.lstrip().startswith("|"):
            if current is None:
                current = []
                found.append(current)
            current.append(line)
        else:
            current = None
    return found


def tutorial_tables(text: str) -> list[list[str]]:
    """The tables that link to a tutorial, each as the notebooks its rows link, in order."""
    listed = [[m.group(1) for row in t for m in LINK.finditer(row)] for t in tables(text)]
    return [names for names in listed if names]


def test_there_are_tutorials_to_list():
    assert len(NOTEBOOKS) >= 15 and NOTEBOOKS[0].startswith("01-")


@pytest.mark.parametrize("readme", ["README.md", "notebooks/README.md"])
def test_one_table_lists_every_tutorial_in_order(readme):
    found = tutorial_tables((REPO / readme).read_text(encoding="utf-8"))
    assert len(found) == 1, f"{readme}: the tutorials are split over {len(found)} tables"
    assert found[0] == NOTEBOOKS, f"{readme}: the table's rows are not notebooks/, in order"


@pytest.mark.parametrize("readme", ["README.md", "notebooks/README.md"])
def test_a_row_numbers_the_notebook_it_links(readme):
    """A row's number (``01 · ...`` or a ``| 01 |`` column) is the number of its notebook."""
    text = (REPO / readme).read_text(encoding="utf-8")
    for row in (line for table in tables(text) for line in table):
        link = LINK.search(row)
        if link is None:
            continue
        number = re.match(r"\|\s*\[?(\d\d)\b", row)
        assert number is not None, row
        assert number.group(1) == link.group(1)[:2], row


def test_the_split_is_seen():
    """The checker itself: a blank line inside the table makes two tables."""
    rows = "| a | b |\n| --- | --- |\n| [01 · x](01-x.ipynb) | y |\n\n| [02 · z](02-z.ipynb) | w |"
    assert tutorial_tables(rows) == [["01-x.ipynb"], ["02-z.ipynb"]]
