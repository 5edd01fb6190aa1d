"""`EvalGrid` in a real JupyterLab, driven in Chromium: a 50-case × 4-column grid fills in
live while the run proceeds, "show differences only" hides the rows that agree, a click
(and Enter from the keyboard) shows a cell's answer and reasons, and hostile answers stay
inert; every text reaches its contrast in JupyterLab Light and Dark and axe-core finds no
serious violation. No request leaves 127.0.0.1.

Cases 0-9 answer at once; the rest once the test writes ``go-eval`` next to the notebook,
so the counts read do not depend on how fast a loaded machine runs.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.browser.a11y import axe_violations, set_theme, text_contrast, unnamed_controls
from tests.browser.jupyter import (
    cell_output,
    new_notebook,
    open_notebook,
    run_cell,
    screenshot,
    wait_for_idle,
)

pytestmark = pytest.mark.browser

ATTACK = "<img src=x onerror=\"window.pwned='img'\"><script>window.pwned='script'</script>"

SETUP = f"""\
%load_ext lion_nb
import asyncio, pathlib
from lion_nb import Session, iModel
from lion_nb.evals import contains
from lion_nb.widgets import EvalGrid

ATTACK = {ATTACK!r}

def player(wrong):
    async def play(messages, **request):
        n = int(messages[-1]["content"].split("#")[1])
        while n >= 10 and not pathlib.Path("go-eval").exists():
            await asyncio.sleep(0.05)
        if n == 7:
            return ATTACK  # hostile, and wrong everywhere: its row agrees
        return "no" if n in wrong else f"yes {{n}}"
    return play

