"""The README's one-minute tour, cell by cell, in a real IPython shell: every cell runs, and
the ``{df.describe()}`` of the ``%%lion`` cell is the DataFrame the tour defines."""

from __future__ import annotations

import re
from pathlib import Path

from tests.notebook.nbshell import run

README = Path(__file__).resolve().parents[2] / "README.md"


def tour_cells() -> list[str]:
    section = README.read_text(encoding="utf-8").split("## A one-minute tour", 1)[1]
    section = section.split("\n## ", 1)[0]
    return [m.group(1) for m in re.finditer(r"```(?:python)?\n(.*?)\n```", section, re.S)]


def test_every_cell_of_the_tour_runs(ip):
    cells = tour_cells()
    assert len(cells) == 3 and cells[1].startswith("%%lion")
    ran = [run(ip, cell) for cell in cells]
    assert [r.error for r in ran] == [None, None, None], ran
    from lion_nb import Branch, current_session

    instruction = next(
        m for m in current_session().default_branch.messages if m.kind == "instruction"
    )
    assert "rain_mm" in instruction.instruction and "mean" in instruction.instruction
    assert isinstance(ran[2].value, Branch)
