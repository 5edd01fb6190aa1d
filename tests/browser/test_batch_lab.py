"""A batch run in a real JupyterLab, driven in Chromium: ``%%lion --map`` shows its progress
live (the bar and the counts grow), **Stop** ends it and the kernel answers, **Retry failed**
finishes it; ``%%lion --compare`` shows the answers side by side. No request leaves 127.0.0.1.

The items answer when the test lets them -- a file it writes next to the notebook -- so the
counts it reads (8, then 16, then Stop with 24 unfinished) do not depend on how fast a loaded
machine runs the kernel or the browser.
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

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

async def steady(messages, **request):
    # items 0-7 answer at once, 8-15 once the test writes `go-8`, the rest after `go-rest`
    n = int(messages[-1]["content"].split()[-1])
    gate = None if n < 8 else pathlib.Path("go-8" if n < 16 else "go-rest")
    while gate is not None and not gate.exists():
        await asyncio.sleep(0.05)
    return "done: " + messages[-1]["content"]

steady_model = iModel(provider="offline", model="function", function=steady)
items = [f"item {i}" for i in range(40)]
"""

MAP = "%%lion -m steady_model --map items -o first\n{item}"

COMPARE = 'terse = iModel(provider="offline", model="scripted", responses=["**short**"])'
COMPARE_CELL = "%%lion --compare terse,offline/auto\nDescribe Oslo."


def _done(output) -> int:
    match = re.search(r"(\d+)/40 done", output.locator(".lnb-progress-stats").inner_text())
    return int(match.group(1)) if match else -1


def _wait_done(output, page, count: int, guard: float = 60) -> int:
    """Wait until the live view shows ``count`` done (``guard`` only stops a hang)."""
    deadline = time.monotonic() + guard
    while time.monotonic() < deadline and _done(output) < count:
        page.wait_for_timeout(100)
    return _done(output)


def test_map_progress_stop_and_compare(lab_page, jupyter_server, page_log):
    page = lab_page
    for name in ("go-8", "go-rest"):
        (jupyter_server.root / name).unlink(missing_ok=True)
    notebook = new_notebook(
        SETUP, MAP, 'print("unfinished:", sum(x is None for x in first))', COMPARE, COMPARE_CELL
    )
    open_notebook(page, jupyter_server, "batch.ipynb", notebook)
    run_cell(page, 0)

    run_cell(page, 1, wait=False)
    out = cell_output(page, 1)
    out.locator(".lnb-progress").first.wait_for(timeout=30_000)
    assert _wait_done(out, page, 8) == 8  # the first eight, while the others wait
    # the workers move on to items 8-15 a moment after the eighth ends; the next draw says so
    expect(out.locator(".lnb-progress-stats")).to_contain_text("in flight", timeout=30_000)
    (jupyter_server.root / "go-8").write_text("")
    assert _wait_done(out, page, 16) == 16  # it grew while the run went on
    width = out.locator(".lnb-progress-done").evaluate("e => e.style.width")
    assert width.endswith("%") and float(width[:-1]) > 0
    screenshot(page, "lab-batch-progress", element=out)

    clicked = time.monotonic()
    out.locator(".lnb-progress .lnb-stop").click()
    wait_for_idle(page)
    stopped_after = time.monotonic() - clicked
    stats = out.locator(".lnb-progress-stats").inner_text()
    print(f"Stop ended the run {stopped_after:.2f} s after the click: {stats}")
    # the widget's last state reaches the page through its throttle, after the kernel idles
    expect(out.locator(".lnb-progress-state")).to_contain_text("stopped", timeout=30_000)
    expect(out.locator(".lnb-progress-retry")).to_be_visible(timeout=30_000)
    counts = out.locator(".lnb-progress-stats")  # the counts name the stopped items
    expect(counts).to_contain_text(re.compile(r"\d+ stopped"), timeout=30_000)
    run_cell(page, 2)
    unfinished = int(re.search(r"unfinished: (\d+)", cell_output(page, 2).inner_text()).group(1))
    assert unfinished == 24  # items 16-39 were waiting when Stop was clicked

    (jupyter_server.root / "go-rest").write_text("")
    out.locator(".lnb-progress-retry").click()  # the run goes on, in the background
    assert _wait_done(out, page, 40) == 40
    assert not out.locator(".lnb-progress-retry").is_visible()
    screenshot(page, "lab-batch-finished", element=out)

    run_cell(page, 3)
    run_cell(page, 4)
    table = cell_output(page, 4)
    table.locator(".lnb-compare table").wait_for(timeout=30_000)
    headers = table.locator(".lnb-compare th").all_inner_texts()
    assert headers == ["offline/scripted", "offline/auto"]
    assert table.locator(".lnb-compare strong", has_text="short").count() == 1
    assert "tokens" in table.locator(".lnb-compare").inner_text()
    screenshot(page, "lab-compare", element=table)
    assert page_log.foreign() == []
