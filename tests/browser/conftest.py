"""A real headless Chromium (Debian's) driven by Playwright.

Without a browser these tests skip locally; with ``LION_REQUIRE_BROWSER=1`` (set by CI) a
missing browser is a failure, so the check can never silently not run.
"""

from __future__ import annotations

import os
import shutil

import pytest

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
