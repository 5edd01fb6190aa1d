"""A thinking model's turn in a real JupyterLab in Chromium: the "Thinking" section streams
live, folds when the answer starts, opens and closes from the keyboard (Enter and Space on a
real ``<button aria-expanded>``), is announced once each way, and reads in Light and Dark
(every text node's WCAG contrast, axe-core). The answer's citations show as markers and a
list of sources whose links open in a new tab.

The offline ``function`` model thinks until the test has seen the live section: it waits for
a file the test writes beside the notebook (a condition, not a pause), then answers.
"""

from __future__ import annotations

import uuid

import pytest

from tests.browser.a11y import axe_violations, controls_named, set_theme, text_contrast
from tests.browser.jupyter import (
    cell_output,
    new_notebook,
    open_notebook,
    run_cell,
    screenshot,
    wait_for_idle,
)

pytestmark = pytest.mark.browser

SETUP = """\
%load_ext lion_nb
import asyncio, pathlib
from lion_nb import iModel
from lion_nb.models.endpoints import ModelResponse, emit_text_delta
from lion_nb.models.endpoints.base import emit_thinking_delta

GATE = pathlib.Path({gate!r})
THOUGHT = "First, **the question**: what is asked. <script>window.pwned=1</script> Then the sources."

async def thinker(messages, **_):
    for word in THOUGHT.split(" "):
        emit_thinking_delta(word + " ")
        await asyncio.sleep(0.02)
    while not GATE.exists():  # the test has seen the live section
        await asyncio.sleep(0.05)
    text = "Paris is the capital of France."
    for word in text.split(" "):
        emit_text_delta(word + " ")
    return ModelResponse(text=text, metadata={{
        "thinking": THOUGHT, "thinking_seconds": 1.5,
        "citations": [{{"n": 1, "title": "Atlas of France", "url": "https://atlas.example/fr",
                        "cited_text": "Paris, capital", "kind": "web_search", "end": 5}},
                       {{"n": 2, "title": "Not a link", "url": "javascript:alert(1)",
                        "kind": "url", "end": None}}]}})

sage = iModel(provider="offline", model="function", function=thinker)
"""

# Records every text a turn's live region takes, from before the turn's view exists.
_WATCH_LIVE_JS = """() => {
  window.__lionLive = [];
  new MutationObserver((changes) => {
    for (const change of changes) {
      const node = change.target.nodeType === 1 ? change.target : change.target.parentElement;
      const live = node?.closest('.lnb-turn .lnb-live[role=status]');
      if (live) window.__lionLive.push(live.textContent);
    }
  }).observe(document.body, {childList: true, characterData: true, subtree: true});
}"""

_SECTION_JS = """(index) => {
  const out = document.querySelectorAll('.jp-Notebook .jp-Cell')[index];
  const button = out.querySelector('.lnb-turn .lnb-thinking-toggle');
  if (!button || button.closest('.lnb-thinking').hidden) return null;
  const region = document.getElementById(button.getAttribute('aria-controls'));
  return {expanded: button.getAttribute('aria-expanded'),
          label: button.querySelector('.lnb-thinking-label').textContent,
          shown: Boolean(region) && !region.hidden && region.offsetHeight > 0,
          text: region ? region.innerText : '', tag: button.tagName,
          scripts: out.querySelectorAll('.lnb-thinking script').length,
          pwned: Boolean(window.pwned)};
}"""


def _worst(measured: list[dict]) -> list[dict]:
    return [m for m in measured if m["ratio"] < m["need"]]


@pytest.fixture
def light_again(lab_page):
    yield lab_page
    set_theme(lab_page, "JupyterLab Light")


