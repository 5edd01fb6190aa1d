"""The turn view's approval prompt, its budget button and its cost footer in a real JupyterLab,
driven in Chromium, measured for accessibility in Light and Dark.

Issue acceptance -> test
- "In JupyterLab in Chromium: 'ask' shows Approve/Deny; a click on Approve runs the call,
  Deny records the denial" (a scripted offline model calls a notebook tool under
  ``approve="ask"``; the branch is read afterwards), with the ask named in words, focused
  when it appears and announced once -> test_ask_approve_and_deny_in_the_turn_view
- "a cell that reaches its budget shows it in the turn view with a button to raise the budget
  and continue"; the footer shows model · tokens · $ and the branch's total; the explorer
  shows each branch's total and BatchProgress spend and projected spend
    -> test_raise_the_budget_and_continue_and_the_cost_in_the_browser
Both run the contrast measure (every text node, WCAG formula) and axe-core over the turn
view in JupyterLab Light and Dark, and keep screenshots of both.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

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

ASK_SETUP = """\
%load_ext lion_nb
from lion_nb import iModel, current_session
wiped = []
def wipe(path: str) -> str:
    '''Wipe a path.'''
    wiped.append(path)
    return f"wiped {path}"
asker = iModel(provider="offline", model="scripted", responses=[
    {"tool_calls": [{"name": "wipe", "arguments": {"path": "/a"}}]}, "Wiped /a.",
    {"tool_calls": [{"name": "wipe", "arguments": {"path": "/b"}}]}, "Did not wipe /b.",
])
current_session().default_branch.approve = "ask"
"""

RESULTS = """\
responses = [m for m in current_session().default_branch.messages if m.kind == "action_response"]
print("wiped:", wiped)
print("approval:", [r.metadata.get("approval") for r in responses])
"""

# Counts the changes of a turn's live region, so each ask shows as one announcement.
_WATCH_LIVE_JS = """(index) => {
  const out = document.querySelectorAll('.jp-Notebook .jp-Cell')[index];
  const live = out.querySelector('.lnb-turn .lnb-live[role=status]');
  window.__lionLive = [];
  new MutationObserver(() => window.__lionLive.push(live.textContent))
    .observe(live, {childList: true, characterData: true, subtree: true});
}"""

_FOCUS_JS = "() => document.activeElement?.closest('.lnb-ask')?.getAttribute('aria-label') || ''"


def _worst(measured: list[dict]) -> list[dict]:
    return [m for m in measured if m["ratio"] < m["need"]]


def _measure_turn(page, name: str, element) -> list[dict]:
    """Contrast and axe over the page's turn views, in Dark then Light; screenshots of both."""
    for theme in ("JupyterLab Dark", "JupyterLab Light"):
        set_theme(page, theme)
        measured = [m for m in text_contrast(page) if m["widget"] == "lnb-turn"]
        lowest = min(measured, key=lambda m: m["ratio"] / m["need"])
        print(f"{name}, {theme}: {len(measured)} text nodes in the turn, lowest {lowest}")
        assert measured and _worst(measured) == [], theme
        assert axe_violations(page) == [], theme
        element.scroll_into_view_if_needed()
        screenshot(page, f"turn-{name}-{theme.split()[-1].lower()}", element=element)
    return measured


@pytest.fixture
def light_again(lab_page):
    yield lab_page
    set_theme(lab_page, "JupyterLab Light")


def test_ask_approve_and_deny_in_the_turn_view(light_again, jupyter_server):
    page = light_again
    notebook = new_notebook(
        ASK_SETUP,
        "%%lion -m asker -t wipe\nWipe /a.",
        "%%lion -m asker -t wipe\nWipe /b.",
        RESULTS,
    )
    open_notebook(page, jupyter_server, "turn-ask.ipynb", notebook)
    run_cell(page, 0)

    run_cell(page, 1, wait=False)
    out = cell_output(page, 1)
    ask = out.locator(".lnb-ask")
    ask.wait_for(timeout=30_000)
    page.evaluate(_WATCH_LIVE_JS, 1)
    # the ask took the focus, and was announced in the turn's live region
    page.wait_for_function(_FOCUS_JS, timeout=10_000)
    assert page.evaluate(_FOCUS_JS) == "Approval of the call to wipe"
    live = out.locator(".lnb-turn .lnb-live[role=status]").text_content()
    assert live == "Approval needed: call to wipe", live
    assert "waiting for approval" in out.locator(".lnb-turn-status").inner_text()
    assert '"/a"' in ask.locator(".lnb-ask-args").inner_text()
    named = controls_named(page)
    for name in ("Approve call to wipe", "Deny call to wipe"):
        assert any(line.startswith(f'- button "{name}"') for line in named), named
    assert any("Approve for this tool from now on, every call to wipe" in n for n in named), named
    measured = _measure_turn(page, "ask", out.locator(".lnb-turn"))
    assert any(m["where"].startswith("lnb-ask") for m in measured), measured  # the buttons
    page.keyboard.press("Tab")  # from the ask to its first button, Approve, by keyboard
    assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == (
        "Approve call to wipe"
    )
    page.keyboard.press("Enter")
    wait_for_idle(page)
    assert ask.count() == 0
    assert "done" in out.locator(".lnb-turn-status").inner_text()
    assert "Wiped /a." in out.inner_text()  # the answer, its own output
    assert page.evaluate("() => !document.activeElement?.closest('.lnb-ask')")
    live = page.evaluate("() => window.__lionLive")
    assert len(live) == 1 and ": done" in live[0], live  # the end of the turn, once

    run_cell(page, 2, wait=False)
    out2 = cell_output(page, 2)
    out2.get_by_role("button", name="Deny call to wipe").click(timeout=30_000)
    wait_for_idle(page)
    assert out2.locator(".lnb-ask").count() == 0
    run_cell(page, 3)
    printed = cell_output(page, 3).inner_text()
    assert "wiped: ['/a']" in printed  # Approve ran the call once; Deny never ran it
    assert "approval: ['approved by user', 'denied by user']" in printed, printed


