"""Every tutorial in ``notebooks/`` opens in a real JupyterLab in Chromium and runs clean, in
the Light theme and in the Dark one.

Each notebook is found by a glob, so a new tutorial is checked without touching this file.
For each one:

- A fresh copy goes into its own folder under the server's root, laid out as in the
  repository: ``notebooks/`` with the notebook and the folder's other files (``cassettes/``),
  and each repository folder the notebook names as ``../<folder>/`` (``extensions/``). The
  committed file is never modified and one tutorial's files never meet another's. The
  copy has its outputs, execution counts and stored widget state cleared: everything the
  page then shows comes from this run.
- Run All, as the Run menu does, then wait (event-driven) until the kernel is idle and no
  widget is still loading.
- Asserted: every code cell ran once, in order (its execution count is its position); no
  cell has an error or stderr output; no widget says "Error displaying widget" or is stuck
  on "Loading widget..."; the page raised no uncaught error and logged no console error;
  and no request left 127.0.0.1.
- A screenshot of the whole notebook is saved as ``tests/browser/screenshots/tutorial-NN.png``
  (the viewport is made as tall as the notebook, with the side bar collapsed), for a person
  to look at.

All tutorials share the module's one JupyterLab page (each opens as a tab) and the session's
one server; each gets a fresh kernel.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.browser.a11y import set_theme
from tests.browser.jupyter import open_notebook, run_all, screenshot, wait_for_idle

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
TUTORIALS = sorted(p for p in NOTEBOOKS.glob("*.ipynb") if not p.name.startswith("."))

# Each tutorial runs in the default theme and in the dark one.
THEMES = ("JupyterLab Light", "JupyterLab Dark")

# Run All of the slowest tutorial takes seconds; this bounds a hung run, not a slow one.
RUN_TIMEOUT = 100

# What the notebook in view shows once it ran: per code cell its execution count and the
# output types of its model; per output area in the page its mime type and text.
_CELLS_JS = """() => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  return panel.content.widgets
    .filter(c => c.model.type === 'code')
    .map(c => ({
      count: c.model.executionCount,
      outputs: c.model.outputs.toJSON().map(o => o.output_type
        + (o.name ? '/' + o.name : '')
        + (o.output_type === 'error' ? `: ${o.ename}: ${o.evalue}` : '')
        + (o.name === 'stderr' ? `: ${String(o.text).slice(0, 300)}` : '')),
      shown: [...c.node.querySelectorAll('.jp-OutputArea-output')].map(o => ({
        mime: o.dataset.mimeType || '',
        text: o.textContent.slice(0, 300),
      })),
    }));
}"""

# True once no widget in the notebook in view is still waiting for its model.
_WIDGETS_SETTLED_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  return ![...panel.content.node.querySelectorAll('.jp-OutputArea-output')]
    .some(o => o.textContent.trim() === 'Loading widget...');
}"""

# How much taller the page must be for the notebook in view to show its last cell without
# scrolling (the notebook pads its end by a share of the window, so its scroll height is no
# measure); the notebook is scrolled to its top on the way.
_MISSING_HEIGHT_JS = """() => {
  const node = window.jupyterapp.shell.currentWidget.content.node;
  const scroller = node.querySelector('.jp-WindowedPanel-outer') || node;
  const cells = node.querySelectorAll('.jp-Cell');
  scroller.scrollTop = 0;
  const bottom = cells[cells.length - 1].getBoundingClientRect().bottom;
  return Math.ceil(bottom - scroller.getBoundingClientRect().bottom);
}"""

_TWO_FRAMES_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
MARGIN = 40  # pixels of blank page under the last cell
STDERR = "application/vnd.jupyter.stderr"
WIDGET_FAILURES = ("Error displaying widget", "Loading widget...")


def test_the_series_is_found():
    assert len(TUTORIALS) >= 10, [p.name for p in TUTORIALS]


