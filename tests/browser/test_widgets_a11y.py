"""The widgets for everyone, in a real JupyterLab in Chromium: legible in the Light and the
Dark theme, usable from the keyboard, named for a screen reader (``tests/browser/a11y.py``).

- The widgets tutorial, run in JupyterLab Light and then Dark: every text node inside a
  widget reaches its WCAG contrast, axe-core finds no serious or critical violation in the
  widgets, and every control has a name without an icon glyph. The minimum contrast per theme
  is printed; screenshots of both are kept.
- `Chat` from the keyboard: Shift+Enter adds a line, Enter sends the two lines, the focus stays
  in the box, Esc stops the streaming answer within 1 s, and a live region announces each
  turn's end once (not each chunk). Send and Stop give the focus back to the box.
- A ``%%lion`` turn: Esc in its view stops it within 1 s and keeps what was received.
- The explorer's tree moves with the arrow keys while JupyterLab's active cell stays put.
- A thinking model in `Chat`: the live "Thinking" section, then the answer's folded thinking
  (opened with Enter) and its sources, pass the contrast, axe, naming and focus-ring checks
  in Light and Dark.
"""

from __future__ import annotations

import time

import pytest

from tests.browser.a11y import (
    axe_violations,
    controls_named,
    focus_rings,
    set_theme,
    text_contrast,
    unnamed_controls,
)
from tests.browser.jupyter import (
    cell_output,
    new_notebook,
    open_notebook,
    run_all,
    run_cell,
    screenshot,
    wait_for_idle,
)
from tests.browser.test_tutorials_lab import (
    NOTEBOOKS,
    RUN_TIMEOUT,
    _fresh_copy,
    _whole_notebook_screenshot,
)

pytestmark = pytest.mark.browser

SETUP = """\
%load_ext lion_nb
import asyncio
from lion_nb import Branch, Session, iModel
from lion_nb.widgets import Chat, SessionExplorer
"""

WORDS = 400
SLOW = f"""\
slow = iModel(
    provider="offline",
    model="scripted",
    responses=[" ".join(f"word{{i}}" for i in range({WORDS}))] * 4,
    delay=0.05,
)
"""

_FOCUSED_JS = "(cls) => Boolean(document.activeElement?.closest(cls))"


def _focus_in(page, selector: str) -> bool:
    return page.evaluate(_FOCUSED_JS, selector)


def _worst(measured: list[dict]) -> list[dict]:
    return [m for m in measured if m["ratio"] < m["need"]]


# The explorer and the chat are boxes: each of their parts is a view of its own, drawn after
# the box (and after "Loading widget..." is gone), in any order.
_BOXES_DRAWN_JS = (
    "['.lnb-explorer .lnb-tree-item', '.lnb-explorer .lnb-view .lnb-entry',"
    " '.lnb-chat .lnb-view .lnb-entry', '.lnb-chat textarea.lnb-chat-box', '.lnb-chat select']"
    ".every(s => document.querySelector(s))"
    " && document.querySelectorAll('.lnb-chat .lnb-chat-controls button').length >= 6"
)


@pytest.fixture
def light_again(lab_page):
    """Whatever a test does to the theme, the module's page (and the server's settings, which
    later modules share) end in JupyterLab Light."""
    yield lab_page
    set_theme(lab_page, "JupyterLab Light")


