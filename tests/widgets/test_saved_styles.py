"""Styles are never a widget's saved state: a notebook saved by an older lion_nb must not
carry a stylesheet that overrides the running version's. The widgets sync no ``_css``; the
stylesheet and its version travel in the ES module, which claims the page's one stylesheet
element (``_styles.js``; in the browser: ``tests/browser/test_widget_styles_lab.py``).

The scan of the tutorials fails while a tutorial's saved widget state holds a stylesheet
other than the current one: regenerating the tutorials makes them current."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lion_nb import Branch, iModel
from lion_nb.widgets import BranchView, EvalGrid, TurnWidget
from lion_nb.widgets._base import stylesheet, stylesheet_version

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
PREFIX = "const LNB_CSS = "


def _embedded_css(esm: str) -> str | None:
    """The stylesheet an ES module carries (its first line), or None."""
    first = esm.split("\n", 1)[0]
    if not first.startswith(PREFIX):
        return None
    return json.loads(first[len(PREFIX) :].rstrip(";"))


def test_a_widgets_state_carries_no_css_and_its_module_the_current_stylesheet():
    branch = Branch(chat_model=iModel("offline/auto"))
    for widget in (BranchView(branch), TurnWidget("t")):
        state = widget.get_state()
        assert not state.get("_css"), type(widget).__name__
        assert _embedded_css(state["_esm"]) == stylesheet()
        assert json.dumps(stylesheet_version()) in state["_esm"]
        assert "lnbClaimStyles" in state["_esm"]
    assert ".lnb-sr-only" in stylesheet()
    assert "_css" not in EvalGrid.class_trait_names(sync=True)


def _saved_stylesheets(path: Path) -> list[tuple[str, str]]:
    """``(model id, why)`` for each lion_nb widget in ``path``'s saved widget state whose
    stylesheet is not the current one."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    widgets = notebook.get("metadata", {}).get("widgets", {})
    state = widgets.get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    current = stylesheet()
    stale = []
    for model_id, model in state.items():
        values = model.get("state", {})
        if not str(values.get("_anywidget_id", "")).startswith("lion_nb."):
            continue
        if values.get("_css"):
            stale.append((model_id, f"a saved `_css` of {len(values['_css'])} characters"))
        embedded = _embedded_css(str(values.get("_esm", "")))
        if embedded is not None and embedded != current:
            stale.append((model_id, "a module carrying another stylesheet"))
    return stale


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_no_tutorial_saves_a_stylesheet_other_than_the_current_one(path):
    stale = _saved_stylesheets(path)
    assert stale == [], f"{path.name}: regenerate it ({len(stale)} widgets: {stale[:2]})"
