"""A coding agent's permission request (ACP) answered from the turn view's card in a real
JupyterLab, driven in Chromium, against the bundled offline agent run as a subprocess.

Issue acceptance -> test
- "a permission request is answered from the card in JupyterLab in Chromium (allow once runs
  once; reject records the rejection)"; "a write is shown as a diff before it happens"
    -> test_the_permission_card_allows_once_and_records_a_rejection
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.jupyter import cell_output, new_notebook, open_notebook, run_cell, wait_for_idle

pytestmark = pytest.mark.browser

# The bundled agent runs live here (local and deterministic): the card is the point, and a
# cassette would answer without asking. CI forbids live calls (LION_NB_CASSETTE_MODE=none).
SETUP = """\
%load_ext lion_nb
import os
os.environ.pop("LION_NB_CASSETTE_MODE", None)
from pathlib import Path
from lion_nb import current_session
Path("README.md").write_text("# Card demo\\n")
Path("notes.md").unlink(missing_ok=True)
"""

TURN = "%%lion -m acp:offline\nLook at README.md"

RESULTS = """\
b = current_session().default_branch
out = {m.action_request_id: m.output for m in b.messages if m.kind == "action_response"}
asks = [m for m in b.messages if m.kind == "action_request"]
print("permissions:", [out[str(m.id)]["outcome"] for m in asks if m.function == "permission"])
print("runs:", [out[str(m.id)]["status"] for m in asks if m.function == "python --version"])
print("notes:", Path("notes.md").exists())
"""


def _answer(out, label: str) -> None:
    button = out.locator(".lnb-ask button", has_text=label).first
    button.wait_for(timeout=60_000)
    button.click()


def test_the_permission_card_allows_once_and_records_a_rejection(lab_page, jupyter_server):
    page = lab_page
    notebook = new_notebook(SETUP, TURN, TURN, RESULTS)
    open_notebook(page, jupyter_server, "acp-card.ipynb", notebook)
    run_cell(page, 0)

    run_cell(page, 1, wait=False)
    out = cell_output(page, 1)
    ask = out.locator(".lnb-ask")
    ask.first.wait_for(timeout=60_000)
    labels = ask.first.locator("button").all_inner_texts()
    assert labels == ["Allow once", "Always allow", "Reject", "Always reject"], labels
    assert "python --version" in ask.first.inner_text()
    _answer(out, "Allow once")
    # then the write, shown as a diff before it happens (the first card may still be going);
    # refused here
    expect(out.locator(".lnb-ask-args", has_text="+# Notes")).to_be_visible(timeout=60_000)
    _answer(out, "Do not write it")
    wait_for_idle(page)
    assert "turn 1 of this session" in out.inner_text()

    run_cell(page, 2, wait=False)
    out2 = cell_output(page, 2)
    _answer(out2, "Reject")  # allow once was once: asked again
    _answer(out2, "Do not write it")
    wait_for_idle(page)

    run_cell(page, 3)
    printed = cell_output(page, 3).inner_text()
    assert "permissions: ['allow_once', 'reject_once', 'reject_once', 'reject_once']" in printed
    assert "runs: ['completed', 'failed']" in printed, printed
    assert "notes: False" in printed