def test_the_widgets_tutorial_reads_in_light_and_dark(light_again, jupyter_server):
    page = light_again
    path, _cells = _fresh_copy(jupyter_server, NOTEBOOKS / "04-widgets.ipynb")
    open_notebook(page, jupyter_server, path)
    run_all(page, timeout=RUN_TIMEOUT)
    page.wait_for_function(
        "() => document.querySelectorAll('.lnb-view, .lnb-explorer, .lnb-signals, .lnb-turn,"
        " .lnb-chat').length >= 5 && ![...document.querySelectorAll('.jp-OutputArea-output')]"
        ".some(o => o.textContent.trim() === 'Loading widget...')"
        f" && {_BOXES_DRAWN_JS}",
        polling=100,
        timeout=30_000,
    )
    wait_for_idle(page, timeout=RUN_TIMEOUT)
    # open a tool call and one message's details, so their text is measured too
    page.locator(".lnb-view .lnb-tool summary").first.click()
    page.locator(".lnb-view .lnb-info").first.click()
    # press a filter chip: the redraw keeps the focus on it, and its pressed look is measured
    chip = page.locator(".lnb-signals .lnb-siglog-chip[data-kind=RunEnd]")
    chip.click()
    page.wait_for_function(
        "() => document.activeElement?.matches('.lnb-siglog-chip[data-kind=RunEnd]')"
        " && document.activeElement.getAttribute('aria-pressed') === 'true'",
        timeout=10_000,
    )

    minimum = {}
    for theme in ("JupyterLab Light", "JupyterLab Dark"):
        set_theme(page, theme)
        measured = text_contrast(page)
        assert len(measured) > 100, measured  # every widget of the tutorial was measured
        widgets = {m["widget"] for m in measured}
        assert {"lnb-view", "lnb-explorer", "lnb-signals", "lnb-turn", "lnb-chat"} <= widgets
        lowest = min(measured, key=lambda m: m["ratio"] / m["need"])
        minimum[theme] = lowest
        print(f"{theme}: {len(measured)} text nodes, lowest {lowest}")
        assert _worst(measured) == [], theme
        assert axe_violations(page) == [], theme
        nameless, glyphs = unnamed_controls(page)
        assert nameless == [] and glyphs == [], theme
        rings = focus_rings(page, page.locator(".lnb-explorer .lnb-search").first)
        assert len(rings) >= 20, rings  # the search box, the tree, exports, the view's controls
        weak = [r for r in rings if r["width"] < 2 or r["ratio"] < 3]
        print(f"{theme}: {len(rings)} focus rings, lowest {min(r['ratio'] for r in rings)}:1")
        assert weak == [], theme
        shade = theme.split()[-1].lower()
        for widget in (".lnb-explorer", ".lnb-chat", ".lnb-signals"):
            element = page.locator(widget).first
            element.scroll_into_view_if_needed()
            screenshot(page, f"a11y-{shade}-{widget[5:]}", element=element)
        _whole_notebook_screenshot(page, f"a11y-04-{shade}")
    named = controls_named(page)
    assert any(line.startswith('- textbox "message to') for line in named), named
    assert any(line.startswith('- combobox "operation"') for line in named), named
    assert any(line.startswith('- button "details of message') for line in named), named
    assert any(line.startswith("- treeitem ") for line in named), named


CHAT = """\
helper = Branch(name="helper", system="Answer briefly.", chat_model=slow)
chat = Chat(helper)
chat
"""

# Counts the changes of the chat's live region, so one turn shows as one announcement.
_WATCH_LIVE_JS = """(root) => {
  const live = document.querySelector(root + ' .lnb-view .lnb-live[role=status]');
  window.__lionLive = [];
  new MutationObserver(() => window.__lionLive.push(live.textContent))
    .observe(live, {childList: true, characterData: true, subtree: true});
}"""