BUDGET_SETUP = """\
%load_ext lion_nb
from lion_nb import iModel, current_session
from lion_nb.widgets import SessionExplorer
# a dollar per thousand tokens each way: each call costs about a cent
dear = iModel(provider="offline", model="scripted", price={"input": 1000, "output": 1000},
              responses=["Here is the answer."] * 20)
items = [f"item {i}" for i in range(8)]
"""

BUDGET_CELL = "%%lion -m dear --budget 0.001 -o answer\nAnswer me."


def test_raise_the_budget_and_continue_and_the_cost_in_the_browser(light_again, jupyter_server):
    page = light_again
    notebook = new_notebook(
        BUDGET_SETUP,
        BUDGET_CELL,
        "print('answer:', answer)",
        "SessionExplorer(current_session())",
        "%%lion -m dear --map items --budget 0.05 -o mapped\n{item}",
    )
    open_notebook(page, jupyter_server, "turn-budget.ipynb", notebook)
    run_cell(page, 0)
    run_cell(page, 1)
    out = cell_output(page, 1)
    turn = out.locator(".lnb-turn")
    raise_button = turn.get_by_role("button", name=re.compile(r"^Raise the cell budget to \$"))
    raise_button.wait_for(timeout=30_000)
    offer = turn.locator(".lnb-budget-text").inner_text()
    assert offer.startswith("The cell budget of $0.001 is reached: $0.0000 spent"), offer
    assert "BudgetExceeded" in out.inner_text()  # the cell's error says it too
    live = turn.locator(".lnb-live[role=status]").text_content()
    assert "A button below offers: Raise the cell budget to $" in live, live
    measured = _measure_turn(page, "budget", turn)
    assert {"lnb-budget-text", "lnb-raise"} <= {m["where"] for m in measured}, measured

    raise_button.click()
    page.wait_for_function(
        "(el) => el.querySelector('.lnb-turn-status').textContent.includes('done')",
        arg=turn.element_handle(),
        timeout=30_000,
    )
    out.get_by_text("Here is the answer.").wait_for(timeout=10_000)  # in the turn's own cell
    assert turn.locator(".lnb-budget").is_hidden()
    # the turn's end (status, then the footer with the branch's total, then the answer) comes
    # in several updates, and the answer's text was already in the turn's view as it streamed
    expect(turn.locator(".lnb-turn-footer")).to_have_text(
        re.compile(r"^offline/scripted · \d+ tokens · \$0\.\d{4} · branch \$0\.\d{4}$"),
        use_inner_text=True,
        timeout=10_000,
    )
    measured = _measure_turn(page, "footer", turn)
    assert "lnb-turn-footer" in {m["where"] for m in measured}, measured
    run_cell(page, 2)
    assert "answer: Here is the answer." in cell_output(page, 2).inner_text()

    run_cell(page, 3)  # the explorer shows the branch's total
    tree = cell_output(page, 3).locator(".lnb-explorer .lnb-node-usage").first
    tree.wait_for(timeout=30_000)
    assert re.search(r"cost \$0\.\d{4}", tree.inner_text()), tree.inner_text()

    run_cell(page, 4)  # a batch stopped by its budget shows spend and projected spend
    stats = cell_output(page, 4).locator(".lnb-progress-stats")
    stats.wait_for(timeout=30_000)
    page.wait_for_function(
        "(el) => /projected \\$/.test(el.textContent)", arg=stats.element_handle(), timeout=30_000
    )
    text = stats.inner_text()
    assert re.search(r"≈ \$0\.\d{4} \(projected \$0\.\d{4}\)", text), text
    screenshot(page, "turn-batch-spend", element=cell_output(page, 4))
