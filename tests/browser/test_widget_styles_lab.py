"""The widgets' styles in a real JupyterLab, in Chromium, in the Light and the Dark theme:
`EvalGrid` is styled (cell borders, pass and fail marked in different colours); the running
version's stylesheet wins over one an older lion_nb saved in the notebook's widget state
(the screen-reader line stays visually hidden); a file chip reads "name · label"; Chat's
placeholder is not cut off; a denied tool call reads "denied" in the neutral style.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat
import pytest

from tests.browser.a11y import set_theme
from tests.browser.jupyter import cell_output, new_notebook, open_notebook, run_cell, screenshot

pytestmark = pytest.mark.browser

OLDER = Path(__file__).resolve().parent / "notebooks"  # notebooks saved by older versions
THEMES = ("JupyterLab Light", "JupyterLab Dark")

GRID = """\
%load_ext lion_nb
from lion_nb import Session, iModel
from lion_nb.evals import contains
from lion_nb.widgets import EvalGrid

async def play(messages, **request):
    n = int(messages[-1]["content"].split("#")[1])
    return "no" if n % 2 else "yes"

run = Session().evaluate(
    [{"id": f"c{n}", "n": n} for n in range(4)],
    prompt="#{n}#",
    models={"A": iModel(provider="offline", model="function", function=play)},
    checks=[contains("yes")],
    save=False,
)
await run
EvalGrid(run)
"""

GRID_STYLES = """(root) => {
  const style = (q) => getComputedStyle(root.querySelector(q));
  const cell = style(".lnb-evalgrid-row:not(.lnb-evalgrid-header) > span");
  return {
    border: cell.borderTopWidth + " " + cell.borderTopStyle + " " + cell.borderTopColor,
    scroll: style(".lnb-evalgrid-scroll").borderTopColor,
    pass: style(".lnb-evalgrid-cell.lnb-evalgrid-pass").boxShadow,
    fail: style(".lnb-evalgrid-cell.lnb-evalgrid-fail").boxShadow,
  };
}"""


def test_the_eval_grid_is_styled_in_light_and_dark(lab_page, jupyter_server, page_log):
    page = lab_page
    open_notebook(page, jupyter_server, "grid-styles.ipynb", new_notebook(GRID))
    run_cell(page, 0)
    out = cell_output(page, 0)
    out.locator(".lnb-evalgrid-fail").first.wait_for(timeout=30_000)
    grid = out.locator(".lnb-evalgrid").first
    seen = {}
    for theme in THEMES:
        set_theme(page, theme)
        found = grid.evaluate(GRID_STYLES)
        seen[theme] = found
        assert found["border"].startswith("1px solid rgb"), found  # grid lines drawn
        assert "rgba(0, 0, 0, 0)" not in found["border"] + found["scroll"], found
        assert found["pass"] != "none" and found["fail"] != "none", found
        assert found["pass"] != found["fail"], found  # pass and fail are told apart
        screenshot(page, f"lab-evalgrid-{theme.split()[-1].lower()}", element=grid)
    assert seen[THEMES[0]]["pass"] != seen[THEMES[1]]["pass"]  # each theme's own colours


LIVE = """\
%load_ext lion_nb
"""

TURN = """\
%%lion -b live
Say hello.
"""

SR_ONLY = """(root) => {
  const node = root.querySelector(".lnb-sr-only");
  const box = node.getBoundingClientRect();
  const css = getComputedStyle(node);
  return {width: box.width, height: box.height, position: css.position, clip: css.clip};
}"""


def _stale_notebook():
    """Tutorial 12 as saved by an older lion_nb (its widget state holds that version's
    stylesheet, without `.lnb-sr-only`; kept in ``notebooks/`` beside this module), with a
    live widget's cell first."""
    saved = nbformat.read(OLDER / "tutorial-12-older-version.ipynb", as_version=4)
    state = saved.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    old = [m["state"]["_css"] for m in state.values() if m["state"].get("_css")]
    assert old and ".lnb-sr-only" not in old[0]  # the old stylesheet this test is about
    notebook = new_notebook(LIVE, TURN)
    notebook.metadata["widgets"] = copy.deepcopy(saved.metadata["widgets"])
    shown = [c for c in saved.cells if "application/vnd.jupyter.widget-view+json" in json.dumps(c)]
    notebook.cells += copy.deepcopy(shown)  # the saved outputs show the old models
    return notebook, old[0]