def test_the_chat_from_the_keyboard(lab_page, jupyter_server):
    page = lab_page
    notebook = new_notebook(
        SETUP,
        SLOW,
        CHAT,
        "print([m.rendered for m in helper.messages if m.kind == 'instruction'])",
        "print([m.metadata.get('incomplete') for m in helper.messages"
        " if m.kind == 'assistant_response'])",
    )
    open_notebook(page, jupyter_server, "chat-keys.ipynb", notebook)
    for index in (0, 1, 2):
        run_cell(page, index)
    out = cell_output(page, 2)
    out.get_by_role("textbox", name="message to helper").wait_for(timeout=30_000)
    # the chat's view and its input box are views of their own, drawn in either order
    out.locator(".lnb-view .lnb-live[role=status]").wait_for(state="attached", timeout=30_000)
    page.evaluate(_WATCH_LIVE_JS, ".lnb-chat")
    box = out.locator("textarea.lnb-chat-box")
    stream = out.locator(".lnb-view .lnb-stream")
    status = out.locator(".lnb-view .lnb-status")

    box.click()
    box.press_sequentially("line one")
    box.press("Shift+Enter")
    box.press_sequentially("line two")
    assert box.input_value() == "line one\nline two"
    assert out.locator(".lnb-entry.lnb-role-user").count() == 0  # Shift+Enter sent nothing

    box.press("Enter")
    stream.get_by_text("word5").wait_for(timeout=15_000)  # streaming
    assert _focus_in(page, "textarea.lnb-chat-box")  # the focus stayed in the box
    assert page.evaluate("() => window.__lionLive.length") == 0  # chunks are not announced

    pressed = time.monotonic()
    box.press("Escape")
    status.get_by_text("stopped").wait_for(timeout=1_000)  # the acceptance bound: 1 s
    stopped_after = time.monotonic() - pressed
    print(f"Esc stopped the streaming Chat answer in {stopped_after:.2f} s")
    assert box.input_value() == ""  # the turn is kept on the branch, marked incomplete
    # the announcement is the kernel's next update after the status
    page.wait_for_function("() => window.__lionLive.length > 0", timeout=10_000)
    live = page.evaluate("() => window.__lionLive")
    assert len(live) == 1 and live[0].startswith("stopped"), live
    assert _focus_in(page, "textarea.lnb-chat-box")

    box.press_sequentially("again")
    out.get_by_role("button", name="Send").click()
    stream.get_by_text("word2").wait_for(timeout=15_000)
    assert _focus_in(page, "textarea.lnb-chat-box")  # Send gave the focus back to the box
    out.get_by_role("button", name="Stop").click()
    status.get_by_text("stopped").wait_for(timeout=10_000)
    page.wait_for_function("() => window.__lionLive.length === 2", timeout=10_000)
    assert _focus_in(page, "textarea.lnb-chat-box")  # Stop is disabled now: the box has it
    screenshot(page, "a11y-chat-keyboard", element=out)

    box.press_sequentially("in full")
    box.press("Enter")
    status.get_by_text("done").wait_for(timeout=60_000)
    page.wait_for_function("() => window.__lionLive.length === 3", timeout=10_000)
    live = page.evaluate("() => window.__lionLive")
    assert live[2].startswith("done") and "word0 word1" in live[2], live  # status, then answer
    run_cell(page, 3)
    assert "line one\\nline two" in cell_output(page, 3).inner_text()
    run_cell(page, 4)  # what Esc and Stop kept: the two cut answers, marked incomplete
    assert "[True, True, None]" in cell_output(page, 4).inner_text()


TURN = "%%lion -b story -m slow\nTell me a very long story."


def test_esc_stops_a_streaming_turn_and_keeps_what_came(light_again, jupyter_server):
    page = light_again
    kept_answers = (
        "from lion_nb import current_session\n"
        "print([m.metadata.get('incomplete') for m in current_session().get_branch('story')"
        ".messages if m.kind == 'assistant_response'])"
    )
    notebook = new_notebook(SETUP, SLOW, TURN, 'print("after", 6 * 7)', kept_answers)
    open_notebook(page, jupyter_server, "turn-keys.ipynb", notebook)
    run_cell(page, 0)
    run_cell(page, 1)
    run_cell(page, 2, wait=False)
    turn = cell_output(page, 2).locator(".lnb-turn").first
    turn.locator(".lnb-turn-text").get_by_text("word5").wait_for(timeout=30_000)
    for theme in ("JupyterLab Dark", "JupyterLab Light"):  # the running turn, Stop included
        set_theme(page, theme)
        measured = [m for m in text_contrast(page) if m["widget"] == "lnb-turn"]
        assert any(m["where"] == "lnb-stop" for m in measured) and _worst(measured) == [], theme
    turn.locator(".lnb-turn-label").click()  # a click in the turn puts the focus on it
    assert _focus_in(page, ".lnb-turn")

    pressed = time.monotonic()
    page.keyboard.press("Escape")
    turn.locator(".lnb-turn-status").get_by_text("stopped").wait_for(timeout=1_000)
    stopped_after = time.monotonic() - pressed
    print(f"Esc stopped the streaming turn in {stopped_after:.2f} s")
    wait_for_idle(page)
    kept = turn.locator(".lnb-turn-text").inner_text()
    assert "word0" in kept and f"word{WORDS - 1}" not in kept  # what came, and only that
    assert "incomplete answer kept on the branch" in turn.inner_text()
    live = turn.locator(".lnb-live[role=status]").text_content()
    assert live.startswith("story") and ": stopped" in live, live
    assert "incomplete answer kept" in live, live  # said once, with the end of the turn
    assert _focus_in(page, ".lnb-turn")  # Stop went away under nobody's focus
    run_cell(page, 3)
    assert "after 42" in cell_output(page, 3).inner_text()
    run_cell(page, 4)  # the branch kept the cut answer, marked incomplete
    assert "[True]" in cell_output(page, 4).inner_text()