def test_thinking_streams_folds_and_opens_from_the_keyboard(light_again, jupyter_server):
    page = light_again
    gate = jupyter_server.root / f"go-{uuid.uuid4().hex}"
    notebook = new_notebook(
        SETUP.format(gate=str(gate)),
        "%%lion -m sage\nCapital of France?",
        "from lion_nb import current_session\nfrom lion_nb.widgets import BranchView\n"
        "BranchView(current_session().default_branch)",
    )
    open_notebook(page, jupyter_server, "thinking.ipynb", notebook)
    run_cell(page, 0)
    page.evaluate("() => { window.pwned = false; }")

    page.evaluate(_WATCH_LIVE_JS)
    run_cell(page, 1, wait=False)
    out = cell_output(page, 1)
    out.locator(".lnb-turn").wait_for(timeout=30_000)
    # live: open, counting, the text growing (sanitized: the script is text, never run)
    page.wait_for_function(
        f"() => ({_SECTION_JS})(1)?.text.includes('Then the sources')", timeout=30_000
    )
    live = page.evaluate(_SECTION_JS, 1)
    assert live["tag"] == "BUTTON" and live["expanded"] == "true" and live["shown"], live
    assert live["label"].startswith("Thinking…") and "tokens" in live["label"], live
    assert "the question" in live["text"] and live["scripts"] == 0 and not live["pwned"]
    for theme in ("JupyterLab Dark", "JupyterLab Light"):  # the open section is measured
        set_theme(page, theme)
        measured = [m for m in text_contrast(page) if m["widget"] == "lnb-turn"]
        assert any(m["where"].startswith("lnb-thinking") for m in measured), measured
        assert _worst(measured) == [], theme
        assert axe_violations(page) == [], theme
        screenshot(page, f"thinking-live-{theme.split()[-1].lower()}", out.locator(".lnb-turn"))

    gate.write_text("go")  # the model answers now
    page.wait_for_function(f"() => ({_SECTION_JS})(1)?.expanded === 'false'", timeout=30_000)
    folded = page.evaluate(_SECTION_JS, 1)
    assert folded["label"].startswith("Thought for") and not folded["shown"], folded
    wait_for_idle(page)
    announced = page.evaluate("() => window.__lionLive")
    thinking_words = [a for a in announced if a.startswith(("Thinking", "Thought"))]
    assert len(thinking_words) == 2, announced  # once each way, never per fragment
    assert thinking_words[0] == "Thinking…" and thinking_words[1].startswith("Thought for")

    # the keyboard: Enter opens, Space closes, the focus stays on the button
    button = out.locator(".lnb-turn .lnb-thinking-toggle")
    button.focus()
    page.keyboard.press("Enter")
    opened = page.evaluate(_SECTION_JS, 1)
    assert opened["expanded"] == "true" and opened["shown"] and "the sources" in opened["text"]
    assert page.evaluate("() => document.activeElement.classList.contains('lnb-thinking-toggle')")
    page.keyboard.press("Space")
    assert page.evaluate(_SECTION_JS, 1)["expanded"] == "false"
    page.keyboard.press("Space")
    assert page.evaluate(_SECTION_JS, 1)["shown"]
    named = controls_named(page)
    assert any(line.startswith('- button "Thought for') for line in named), named

    # the answer (its own output, drawn by JupyterLab): a marker after "Paris", the sources
    marker = out.locator("sup.lnb-cite").first
    marker.wait_for(timeout=10_000)
    assert marker.inner_text() == "[1]"
    links = out.locator(".lnb-citations a")
    assert links.count() == 1 and links.first.get_attribute("target") == "_blank"
    assert links.first.get_attribute("href") == "https://atlas.example/fr"
    assert "noopener" in links.first.get_attribute("rel")
    assert "Not a link" in out.locator(".lnb-citations").inner_text()

    # the branch in a BranchView: the recorded thinking folded, its time, the sources
    run_cell(page, 2)
    view = cell_output(page, 2).locator(".lnb-view")
    entry = view.locator(".lnb-entry.lnb-role-assistant").last
    toggle = entry.locator(".lnb-thinking-toggle")
    assert toggle.get_attribute("aria-expanded") == "false"
    assert toggle.inner_text().endswith("Thought for 1.5 s")
    toggle.focus()
    page.keyboard.press("Enter")
    assert toggle.get_attribute("aria-expanded") == "true"
    assert "the question" in entry.locator(".lnb-thinking-text").inner_text()
    assert entry.locator("sup.lnb-cite").first.inner_text() == "[1]"
    link = entry.locator(".lnb-citations a")
    assert link.count() == 1 and link.get_attribute("href") == "https://atlas.example/fr"
    assert link.get_attribute("target") == "_blank"
    assert link.get_attribute("rel") == "noopener noreferrer"
    for theme in ("JupyterLab Dark", "JupyterLab Light"):  # folded, opened, and the sources
        set_theme(page, theme)
        measured = [m for m in text_contrast(page) if m["widget"] in ("lnb-turn", "lnb-view")]
        wheres = {m["where"].split()[0] for m in measured}
        assert {"lnb-thinking-label", "lnb-cite-n"} <= wheres, wheres
        assert _worst(measured) == [], theme
        assert axe_violations(page) == [], theme
        screenshot(page, f"thinking-done-{theme.split()[-1].lower()}", view)
    assert not page.evaluate("() => window.pwned")
