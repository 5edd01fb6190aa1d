"""The notebook tools' approval card in a real JupyterLab, driven in Chromium.

A scripted offline model calls ``run_python`` three times under ``%%lion --agent`` (the
tool asks by default). The card shows the code (highlighted) and its risk flags; Approve
runs the code once; Edit, then Run edited code runs the person's version and the branch
records both; Deny records the denial and runs nothing. The proposed cell is inserted below
the turn's cell by JupyterLab, not run.

Stop while ``run_python`` runs an endless loop interrupts the kernel and ends the turn
quietly, keeping what the code printed; the kernel then answers. A background turn's
proposed cell is not inserted on its own (the payload would reach some later cell): its
step's "Insert below" puts it under the turn's cell, once.
"""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from tests.browser.a11y import axe_violations, text_contrast
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
from lion_nb import iModel, current_session
RUNS = []
agent = iModel(provider="offline", model="scripted", responses=[
    {"tool_calls": [{"name": "run_python", "arguments": {"code": "RUNS.append('approved')"}}]},
    {"tool_calls": [{"name": "run_python", "arguments": {"code": "RUNS.append('model')"}}]},
    {"tool_calls": [{"name": "run_python", "arguments": {"code": "import subprocess\\nsubprocess.run(['rm', '-rf', 'data'])"}}]},
    {"tool_calls": [{"name": "propose_cell", "arguments": {"code": "print(sorted(RUNS))"}}]},
    "Done: one run approved, one edited, one denied.",
])
"""

RESULTS = """\
calls = [m for m in current_session().get_branch("agent").messages
         if m.kind == "action_response" and m.function == "run_python"]