EXPLORER = """\
trip = Branch(name="trip", system="You plan trips.", chat_model=iModel("offline/auto"))
session = Session(default_branch=trip)
await trip.communicate("Where should I go in spring?")
explorer = SessionExplorer(session, height="24em")
explorer.fork(trip, trip.messages[1])
explorer.fork(trip, trip.messages[2])
explorer.select(trip)
explorer
"""


def test_the_explorer_tree_moves_with_the_arrow_keys(lab_page, jupyter_server):
    page = lab_page
    notebook = new_notebook(SETUP, EXPLORER, "print('selected:', explorer.selected.name)")
    open_notebook(page, jupyter_server, "tree-keys.ipynb", notebook)
    run_cell(page, 0)
    run_cell(page, 1)
    out = cell_output(page, 1)
    tree = out.get_by_role("tree", name="branches")
    trip = tree.get_by_role("treeitem", name="trip", exact=True)
    trip.wait_for(timeout=30_000)
    assert tree.get_by_role("treeitem").count() == 3
    trip.locator(":scope > .lnb-node > .lnb-node-name").click()
    active_cell = "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex"
    before = page.evaluate(active_cell)

    def on(name: str) -> None:
        """Wait until the branch ``name`` is selected and has the focus (after the redraw
        that the kernel's selection causes), and the view shows it."""
        page.wait_for_function(
            """(name) => {
              const item = document.activeElement;
              return item?.getAttribute('role') === 'treeitem'
                && item.getAttribute('aria-selected') === 'true'
                && item.querySelector(':scope > .lnb-node > .lnb-node-name').textContent === name;
            }""",
            arg=name,
            timeout=10_000,
        )
        title = out.locator(".lnb-view .lnb-title")
        page.wait_for_function(
            "([el, name]) => el.textContent === name", arg=[title.element_handle(), name]
        )

    page.keyboard.press("ArrowDown")
    on("trip/fork-1")
    page.keyboard.press("ArrowDown")
    on("trip/fork-2")
    page.keyboard.press("ArrowUp")
    on("trip/fork-1")
    page.keyboard.press("End")
    on("trip/fork-2")
    page.keyboard.press("ArrowLeft")  # to the parent
    on("trip")
    assert page.evaluate(active_cell) == before  # JupyterLab's cell selection did not move
    assert tree.get_by_role("treeitem", selected=True).count() == 1

    # forking from a message keeps the focus on "fork from here", now in the fork
    fork = out.locator('.lnb-view .lnb-entry[data-index="2"] [data-action="fork"]')
    fork.focus()
    page.keyboard.press("Enter")
    tree.get_by_role("treeitem", name="trip/fork-3", selected=True).wait_for(timeout=10_000)
    page.wait_for_function(
        "() => document.activeElement?.dataset.action === 'fork'"
        " && document.activeElement.closest('.lnb-entry').dataset.index === '2'"
        " && document.querySelector('.lnb-view .lnb-title').textContent === 'trip/fork-3'",
        timeout=10_000,
    )
    tree.get_by_role("treeitem", name="trip", exact=True).locator(":scope > .lnb-node").click()
    run_cell(page, 2)
    assert "selected: trip" in cell_output(page, 2).inner_text()


NB7 = """\
trip = Branch(name="trip", system="You plan trips.", chat_model=iModel("offline/auto"))
session = Session(default_branch=trip)
await trip.communicate("Where should I go in spring?")
explorer = SessionExplorer(session)
explorer.fork(trip, trip.messages[1])
explorer.search("spring")
explorer
"""


