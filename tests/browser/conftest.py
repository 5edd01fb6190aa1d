"""A real headless Chromium (Debian's) driven by Playwright, and a real Jupyter server.

Without a browser these tests skip locally; with ``LION_REQUIRE_BROWSER=1`` (set by CI) a
missing browser is a failure, so the check can never silently not run. The same holds for
JupyterLab: ``jupyter_server`` starts one ``jupyter lab`` for the whole session
(``tests/browser/jupyter.py``), and ``lab_page`` is a page ready to open notebooks on it.
"""

from __future__ import annotations

import contextlib
import os
import shutil

import pytest

from tests.browser.jupyter import PageLog, close_notebooks, screenshot, start_server

CHROMIUM = os.environ.get("LION_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _unavailable(reason: str):
    if os.environ.get("LION_REQUIRE_BROWSER") == "1":
        pytest.fail(f"LION_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    """Module-scoped: Playwright's sync API keeps an event loop running in this thread while
    it is open, which must end before any other test starts its own loop."""
    if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        if os.environ.get("LION_REQUIRE_BROWSER") == "1":
            pytest.fail(f"LION_REQUIRE_BROWSER=1 but no Chromium at {CHROMIUM}")
        pytest.skip("Debian's chromium is not installed")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("LION_REQUIRE_BROWSER") == "1":
            pytest.fail("LION_REQUIRE_BROWSER=1 but playwright is not installed")
        pytest.skip("playwright is not installed")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture(scope="session")
def jupyter_server(tmp_path_factory):
    """One ``jupyter lab`` on 127.0.0.1 for the session; its process group ends with it."""
    try:
        import jupyterlab  # noqa: F401
        import nbformat  # noqa: F401
    except ImportError as error:
        _unavailable(f"JupyterLab is not installed ({error.name})")
    server = start_server(tmp_path_factory.mktemp("jupyter"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def _jupyter_context(browser, jupyter_server):
    """One browser context per module: JupyterLab loads once and each test opens its
    notebook as a new tab, which saves the application's start (seconds) per test."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    log = PageLog()
    log.attach(context)
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page, log
    context.close()
    jupyter_server.shutdown_kernels()


@pytest.fixture
def page_log(_jupyter_context):
    """Every URL the module's Jupyter page requested so far and its WebSockets; its page
    errors, of which ``test_errors`` are this test's."""
    log = _jupyter_context[1]
    log.begin_test()
    return log


@pytest.fixture
def lab_page(request, _jupyter_context, jupyter_server):
    """The module's page for JupyterLab or Notebook 7 (see ``open_notebook``). After the test
    its notebooks are closed and the kernels shut down; a failed test leaves a screenshot."""
    page = _jupyter_context[0]
    yield page
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        with contextlib.suppress(Exception):
            screenshot(page, f"failed-{request.node.name}")
    close_notebooks(page)
    jupyter_server.shutdown_kernels()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keep the call phase's report on the item, for ``lab_page``'s failure screenshot."""
    report = yield
    if report.when == "call":
        item.rep_call = report
    return report