def _fresh_copy(server, source: Path) -> tuple[str, int]:
    """Lay out, in a folder of its own under the server's root, what the tutorial sees in the
    repository: ``notebooks/`` with this notebook (outputs cleared) and the folder's other
    files, and each folder of the repository it names as ``../<folder>/``. Return the
    notebook's path there and its number of code cells."""
    import nbformat

    folder = server.root / "tutorials" / source.stem
    shutil.rmtree(folder, ignore_errors=True)
    skip = shutil.ignore_patterns(".*", "__pycache__", "*.ipynb")
    shutil.copytree(NOTEBOOKS, folder / NOTEBOOKS.name, ignore=skip)
    text = source.read_text(encoding="utf-8")
    for name in sorted(set(re.findall(r"\.\./([\w.-]+)/", text))):
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, folder / name, ignore=skip)
    notebook = nbformat.reads(text, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for cell in code:
        cell.outputs = []
        cell.execution_count = None
    notebook.metadata.pop("widgets", None)
    nbformat.write(notebook, folder / NOTEBOOKS.name / source.name)
    return f"tutorials/{source.stem}/{NOTEBOOKS.name}/{source.name}", len(code)


def _whole_notebook_screenshot(page, name: str) -> Path:
    """Save the notebook in view top to bottom: the side bar collapsed and the viewport made
    as tall as the notebook (JupyterLab scrolls inside its panel, so a full-page shot of the
    usual viewport would show only the first screen)."""
    size = page.viewport_size
    page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
    try:
        height = size["height"]
        for _attempt in range(6):  # the layout settles a frame or two after each resize
            page.evaluate(_TWO_FRAMES_JS)
            missing = page.evaluate(_MISSING_HEIGHT_JS)
            if missing <= -MARGIN // 2:
                break
            height += missing + MARGIN
            page.set_viewport_size({"width": size["width"], "height": height})
        else:
            raise AssertionError(f"the notebook still lacks {missing} px of a {height} px page")
        return screenshot(page, name)
    finally:
        page.set_viewport_size(size)


#: the tutorials whose model proposes cells, which JupyterLab inserts below the turn
PROPOSED_CELLS = {"17-agent-in-your-notebook": 1}


@pytest.mark.parametrize("theme", THEMES, ids=["light", "dark"])
@pytest.mark.parametrize("source", TUTORIALS, ids=lambda p: p.stem)
def test_the_tutorial_runs_clean_in_jupyterlab(source, theme, lab_page, jupyter_server, page_log):
    page = lab_page
    console_errors: list[str] = []

    def on_console(message):
        if message.type == "error":
            console_errors.append(f"{message.text} ({message.location.get('url', '')})")

    page.on("console", on_console)
    themed = False
    try:
        path, code_cells = _fresh_copy(jupyter_server, source)
        open_notebook(page, jupyter_server, path)
        if theme != THEMES[0]:
            set_theme(page, theme)
            themed = True
        run_all(page, timeout=RUN_TIMEOUT)
        page.wait_for_function(_WIDGETS_SETTLED_JS, polling=100, timeout=30_000)
        wait_for_idle(page, timeout=RUN_TIMEOUT)
        cells = page.evaluate(_CELLS_JS)
        shown_theme = page.evaluate("() => document.body.dataset.jpThemeName")
        number = re.match(r"\d+", source.name)
        suffix = "" if theme == THEMES[0] else "-dark"
        shot = _whole_notebook_screenshot(
            page, f"tutorial-{number.group(0) if number else source.stem}{suffix}"
        )
    finally:
        page.remove_listener("console", on_console)
        if themed:
            set_theme(page, THEMES[0])  # the module's other tests see the default theme
    print(f"{source.name}: {len(cells)} code cells ({theme}); screenshot {shot}")
    assert shown_theme == theme

    failures = {
        index: c["outputs"]
        for index, c in enumerate(cells)
        if any(kind.startswith(("error", "stream/stderr")) for kind in c["outputs"])
    }
    assert failures == {}
    stderr_shown = [
        (index, out["text"])
        for index, c in enumerate(cells)
        for out in c["shown"]
        if out["mime"] == STDERR
    ]
    assert stderr_shown == []
    # a cell the model proposed (``propose_cell``) is inserted by JupyterLab, and not run
    proposed = [c for c in cells if c["count"] is None and not c["outputs"]]
    assert len(proposed) == PROPOSED_CELLS.get(source.stem, 0), proposed
    cells = [c for c in cells if c not in proposed]
    counts = [c["count"] for c in cells]
    assert len(cells) == code_cells
    assert counts == list(range(1, len(cells) + 1)), counts  # each ran once, in order
    broken_widgets = [
        (index, out["text"])
        for index, c in enumerate(cells)
        for out in c["shown"]
        if any(sign in out["text"] for sign in WIDGET_FAILURES)
    ]
    assert broken_widgets == []
    assert page_log.test_errors == []
    assert console_errors == []
    assert page_log.foreign() == []