def test_the_widgets_read_in_notebook_7(lab_page, jupyter_server):
    page = lab_page
    cells = [SETUP, NB7, "Chat(trip)"]
    open_notebook(page, jupyter_server, "a11y-nb7.ipynb", new_notebook(*cells), ui="notebook")
    run_all(page)
    page.locator(".lnb-chat textarea").wait_for(timeout=30_000)
    page.locator(".lnb-explorer .lnb-result").first.wait_for(timeout=30_000)
    page.wait_for_function(f"() => {_BOXES_DRAWN_JS}", polling=100, timeout=30_000)
    measured = text_contrast(page)
    lowest = min(measured, key=lambda m: m["ratio"] / m["need"])
    print(f"Notebook 7: {len(measured)} text nodes, lowest {lowest}")
    assert len(measured) > 30 and _worst(measured) == []
    assert axe_violations(page) == []
    assert unnamed_controls(page) == ([], [])
    screenshot(page, "a11y-notebook7")


ATTACH = """\
from lion_nb.models.media import data_url
import base64
png = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAGElEQVR4nGP4z8BAEmIY1TCqYVTDcNIAAHrx/xFPzRp8AAAAAElFTkSuQmCC"
)
looker = Branch(name="looker", chat_model=iModel(provider="offline", model="auto"))
looker.msgs.add_message(instruction="a figure", images=[data_url(png)])
chat = Chat(looker)
chat
"""
PDF = b"%PDF-1.4\n" + b"/Type /Page\n" * 2 + b"%%EOF\n"


def test_attach_a_file_from_the_keyboard_and_attachments_read_in_both_themes(
    light_again, jupyter_server
):
    page = light_again
    # Playwright turns on its file-chooser interception with a message it does not wait for:
    # a listener from the start has it on long before the key that opens the chooser
    page.on("filechooser", lambda _chooser: None)
    open_notebook(page, jupyter_server, "attach.ipynb", new_notebook(SETUP, ATTACH))
    run_all(page)
    out = cell_output(page, 1)
    box = out.get_by_role("textbox", name="message to looker")
    box.wait_for(timeout=30_000)
    image = out.locator(".lnb-view img.lnb-attached-image")
    image.wait_for(timeout=10_000)
    assert image.get_attribute("alt") == "an image of 16×16 pixels (PNG)"

    # in command mode JupyterLab binds Enter to its own command: the input keeps it out
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:enter-command-mode')")
    box.click()
    box.press("Shift+Tab")  # the button before the box, in words
    assert page.evaluate("() => document.activeElement.textContent") == "Attach a file"
    assert page.evaluate("() => !!document.querySelector('.jp-Notebook.jp-mod-commandMode')"), (
        "the notebook is in command mode"
    )
    with page.expect_file_chooser() as chosen:
        page.keyboard.press("Enter")
    chosen.value.set_files({"name": "report.pdf", "mimeType": "application/pdf", "buffer": PDF})
    remove = out.get_by_role("button", name="remove report.pdf")
    remove.wait_for(timeout=10_000)
    assert "PDF · 2 pages" in out.locator(".lnb-attached-files").inner_text()

    box.fill("What is in it?")  # one update: typed key by key, the last ones may trail Enter
    box.press("Enter")
    answer = out.locator(".lnb-entry.lnb-role-assistant").last
    answer.get_by_text("a PDF of 2 pages (report.pdf)").wait_for(timeout=20_000)
    sent = out.locator(".lnb-entry.lnb-role-user").last
    assert "report.pdf" in sent.locator(".lnb-chip").inner_text()
    assert out.locator(".lnb-attached-files .lnb-chip").count() == 0  # sent: the chip went

    out.get_by_role("button", name="Attach a file").wait_for()
    for theme in ("JupyterLab Light", "JupyterLab Dark"):
        set_theme(page, theme)
        measured = text_contrast(page)
        assert any("report.pdf" in m["text"] for m in measured), measured  # the chip's text
        assert _worst(measured) == [], theme
        assert axe_violations(page) == [], theme
        nameless, glyphs = unnamed_controls(page)
        assert nameless == [] and glyphs == [], theme
        screenshot(page, f"a11y-attach-{theme.split()[-1].lower()}", element=out)