def test_the_live_stylesheet_wins_over_one_saved_by_an_older_version(
    lab_page, jupyter_server, page_log
):
    page = lab_page
    notebook, old_css = _stale_notebook()
    open_notebook(page, jupyter_server, "stale-styles.ipynb", notebook)
    run_cell(page, 0)
    run_cell(page, 1)
    view = cell_output(page, 1).locator(".lnb-turn").first
    view.wait_for(timeout=30_000)
    page.wait_for_function(
        "(n) => n.querySelector('.lnb-sr-only').textContent.includes('done')",
        arg=view.element_handle(),
    )

    def hidden() -> dict:
        found = view.evaluate(SR_ONLY)
        assert found["position"] == "absolute", found
        assert found["width"] <= 1 and found["height"] <= 1, found
        assert found["clip"] == "rect(0px, 0px, 0px, 0px)", found
        return found

    hidden()
    # an old widget model restored after the live one (the race seen on load): anywidget
    # puts its `_css` in the style element named after the widget's class (its own code)
    page.evaluate(
        """(css) => {
          const id = "lion_nb.widgets.turn.TurnWidget";
          const prev = document.querySelector(`style[id='${id}']`);
          if (prev) { prev.textContent = css; return; }
          const style = Object.assign(document.createElement("style"), {id, type: "text/css"});
          style.appendChild(document.createTextNode(css));
          document.head.appendChild(style);
        }""",
        old_css,
    )
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    hidden()
    sheets = page.evaluate(
        "() => [...document.querySelectorAll('style[data-lnb-stylesheet]')].length"
    )
    assert sheets == 1  # one stylesheet for every widget of the running version


CHAT = """\
%load_ext lion_nb
from lion_nb import Branch, iModel
from lion_nb.models.media import file_part
from lion_nb.protocols.actions import Tool
from lion_nb.widgets import Chat

def wipe(path: str) -> str:
    \"\"\"Wipe a path.\"\"\"
    return "wiped"

PDF = b"%PDF-1.4\\n/Type /Page\\n" + b"x" * 3000
branch = Branch(name="chat", chat_model=iModel("offline/auto"), tools=[Tool(wipe, approve=False)])
branch.msgs.add_message(instruction="read this", files=[file_part("rain-report.pdf", PDF)])
await branch.act({"function": "wipe", "arguments": {"path": "/"}}, suppress_errors=True)
chat = Chat(branch)
chat
"""

PLACEHOLDER = """(area) => {
  const probe = area.cloneNode();
  probe.value = area.placeholder;
  probe.style.height = "auto";
  probe.style.width = area.getBoundingClientRect().width + "px";
  area.parentNode.append(probe);
  const needs = probe.scrollHeight;
  probe.remove();
  return {placeholder: area.placeholder, needs, has: area.clientHeight,
          scrollWidth: area.scrollWidth, clientWidth: area.clientWidth};
}"""


def test_chip_placeholder_and_denied_call_in_the_dark_theme(lab_page, jupyter_server, page_log):
    page = lab_page
    open_notebook(page, jupyter_server, "chat-styles.ipynb", new_notebook(CHAT))
    run_cell(page, 0)
    out = cell_output(page, 0)
    chip = out.locator(".lnb-view .lnb-chip").first
    chip.wait_for(timeout=30_000)
    # the box is a view of its own, which may come after the chat's view; it fits its
    # placeholder when it is laid out (a resize observer), which `set_theme`'s frames cover
    area = out.locator("textarea.lnb-chat-box").first
    area.wait_for(timeout=30_000)
    set_theme(page, "JupyterLab Dark")
    fit = area.evaluate(PLACEHOLDER)
    state = out.locator(".lnb-tool-state").first
    dot = state.evaluate("(n) => getComputedStyle(n, '::before').backgroundColor")
    found = {
        "chip shown": chip.inner_text().replace("\n", ""),
        "chip text": chip.evaluate("(n) => n.textContent"),
        "placeholder lines shown": fit["needs"] <= fit["has"] + 1,
        "placeholder not cut sideways": fit["scrollWidth"] <= fit["clientWidth"],
        "tool state": state.inner_text(),
        "red dots": out.locator(".lnb-tool-error").count(),
        "dot": dot,
    }
    assert fit["placeholder"].startswith("Message"), fit
    assert found == {
        "chip shown": "rain-report.pdf · PDF · 1 page · 3 KB",
        "chip text": "rain-report.pdf · PDF · 1 page · 3 KB",
        "placeholder lines shown": True,  # every line of the placeholder is shown
        "placeholder not cut sideways": True,
        "tool state": "denied",
        "red dots": 0,
        "dot": "rgba(0, 0, 0, 0)",  # a neutral ring in the text colour, not the error red
    }, fit
    screenshot(page, "lab-chat-dark", element=out)
