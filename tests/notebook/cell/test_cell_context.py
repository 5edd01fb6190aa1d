"""`CellContext`: what a cell reads of the notebook, made by `LionMagics.cell_context` in a
real IPython shell -- the settings as they are when the cell starts, frozen."""

from __future__ import annotations

import dataclasses

import pytest

from lion_nb.notebook.cell.cell_context import CellContext
from tests.notebook.nbshell import run


def _magics(ip):
    return ip.magics_manager.registry["LionMagics"]


def test_the_context_holds_the_settings_the_cell_starts_with(ip):
    assert run(ip, "%config LionMagics.rerun = 'append'").error is None
    assert run(ip, "%config LionMagics.context_budget = 500").error is None
    magics = _magics(ip)
    ctx = magics.cell_context()
    assert isinstance(ctx, CellContext)
    assert ctx.shell is ip and ctx.state is magics.state
    assert (ctx.rerun, ctx.context_budget, ctx.interpolate) == ("append", 500, True)
    assert ctx.user_ns is ip.user_ns
    assert run(ip, "%config LionMagics.rerun = 'replace'").error is None
    assert ctx.rerun == "append"  # a turn already running keeps its cell's settings
    assert magics.cell_context().rerun == "replace"


def test_the_context_is_frozen(ip):
    ctx = _magics(ip).cell_context()
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.rerun = "fork"  # type: ignore[misc]


def test_a_raised_session_budget_that_the_setting_made_is_kept_by_the_setting(ip):
    from lion_nb.notebook.state.session import current_session

    assert run(ip, "%config LionMagics.session_budget = 1.5").error is None
    magics = _magics(ip)
    ctx = magics.cell_context()
    budget = current_session().budget
    assert budget is not None and budget.usd == 1.5
    ctx.keep_session_budget(object(), 9.0)  # not the setting's budget: the setting stays
    assert magics.session_budget == 1.5
    ctx.keep_session_budget(budget, 3.0)
    assert magics.session_budget == 3.0