THINKING_CHAT = """\
import pathlib
from lion_nb.models.endpoints import ModelResponse, emit_text_delta
from lion_nb.models.endpoints.base import emit_thinking_delta

GATE = pathlib.Path({gate!r})
THOUGHT = "Weighing **both** sources before answering."

async def think(messages, **_):
    for word in THOUGHT.split(" "):
        emit_thinking_delta(word + " ")
    while not GATE.exists():  # the test has seen the thinking live
        await asyncio.sleep(0.05)
    emit_text_delta("Lyon is second. ")
    return ModelResponse(text="Lyon is second.", metadata={{
        "thinking": THOUGHT, "thinking_seconds": 12.3,
        "citations": [{{"n": 1, "title": "Census", "url": "https://census.example/fr",
                        "cited_text": "Lyon", "kind": "document", "end": 4}}]}})

sage = Branch(name="sage", chat_model=iModel(provider="offline", model="function",
                                             function=think))
Chat(sage)
"""


def test_thinking_in_the_chat_reads_in_light_and_dark(light_again, jupyter_server):
    """The Chat's live "Thinking" section and a recorded answer's folded thinking and sources
    pass the same checks as every widget: contrast, axe, named controls, focus rings."""
    import uuid

    page = light_again
    gate = jupyter_server.root / f"go-{uuid.uuid4().hex}"
    notebook = new_notebook(SETUP, THINKING_CHAT.format(gate=str(gate)))
    open_notebook(page, jupyter_server, "chat-thinking.ipynb", notebook)
    run_cell(page, 0)
    run_cell(page, 1)
    out = cell_output(page, 1)
    box = out.get_by_role("textbox", name="message to sage")
    box.wait_for(timeout=30_000)
    box.fill("Second city?")
    box.press("Enter")
    live = out.locator(".lnb-view > .lnb-thinking")
    live.locator(".lnb-thinking-text").get_by_text("sources before").wait_for(timeout=30_000)
    toggle = live.locator(".lnb-thinking-toggle")
    assert toggle.get_attribute("aria-expanded") == "true"
    for theme in ("JupyterLab Dark", "JupyterLab Light"):
        set_theme(page, theme)
        measured = [m for m in text_contrast(page) if m["widget"] == "lnb-chat"]
        assert any(m["where"].startswith("lnb-thinking") for m in measured), measured
        assert _worst(measured) == [], theme
        assert axe_violations(page) == [], theme
    gate.write_text("go")
    out.locator(".lnb-view .lnb-status").get_by_text("done").wait_for(timeout=30_000)
    assert live.is_hidden()  # the stream ended: the answer shows its own thinking
    entry = out.locator(".lnb-entry.lnb-role-assistant").last
    folded = entry.locator(".lnb-thinking-toggle")
    assert folded.get_attribute("aria-expanded") == "false"
    assert folded.inner_text().endswith("Thought for 12 s")
    folded.focus()
    page.keyboard.press("Enter")
    assert folded.get_attribute("aria-expanded") == "true"
    assert entry.locator(".lnb-citations a").get_attribute("rel") == "noopener noreferrer"
    for theme in ("JupyterLab Dark", "JupyterLab Light"):
        set_theme(page, theme)
        measured = [m for m in text_contrast(page) if m["widget"] == "lnb-chat"]
        wheres = {m["where"].split()[0] for m in measured}
        assert {"lnb-thinking-label", "lnb-cite-n", "lnb-cite-kind"} <= wheres, wheres
        assert _worst(measured) == [], theme
        assert axe_violations(page) == [], theme
        nameless, glyphs = unnamed_controls(page)
        assert nameless == [] and glyphs == [], theme
        rings = focus_rings(page, out.locator(".lnb-view .lnb-list"), presses=8)
        assert any("Thought for" in r["control"] for r in rings), rings
        assert [r for r in rings if r["width"] < 2 or r["ratio"] < 3] == [], theme
        screenshot(page, f"a11y-chat-thinking-{theme.split()[-1].lower()}", element=out)
    named = controls_named(page)
    assert any(line.startswith('- button "Thought for 12 s"') for line in named), named