A = iModel(provider="offline", model="function", function=player({{3, 11, 12}}))
B = iModel(provider="offline", model="function", function=player({{3, 20}}))
cases = [{{"id": f"c{{n}}", "n": n}} for n in range(50)]
session = Session()
"""

START = """\
run = session.evaluate(
    cases,
    prompt={"short": "#{n}#", "long": "Please answer #{n}#"},
    models={"A": A, "B": B},
    checks=[contains("yes")],
    save=False,
)
grid = EvalGrid(run)
grid
"""


def _ended(output) -> int:
    match = re.search(r"(\d+)/200 cells", output.locator(".lnb-evalgrid-status").inner_text())
    return int(match.group(1)) if match else -1


def _wait(output, page, count: int, guard: float = 60) -> int:
    deadline = time.monotonic() + guard
    while time.monotonic() < deadline and _ended(output) < count:
        page.wait_for_timeout(100)
    return _ended(output)


def test_the_grid_renders_live_filters_and_opens_a_cell(lab_page, jupyter_server, page_log):
    page = lab_page
    (jupyter_server.root / "go-eval").unlink(missing_ok=True)
    notebook = new_notebook(SETUP, START, "await run\nprint(run.summary_text())")
    open_notebook(page, jupyter_server, "evalgrid.ipynb", notebook)
    run_cell(page, 0)
    run_cell(page, 1)
    out = cell_output(page, 1)
    out.locator(".lnb-evalgrid").first.wait_for(timeout=30_000)
    assert _wait(out, page, 40) == 40  # cases 0-9 on 4 columns, the others waiting
    assert out.locator(".lnb-evalgrid-pending").count() == 160
    (jupyter_server.root / "go-eval").write_text("")
    assert _wait(out, page, 200) == 200  # it filled in while the run went on
    run_cell(page, 2)
    wait_for_idle(page)
    assert "short × A: 46/50 passed" in cell_output(page, 2).inner_text()

    rows = out.locator(".lnb-evalgrid-row:not(.lnb-evalgrid-header)")
    assert rows.count() == 50
    assert out.locator(".lnb-evalgrid-header [role=columnheader]").count() == 5
    assert out.locator("[role=gridcell]").count() == 200
    out.get_by_text("show differences only").click()
    # rows that disagree: 11 and 12 (A wrong), 20 (B wrong); 3 and 7 fail everywhere. The
    # browser hides the other rows at once, then the kernel's filtered page replaces them all
    page.wait_for_function(
        "() => document.querySelectorAll('.lnb-evalgrid-row:not(.lnb-evalgrid-header)').length === 3"
    )
    assert out.locator(".lnb-evalgrid-row[hidden]").count() == 0
    shown = [
        r.locator("[role=rowheader]").inner_text()
        for r in rows.all()
        if r.is_visible() and r.locator("[role=rowheader]").count()
    ]
    assert [s.split(":")[0] for s in shown] == ["c11", "c12", "c20"]
    screenshot(page, "lab-evalgrid-differences", element=out)
    out.get_by_text("show differences only").click()  # every row again

    hostile = rows.nth(7).locator("[role=gridcell]").nth(1)
    hostile.click()
    detail = out.locator(".lnb-evalgrid-detail")
    detail.get_by_text("repeat 1").wait_for(timeout=10_000)
    assert "c7: 7 — short × B" in detail.inner_text()
    assert ATTACK in detail.locator(".lnb-evalgrid-answer").inner_text()  # shown as text
    assert "contains('yes'): 'yes' not in the answer" in detail.inner_text()

    # the keyboard: the opened cell is in the tab order; ArrowDown then Enter opens the next
    hostile.press("ArrowDown")
    page.keyboard.press("Enter")
    detail.get_by_text("c8: 8 — short × B").wait_for(timeout=10_000)
    assert "yes 8" in detail.inner_text()

    probe = page.evaluate(
        "() => ({pwned: window.pwned ?? null,"
        " scripts: document.querySelectorAll('.lnb-evalgrid script').length,"
        " images: document.querySelectorAll('.lnb-evalgrid img').length})"
    )
    assert probe == {"pwned": None, "scripts": 0, "images": 0}
    screenshot(page, "lab-evalgrid", element=out)

    for theme in ("JupyterLab Light", "JupyterLab Dark"):
        set_theme(page, theme)
        measured = text_contrast(page)
        assert len(measured) > 200, theme  # the grid's texts were measured
        low = [t for t in measured if t["ratio"] < t["need"]]
        assert low == [], (theme, low[:5])
        assert axe_violations(page) == [], theme
        assert unnamed_controls(page) == ([], []), theme
    set_theme(page, "JupyterLab Light")
    assert page_log.foreign() == []


PAGED = """\
await run
paged = EvalGrid(run, page_size=5)
paged
"""


def test_the_grid_pages_and_its_filter_finds_rows_on_every_page(lab_page, jupyter_server):
    page = lab_page
    (jupyter_server.root / "go-eval").write_text("")  # every case answers at once
    notebook = new_notebook(SETUP, START.replace("grid\n", ""), PAGED)
    open_notebook(page, jupyter_server, "evalgrid-pages.ipynb", notebook)
    run_cell(page, 0)
    run_cell(page, 1)
    run_cell(page, 2)
    out = cell_output(page, 2)
    pager = out.locator(".lnb-evalgrid-pager")
    pager.wait_for(timeout=30_000)

    def labels() -> list[str]:
        heads = out.locator(".lnb-evalgrid-row:not(.lnb-evalgrid-header) [role=rowheader]")
        return [h.inner_text().split(":")[0] for h in heads.all() if h.is_visible()]

    assert "cases 1–5 of 50 · page 1 of 10" in pager.inner_text()
    assert labels() == ["c0", "c1", "c2", "c3", "c4"]
    assert out.locator(".lnb-evalgrid-previous").is_disabled()
    out.locator(".lnb-evalgrid-next").click()
    out.locator(".lnb-evalgrid-next").click()
    out.get_by_role("rowheader", name=re.compile("^c10:")).wait_for(timeout=10_000)
    assert labels() == ["c10", "c11", "c12", "c13", "c14"]
    assert "cases 11–15 of 50 · page 3 of 10" in pager.inner_text()

    out.get_by_text("show differences only").click()  # rows 11, 12 (this page) and 20 (page 5)
    out.get_by_role("rowheader", name=re.compile("^c20:")).wait_for(timeout=10_000)
    assert labels() == ["c11", "c12", "c20"]
    assert pager.is_hidden()  # three cases: one page
    screenshot(page, "lab-evalgrid-paged-differences", element=out)

    out.get_by_text("show differences only").click()
    out.get_by_role("rowheader", name=re.compile("^c0:")).wait_for(timeout=10_000)
    assert labels() == ["c0", "c1", "c2", "c3", "c4"]  # a new filter: its first page
    out.locator(".lnb-evalgrid-next").click()
    out.get_by_role("rowheader", name=re.compile("^c5:")).wait_for(timeout=10_000)
    out.locator("[role=gridcell]").nth(1).click()  # the page's first row: case 5
    detail = out.locator(".lnb-evalgrid-detail")
    detail.get_by_text("c5: 5 — short × B").wait_for(timeout=10_000)
    assert unnamed_controls(page) == ([], [])
    low = [t for t in text_contrast(page) if t["ratio"] < t["need"]]
    assert low == [] and axe_violations(page) == []
    screenshot(page, "lab-evalgrid-paged", element=out)
