"""The Jupyter harness works end to end: a real server, a real kernel, real widgets in Chromium.

Printed text, ipywidgets (a button whose Python ``on_click`` changes other widgets) and an
``anywidget.AnyWidget`` whose ES module is inline all render in JupyterLab, with every request
staying on 127.0.0.1; the anywidget also renders in Notebook 7; the toolbar's interrupt ends
a running cell and the kernel then answers; a notebook with no kernelspec gets its "Select
Kernel" dialog answered with ``python3``.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.jupyter import (
    cell_output,
    interrupt_kernel,
    kernel_dialogs_answered,
    new_notebook,
    open_notebook,
    run_all,
    run_cell,
    screenshot,
    wait_for_idle,
    wait_for_output,
)

pytestmark = pytest.mark.browser

PRINT = 'print("plain text from the kernel")'

IPYWIDGETS = """\
import ipywidgets as w

clicks = 0
button = w.Button(description="Press me")
slider = w.IntSlider(value=7, min=0, max=10, description="level")
label = w.Label("not pressed")

def on_click(_button):
    global clicks
    clicks += 1
    slider.value = 3
    label.value = f"pressed {clicks} time(s) in Python"

button.on_click(on_click)
w.VBox([button, slider, label])
"""

ANYWIDGET = '''\
import anywidget
import traitlets

class Hello(anywidget.AnyWidget):
    _esm = """
    function render({ model, el }) {
      const div = document.createElement("div");
      div.className = "lion-hello";
      const show = () => { div.textContent = model.get("text"); };
      show();
      model.on("change:text", show);
      el.appendChild(div);
    }
    export default { render };
    """
    text = traitlets.Unicode("hello from an anywidget").tag(sync=True)

hello = Hello()
hello
'''

LATER = """\
if clicks:
    hello.text = f"kernel saw {clicks} click(s)"
print("clicks:", clicks, "slider:", slider.value)
"""


def test_text_ipywidgets_and_anywidget_render_offline_in_jupyterlab(
    lab_page, jupyter_server, page_log
):
    page = lab_page
    notebook = new_notebook(PRINT, IPYWIDGETS, ANYWIDGET, LATER)
    open_notebook(page, jupyter_server, "widgets.ipynb", notebook)
    run_all(page)

    assert "plain text from the kernel" in cell_output(page, 0).inner_text()
    widgets = cell_output(page, 1)
    button = widgets.get_by_role("button", name="Press me")
    button.wait_for()
    # each child of the box is a view of its own, created and attached one by one
    expect(widgets.locator(".widget-slider")).to_be_visible(timeout=30_000)
    readout = widgets.locator(".widget-readout")
    expect(readout).to_have_text(re.compile("^7$"), use_inner_text=True, timeout=30_000)
    hello = cell_output(page, 2).locator(".lion-hello")
    hello.wait_for()
    assert hello.inner_text() == "hello from an anywidget"
    assert "clicks: 0 slider: 7" in cell_output(page, 3).inner_text()

    button.click()
    widgets.get_by_text("pressed 1 time(s) in Python", exact=True).wait_for()
    widgets.locator(".widget-readout", has_text=re.compile(r"^3$")).wait_for()

    run_cell(page, 3)
    assert "clicks: 1 slider: 3" in cell_output(page, 3).inner_text()
    cell_output(page, 2).get_by_text("kernel saw 1 click(s)", exact=True).wait_for()
    assert screenshot(page, "lab-harness-widgets").stat().st_size > 0

    assert page_log.foreign() == []
    assert page_log.test_errors == []
    assert any("/lab/extensions/anywidget/" in url for url in page_log.requests)
    assert any("/api/kernels/" in url for url in page_log.websockets)


def test_toolbar_interrupt_stops_a_running_cell_and_the_kernel_answers(lab_page, jupyter_server):
    page = lab_page
    notebook = new_notebook(
        'import time\nprint("sleeping", flush=True)\ntime.sleep(120)', 'print("answered", 6 * 7)'
    )
    open_notebook(page, jupyter_server, "interrupt.ipynb", notebook)

    run_cell(page, 0, wait=False)
    wait_for_output(page, 0, "sleeping")
    interrupt_kernel(page)
    wait_for_idle(page)
    assert "KeyboardInterrupt" in cell_output(page, 0).inner_text()

    run_cell(page, 1)
    assert "answered 42" in cell_output(page, 1).inner_text()


def test_select_kernel_dialog_is_answered_with_python3(lab_page, jupyter_server):
    import nbformat

    page = lab_page
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('two:', 1 + 1)")])
    nbformat.write(notebook, jupyter_server.root / "no-kernelspec.ipynb")
    open_notebook(page, jupyter_server, "no-kernelspec.ipynb", start_kernel=False)
    answered = kernel_dialogs_answered(page)
    run_all(page)

    assert answered >= 1

    assert "two: 2" in cell_output(page, 0).inner_text()
    sessions = jupyter_server.api("GET", "sessions")
    assert [s["kernel"]["name"] for s in sessions if s["path"] == "no-kernelspec.ipynb"] == [
        "python3"
    ]


def test_anywidget_renders_in_notebook_7(lab_page, jupyter_server, page_log):
    page = lab_page
    open_notebook(page, jupyter_server, "nb7.ipynb", [ANYWIDGET], ui="notebook")
    run_all(page)

    hello = cell_output(page, 0).locator(".lion-hello")
    hello.wait_for()
    assert hello.inner_text() == "hello from an anywidget"
    assert "/notebooks/nb7.ipynb" in page.url
    screenshot(page, "notebook7-harness-anywidget")
    assert page_log.foreign() == []