print("runs:", RUNS)
print("approval:", [c.metadata.get("approval") for c in calls])
print("proposed:", [c.metadata.get("proposed_arguments") for c in calls])
print("ran:", [c.arguments["code"] for c in calls])
"""


def test_the_card_shows_code_and_flags_and_approve_edit_deny_are_recorded(lab_page, jupyter_server):
    page = lab_page
    notebook = new_notebook(SETUP, "%%lion -b agent --agent -m agent\nWork on the data.", RESULTS)
    open_notebook(page, jupyter_server, "agent-card.ipynb", notebook)
    run_cell(page, 0)
    run_cell(page, 1, wait=False)
    out = cell_output(page, 1)

    first = out.locator(".lnb-ask")
    first.wait_for(timeout=30_000)
    assert "RUNS.append('approved')" in first.locator(".lnb-ask-args").inner_text()
    assert first.locator(".lnb-ask-args .lnb-code").count() == 1  # highlighted
    assert first.locator(".lnb-ask-flag").count() == 0
    first.get_by_role("button", name="Approve call to run_python").click()

    second = out.locator(".lnb-ask")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.lnb-ask-args')].some(e => e.innerText.includes(\"'model'\"))",
        timeout=30_000,
    )
    second.locator(".lnb-ask-edit").click()
    editor = second.locator("textarea.lnb-ask-code")
    editor.fill("RUNS.append('edited')")
    second.locator(".lnb-ask-run").click()

    page.wait_for_function(
        "() => [...document.querySelectorAll('.lnb-ask-args')].some(e => e.innerText.includes('subprocess'))",
        timeout=30_000,
    )
    third = out.locator(".lnb-ask")
    flags = third.locator(".lnb-ask-flag").all_inner_texts()
    assert any("runs shell commands" in f for f in flags), flags
    third.locator(".lnb-ask-edit").click()  # the editor open too, for the measures
    low = [m for m in text_contrast(page) if m["widget"] == "lnb-turn" and m["ratio"] < m["need"]]
    assert low == [] and axe_violations(page) == []
    screenshot(page, "agent-card", element=out.locator(".lnb-turn"))
    third.get_by_role("button", name="Deny call to run_python").click()
    wait_for_idle(page)
    assert "Done: one run approved" in out.inner_text()
    proposed = page.locator(".jp-Notebook .jp-Cell").nth(2)  # inserted below the turn's cell
    # the notebook draws an inserted cell on its next layout update: until then the third
    # cell in the page is the results cell
    expect(proposed.locator(".jp-InputArea")).to_contain_text(
        "print(sorted(RUNS))", use_inner_text=True, timeout=10_000
    )
    assert proposed.locator(".jp-OutputArea-output").count() == 0  # not run

    run_cell(page, 3)
    printed = cell_output(page, 3).inner_text()
    assert "runs: ['approved', 'edited']" in printed, printed
    assert "approval: ['approved by user', 'approved by user, edited', 'denied by user']" in printed
    assert "proposed: [None, {'code': \"RUNS.append('model')\"}, None]" in printed, printed
    assert "ran: [\"RUNS.append('approved')\", \"RUNS.append('edited')\"" in printed, printed


STOP_SETUP = """\
%load_ext lion_nb
from lion_nb import iModel, current_session, notebook_tools
LOOP = "print('looping', flush=True)\\nopen('looping', 'w').close()\\nwhile True:\\n    pass"
looper = iModel(provider="offline", model="scripted", responses=[
    {"tool_calls": [{"name": "run_python", "arguments": {"code": LOOP}}]},
    "the model went on after the Stop",
])
loop_branch = current_session().new_branch(name="loop", chat_model=looper)
loop_branch.acts.register_tools(notebook_tools(approve=True))
proposer = iModel(provider="offline", model="scripted", responses=[
    {"tool_calls": [{"name": "propose_cell", "arguments": {"code": "print('from the proposed cell')"}}]},
    "Proposed one cell.",
])
"""


def test_stop_ends_running_code_and_insert_below_puts_a_proposed_cell_under_its_turn(
    lab_page, jupyter_server
):
    page = lab_page
    marker = jupyter_server.root / "looping"
    marker.unlink(missing_ok=True)
    notebook = new_notebook(
        STOP_SETUP,
        "%%lion -b loop --agent\nRun the loop.",
        'print("answered", 6 * 7)',
        "%%lion -b proposer --agent --bg -m proposer\nPropose a cell.",
    )
    open_notebook(page, jupyter_server, "agent-stop.ipynb", notebook)
    run_cell(page, 0)
    run_cell(page, 1, wait=False)
    turn = cell_output(page, 1)
    turn.locator(".lnb-turn.lnb-code-running").wait_for(timeout=60_000)
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:  # the loop has started
        page.wait_for_timeout(50)
    assert marker.exists()
    clicked = time.monotonic()
    turn.locator(".lnb-stop").click()
    turn.locator(".lnb-turn-status", has_text="stopped").wait_for(timeout=30_000)
    stopped_after = time.monotonic() - clicked
    wait_for_idle(page)
    print(f"\nStop ended the endless run and its turn {stopped_after:.2f} s after the click")
    shown = turn.inner_text()
    assert "RunInterrupted" not in shown  # Stop ends its turn quietly
    assert "the model went on" not in shown
    step = turn.locator(".lnb-step")
    step.first.locator("summary").click()
    assert "the user stopped the turn while this ran" in step.first.inner_text()
    assert "looping" in step.first.inner_text()  # what it printed is kept
    screenshot(page, "agent-stopped-run", element=turn.locator(".lnb-turn"))

    run_cell(page, 2)
    assert "answered 42" in cell_output(page, 2).inner_text()  # the kernel goes on

    run_cell(page, 3)
    background = cell_output(page, 3)
    insert = background.locator(".lnb-insert")
    insert.wait_for(timeout=60_000)
    assert page.locator(".jp-Notebook .jp-Cell").count() == 4  # not inserted on its own
    insert.click()
    background.locator(".lnb-insert", has_text="inserted below").wait_for(timeout=10_000)
    cells = page.locator(".jp-Notebook .jp-Cell")
    # the button says so once the cell is in the notebook's model; the page draws the new
    # cell on the notebook's next layout update
    expect(cells).to_have_count(5, timeout=10_000)
    expect(cells.nth(4).locator(".jp-InputArea")).to_contain_text(
        "print('from the proposed cell')", use_inner_text=True, timeout=10_000
    )
    assert cells.nth(4).locator(".jp-OutputArea-output").count() == 0  # not run
    assert background.locator(".lnb-insert").is_disabled()  # once: a second click does nothing
    screenshot(page, "agent-insert-below", element=background.locator(".lnb-turn"))
